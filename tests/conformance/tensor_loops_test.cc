// Conformance of sequential loops and ifs that carry tensors on every CPU target against the
// interpreter: two carried tensors swapped every trip beside a third accumulating a NaN-
// propagating max, and a tensor-valued if per trip choosing between a select under a carried bool
// mask and a negation; 0, 1, 2 and 5 trips over symbolic sizes 0, 1, 7 and around the lowering's
// tiles, on every memory layout (strided and misaligned views of the inits, outputs written only
// where they should be), with the dtype's edge values; all bit-identical.
#include <regex>

#include "programs.h"

namespace ptox::conformance {
namespace {

using Dims = std::map<std::string, int64_t>;

Program ParseTyped(const std::string& text, DType d) {
  auto p = Program::Parse(std::regex_replace(text, std::regex("DT"), std::string(DTypeName(d))));
  if (!p.ok())
    throw std::runtime_error("a conformance program does not parse: " + p.status().message());
  return *p;
}

const char kSwap[] = R"(
func @f(%x: in tensor<{N}x{M}xDT>, %z: in tensor<{N}x{M}xDT>, %n: in index,
        %ya: out tensor<{N}x{M}xDT>, %yb: out tensor<{N}x{M}xDT>, %ys: out tensor<{N}x{M}xDT>) {
  %ra, %rb, %rs = for %i = 0 to %n step 1 iter(%a = %x, %b = %z, %s = %x) {
    %t = tensor.mul %a, 0.75
    %u = tensor.max %s, %t
    %v = tensor.sub %u, %b
    yield %b, %a, %v
  }
  tensor.store %ra, %ya
  tensor.store %rb, %yb
  tensor.store %rs, %ys
}
)";

const char kIfMask[] = R"(
func @f(%x: in tensor<{N}x{M}xDT>, %c: in tensor<{N}x{M}xbool>, %n: in index,
        %y: out tensor<{N}x{M}xDT>, %m: out tensor<{N}x{M}xbool>) {
  %r, %rm = for %i = 0 to %n step 1 iter(%h = %x, %k = %c) {
    %odd = arith.rem %i, 2
    %even = arith.eq %odd, 0
    %s = if %even -> tensor<{N}x{M}xDT> {
      %e = tensor.select %k, %h, 0.5
      yield %e
    } else {
      %g = tensor.neg %h
      yield %g
    }
    %k2 = tensor.gt %s, 0.0
    yield %s, %k2
  }
  tensor.store %r, %y
  tensor.store %rm, %m
}
)";

std::vector<RunConfig> Configs(DType d) {
  std::vector<RunConfig> out;
  uint32_t seed = 11;
  for (const Layout& layout : LayoutsFor(d))
    for (auto [n, m] :
         {std::pair<int64_t, int64_t>{1, 1}, {7, 13}, {0, 5}, {5, 0}, {3, 1025}, {257, 5}})
      out.push_back({{{"N", n}, {"M", m}}, layout, seed++});
  return out;
}

std::vector<Family> Families() {
  std::vector<Family> out;
  const std::vector<DType> floats = {DType::kF32, DType::kBF16, DType::kF16};
  for (int64_t trips : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{5}}) {
    const std::string tag = "_" + std::to_string(trips);
    for (const auto& [name, text] :
         {std::pair<std::string, const char*>{"loop_swap", kSwap}, {"loop_if_mask", kIfMask}}) {
      out.push_back({name + tag, floats,
                     [name, text, tag, trips](DType d) {
                       Spec s;
                       s.name = name + tag + "_" + std::string(DTypeName(d));
                       s.program = ParseTyped(text, d);
                       s.scalars = {{"n", trips}};
                       return s;
                     },
                     Configs});
    }
  }
  return out;
}

const std::vector<Family>& AllFamilies() {
  static const std::vector<Family> kFamilies = Families();
  return kFamilies;
}

class TensorLoopsTest : public FamilyTest {};

TEST_P(TensorLoopsTest, MatchesInterpreterBitForBit) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, TensorLoopsTest, ::testing::ValuesIn(Expand(AllFamilies())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
