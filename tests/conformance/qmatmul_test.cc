// tile.qmatmul_acc (GGUF q4_0 / q4_1 / q8_0 blocks and w8a8 rows, kernels/quant.h) on every CPU
// target against the interpreter: bit-identical, whatever the bytes — the weights are random
// bytes (scales NaN / Inf / subnormal / negative included) and the activations kGeneral (NaN /
// Inf / huge / ties), on every layout (misaligned and strided tensors). Two tilings per format:
// 8-row tiles over a K loop (the prefill kernels) and one row against 64 weight rows (the decode
// GEMV's streams); w8a8 rows end in their scale, so its K is one tile.
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "ptox/ptox.h"
#include "programs.h"

namespace ptox::conformance {
namespace {

struct Format {
  const char* name;
  int64_t block_bytes;  // per 32 values; 0: w8a8 (K bytes and a 4-byte scale per row)
};

struct Tiling {
  const char* tag;
  int64_t tm, tk, tn;
};

int64_t RowBytes(const Format& f, int64_t k) {
  return f.block_bytes ? k / 32 * f.block_bytes : k + 4;
}

Spec QmatmulSpec(const Format& fmt, const Tiling& t) {
  const std::string name = std::string("qmatmul") + t.tag + "_" + fmt.name;
  const int64_t tkb = RowBytes(fmt, t.tk);
  const std::string tm = std::to_string(t.tm), tk = std::to_string(t.tk),
                    tn = std::to_string(t.tn);
  // K tiles of tk values are tk / 32 blocks, at byte kk / 32 * block_bytes of each weight row.
  const std::string kb =
      fmt.block_bytes ? "          %kq = arith.div %kk, 32\n"
                        "          %kb = arith.mul %kq, " + std::to_string(fmt.block_bytes) + "\n"
                      : "          %kb = arith.mul %kk, 1\n";
  const std::string text =
      "func @" + name + "(%a: in tensor<{M}x{K}xf32>, %w: in tensor<{N}x{KB}xi8>, "
      "%c: out tensor<{M}x{N}xf32>) {\n"
      "  %m = tensor.dim %a, 0\n"
      "  %k = tensor.dim %a, 1\n"
      "  %n = tensor.dim %w, 0\n"
      "  for %i = 0 to %m step " + tm + " {\n"
      "    for %j = 0 to %n step " + tn + " {\n"
      "      incore {\n"
      "        %zero = tile.full 0.0 : tile<" + tm + "x" + tn + "xf32>\n"
      "        %acc = for %kk = 0 to %k step " + tk + " iter(%p = %zero) {\n" + kb +
      "          %ta = tile.load %a[%i, %kk] : tile<" + tm + "x" + tk + "xf32>\n"
      "          %tb = tile.load %w[%j, %kb] : tile<" + tn + "x" + std::to_string(tkb) + "xi8>\n"
      "          %next = tile.qmatmul_acc %p, %ta, %tb {format = \"" + fmt.name + "\"}\n"
      "          yield %next\n"
      "        }\n"
      "        tile.store %acc, %c[%i, %j]\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  Result<Program> p = Program::Parse(text, name + ".pto");
  if (!p.ok()) throw std::runtime_error(p.status().message() + "\n" + text);
  Spec spec;
  spec.name = name;
  spec.program = std::move(p).value();
  return spec;
}

// (M, K, N): K in whole blocks; odd M and N, partial tiles, K = 0 and 32, zero-size M and N.
std::vector<RunConfig> QmatmulConfigs(const Format& fmt, const Tiling& t) {
  std::vector<std::array<int64_t, 3>> sizes = {{1, 32, 1}, {3, 64, 5}, {9, 96, 17}, {0, 64, 4},
                                               {4, 64, 0}, {2, 0, 3}};
  if (fmt.block_bytes) {
    sizes.push_back({t.tm + 1, 2 * t.tk + 32, t.tn + 3});
  } else {
    sizes.push_back({t.tm + 1, t.tk, t.tn + 3});
  }
  std::vector<RunConfig> out;
  uint32_t seed = 700;
  for (const Layout& layout : LayoutsFor(DType::kI8))
    for (const auto& s : sizes)
      out.push_back({{{"M", s[0]}, {"K", s[1]}, {"N", s[2]}, {"KB", RowBytes(fmt, s[1])}},
                     layout,
                     seed++});
  return out;
}

constexpr Format kFormats[] = {{"q4_0", 18}, {"q4_1", 20}, {"q8_0", 34}, {"w8a8", 0}};

const std::vector<Family>& Families() {
  static const std::vector<Family> families = [] {
    std::vector<Family> out;
    for (const Format& f : kFormats) {
      // w8a8's scale ends the row: one K tile covers it.
      const Tiling rows = f.block_bytes ? Tiling{"", 8, 64, 16} : Tiling{"", 8, 256, 16};
      const Tiling gemv = {"_gemv", 1, 256, 64};
      for (const Tiling& t : {rows, gemv})
        out.push_back({std::string("qmatmul") + t.tag + "_" + f.name, {DType::kF32},
                       [f, t](DType) { return QmatmulSpec(f, t); },
                       [f, t](DType) { return QmatmulConfigs(f, t); }});
    }
    return out;
  }();
  return families;
}

class QmatmulTest : public FamilyTest {};

TEST_P(QmatmulTest, MatchesInterpreter) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, QmatmulTest, ::testing::ValuesIn(Expand(Families())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
