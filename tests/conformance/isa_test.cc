// Disassembles the shared objects each CPU target builds (objdump) and checks the ISA they use:
// cpu-avx512 uses zmm registers, cpu-avx2 nothing EVEX-only (zmm, {k} masks, {1toN} broadcasts),
// cpu-scalar no ymm / zmm at all. On AArch64: the loops that do the floating-point work of exp
// and of the matmul micro-kernel are SVE (cpu-sve) or NEON (cpu-neon) code with no scalar
// floating-point instruction in them, bf16 and quantized matmuls run on BFDOT and SDOT where the
// host has them, and the AArch64 cpu-scalar build has no vector arithmetic.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>

#include "driver/cache.h"
#include "driver/compile.h"
#include "driver/program_ir.h"
#include "harness.h"
#include "ptox/builder.h"
#include "ptox/cpu_features.h"
#include "ptox/ptox.h"
#include "ptox/subprocess.h"
#include "targets/target.h"

namespace ptox::conformance {
namespace {

// The build's objdump (aarch64-linux-gnu-objdump in a cross build run under QEMU).
#ifndef PTOX_OBJDUMP
#define PTOX_OBJDUMP "/usr/bin/objdump"
#endif
constexpr const char* kObjdump = PTOX_OBJDUMP;

// y = exp(a) + b over 64 x 256 f32: vectorizable elementwise work.
Program ExpAddProgram() {
  FunctionBuilder f("exp_add");
  Val a = f.Param("a", ParamDirection::kIn, DType::kF32, {int64_t{64}, int64_t{256}});
  Val b = f.Param("b", ParamDirection::kIn, DType::kF32, {int64_t{64}, int64_t{256}});
  Val y = f.Param("y", ParamDirection::kOut, DType::kF32, {int64_t{64}, int64_t{256}});
  f.Incore([&] {
    Val ta = f.Load(a, {int64_t{0}, int64_t{0}}, 64, 256);
    Val tb = f.Load(b, {int64_t{0}, int64_t{0}}, 64, 256);
    f.Store(f.Op("tile.add", {f.Op("tile.exp", {ta}), tb}), y, {int64_t{0}, int64_t{0}});
  });
  return BuildOrDie(f);
}

// C = A B over 64 x 128 x 96 tiles: the packed GEMM's micro-kernel (bf16: A and B read in place,
// the bf16 dot-product kernel where the target has one).
Program MatmulProgram(DType d = DType::kF32) {
  FunctionBuilder f("mm");
  Val a = f.Param("a", ParamDirection::kIn, d, {int64_t{64}, int64_t{128}});
  Val b = f.Param("b", ParamDirection::kIn, d, {int64_t{128}, int64_t{96}});
  Val c = f.Param("c", ParamDirection::kOut, DType::kF32, {int64_t{64}, int64_t{96}});
  f.Incore([&] {
    Val ta = f.Load(a, {int64_t{0}, int64_t{0}}, 64, 128);
    Val tb = f.Load(b, {int64_t{0}, int64_t{0}}, 128, 96);
    f.Store(f.Matmul(ta, tb), c, {int64_t{0}, int64_t{0}});
  });
  return BuildOrDie(f);
}

// y = x w^T over q4_1 blocks (4 x 256 activations, 64 weight rows of 8 blocks): the quantized
// matmul's block loop.
Program QmatmulProgram() {
  Result<Program> prog = Program::Parse(R"(
func @qm(%x: in tensor<4x256xf32>, %w: in tensor<64x160xi8>, %y: out tensor<4x64xf32>) {
  %p = tensor.qmatmul %x, %w {format = "q4_1"}
  tensor.store %p, %y
}
)",
                                        "<isa_test>");
  EXPECT_TRUE(prog.ok()) << prog.status().message();
  return std::move(*prog);
}

bool HostRuns(const std::string& target) {
  std::vector<std::string> all = AvailableTargets();
  return std::find(all.begin(), all.end(), target) != all.end();
}

// Builds the program for `target` through the driver's cache and returns the disassembly of the
// shared object.
std::string Disassemble(const std::string& target_name, const Program& prog = ExpAddProgram()) {
  const ir::Func& func = *ProgramInternals::Module(prog).funcs.back();
  const targets::CompiledTarget* target = targets::GetTarget(target_name).compiled();
  EXPECT_NE(target, nullptr) << target_name << " is no compiled target";
  if (!target) return {};
  const std::string so = driver::CompileToCache(*target, func);
  std::optional<ProcessResult> r =
      RunProcess({kObjdump, "-d", "--no-show-raw-insn", so}, /*timeout_ms=*/60000);
  EXPECT_TRUE(r && r->exit_code == 0) << "objdump failed: " << (r ? r->err : "not started");
  if (!r) return {};
  EXPECT_NE(r->out.find("<ptox_entry>:"), std::string::npos) << "no ptox_entry in " << so;
  return r->out;
}

int Count(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// An AArch64 loop found in a disassembly: the instructions from a backward branch's target to
// the branch, and its floating-point arithmetic by register kind.
struct Loop {
  int vector_fp = 0;  // on z registers (SVE) or v registers (NEON)
  int sve_fp = 0;     // of which on z registers
  int scalar_fp = 0;  // on s / d / h registers
  int bfdot = 0;      // bf16 dot products (BFDOT)
  int sve_bfdot = 0;  // of which on z registers
  int sdot = 0;       // int8 dot products (SDOT)
};

// Every innermost loop (backward branch) of an AArch64 disassembly, counted. Floating-point
// arithmetic is what the kernels' inner loops do: add, sub, mul, div, fused multiply-add and its
// forms, max, min, conversions to integer, square roots.
std::vector<Loop> ArmLoops(const std::string& dis) {
  static const std::regex insn(R"(^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$)");
  static const std::regex branch(R"(^(b\.\w+|cbn?z|tbn?z|b)$)");
  static const std::regex target(R"(\b([0-9a-f]+) <)");
  static const std::regex fp(R"(^f(add|sub|mul|div|mla|mls|mad|msb|nmla|nmls|madd|msub|nmadd|)"
                             R"(nmsub|max|min|maxnm|minnm|cvtz[su]|sqrt|scale)$)");
  struct Insn {
    uint64_t addr;
    std::string op, args;
  };
  std::vector<Insn> all;
  std::istringstream in(dis);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, insn))
      all.push_back({std::stoull(m[1], nullptr, 16), m[2], m[3]});
  }
  // Innermost loops only: [first, last] instruction ranges that hold no other loop.
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t i = 0; i < all.size(); ++i) {
    std::smatch t;
    if (!std::regex_match(all[i].op, branch) || !std::regex_search(all[i].args, t, target))
      continue;
    const uint64_t to = std::stoull(t[1], nullptr, 16);
    size_t first = i;
    while (first > 0 && all[first - 1].addr >= to) --first;
    if (to < all[i].addr) ranges.emplace_back(first, i);
  }
  std::vector<Loop> loops;
  for (const auto& [first, last] : ranges) {
    const bool outer = std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) {
      return r != std::pair{first, last} && r.first >= first && r.second <= last;
    });
    if (outer) continue;
    Loop loop;
    for (size_t j = first; j <= last; ++j) {
      const char r = all[j].args.empty() ? ' ' : all[j].args[0];
      if (all[j].op == "bfdot") {
        loop.bfdot += 1;
        loop.sve_bfdot += r == 'z';
      }
      loop.sdot += all[j].op == "sdot";
      if (!std::regex_match(all[j].op, fp)) continue;
      (r == 'z' || r == 'v' ? loop.vector_fp : loop.scalar_fp) += 1;
      loop.sve_fp += r == 'z';
    }
    loops.push_back(loop);
  }
  return loops;
}

// The loop with the most vector floating-point arithmetic (none when no loop has any).
Loop HottestVectorLoop(const std::string& dis) {
  Loop best;
  for (const Loop& l : ArmLoops(dis))
    if (l.vector_fp > best.vector_fp) best = l;
  return best;
}

class IsaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kObjdump, X_OK) != 0) GTEST_SKIP() << kObjdump << " is missing";
  }
  std::string For(const std::string& target, const Program& prog = ExpAddProgram()) {
    if (!HostRuns(target)) return {};
    return Disassemble(target, prog);
  }
  // The exp loop of `target` is vector code in `reg` registers (z for SVE, v for NEON), and
  // so is its matmul micro-kernel (NEON v registers on cpu-neon and on the length-agnostic
  // cpu-sve, whose sizeless vectors cannot fill a register block: kernels/cpu/matmul.h); neither
  // loop has scalar floating-point arithmetic inside. Returns the matmul's loop.
  Loop ExpectVectorLoops(const std::string& target, const std::string& reg) {
    const std::string dis = For(target);
    EXPECT_GT(Count(dis, "\\b" + reg + "[0-9]+\\.[0-9]*s"), 0) << target << ": no " << reg;
    const Loop mm = HottestVectorLoop(For(target, MatmulProgram()));
    for (const Loop& hot : {HottestVectorLoop(dis), mm}) {
      EXPECT_GE(hot.vector_fp, 8) << target << ": no loop of vector arithmetic";
      EXPECT_EQ(hot.scalar_fp, 0) << target << ": scalar arithmetic in the vector loop";
    }
    return mm;
  }
};

TEST_F(IsaTest, Avx512BuildUsesZmm) {
  if (!HostRuns("cpu-avx512")) GTEST_SKIP() << "the host does not run cpu-avx512";
  std::string dis = For("cpu-avx512");
  EXPECT_GT(Count(dis, "%zmm[0-9]+"), 0) << "the cpu-avx512 build uses no zmm register";
}

TEST_F(IsaTest, Avx2BuildUsesNoEvexOnlyInstructions) {
  if (!HostRuns("cpu-avx2")) GTEST_SKIP() << "the host does not run cpu-avx2";
  std::string dis = For("cpu-avx2");
  EXPECT_GT(Count(dis, "%ymm[0-9]+"), 0) << "the cpu-avx2 build is not vectorized";
  EXPECT_EQ(Count(dis, "%zmm[0-9]+"), 0) << "zmm register in the cpu-avx2 build";
  EXPECT_EQ(Count(dis, "\\{%k[0-7]\\}"), 0) << "an AVX-512 mask in the cpu-avx2 build";
  EXPECT_EQ(Count(dis, "%k[0-7]\\b"), 0) << "an AVX-512 mask register in the cpu-avx2 build";
  EXPECT_EQ(Count(dis, "\\{1to[0-9]+\\}"), 0) << "an EVEX broadcast in the cpu-avx2 build";
  // Registers 16-31 exist only with EVEX encoding.
  EXPECT_EQ(Count(dis, "%[xy]mm(1[6-9]|2[0-9]|3[01])\\b"), 0) << "xmm16+/ymm16+ in cpu-avx2";
}

TEST_F(IsaTest, ScalarBuildUsesNoYmmOrZmm) {
  if (!HostRuns("cpu-scalar") || HostRuns("cpu-neon")) GTEST_SKIP() << "not an x86-64 host";
  std::string dis = For("cpu-scalar");
  EXPECT_GT(Count(dis, "%xmm[0-9]+"), 0) << "no SSE float code in the cpu-scalar build";
  EXPECT_EQ(Count(dis, "%[yz]mm[0-9]+"), 0) << "ymm / zmm register in the cpu-scalar build";
}

TEST_F(IsaTest, SveBuildRunsItsLoopsInVectors) {
  if (!HostRuns("cpu-sve")) GTEST_SKIP() << "the host does not run cpu-sve";
  ExpectVectorLoops("cpu-sve", "z");
}

// cpu-sve128 / 256 / 512 (the one the host's length selects): its matmul micro-kernel is SVE too.
TEST_F(IsaTest, FixedLengthSveBuildRunsItsMatmulInSveVectors) {
  std::string target;
  for (const char* t : {"cpu-sve128", "cpu-sve256", "cpu-sve512"})
    if (HostRuns(t)) target = t;
  if (target.empty()) GTEST_SKIP() << "the host runs no fixed-length SVE target";
  const Loop mm = ExpectVectorLoops(target, "z");
  EXPECT_EQ(mm.sve_fp, mm.vector_fp) << target << ": NEON arithmetic in the matmul micro-kernel";
}

TEST_F(IsaTest, NeonBuildRunsItsLoopsInVectors) {
  if (!HostRuns("cpu-neon")) GTEST_SKIP() << "the host does not run cpu-neon";
  ExpectVectorLoops("cpu-neon", "v");
  EXPECT_EQ(Count(For("cpu-neon"), "\\bz[0-9]+\\."), 0) << "an SVE register in cpu-neon";
}

// With FEAT_BF16 the bf16 matmul's micro-kernel is BFDOT by element (kernels/cpu/matmul_bf16_arm.h):
// a loop of at least one dot product per row of the register block, on z registers on the
// fixed-length SVE targets, with no scalar arithmetic.
TEST_F(IsaTest, ArmBf16MatmulRunsOnBfdot) {
  if (!HostRuns("cpu-neon")) GTEST_SKIP() << "not an AArch64 host";
  if (!DetectArm().bf16) GTEST_SKIP() << "the host has no FEAT_BF16";
  for (const char* target : {"cpu-neon", "cpu-sve", "cpu-sve128", "cpu-sve256", "cpu-sve512"}) {
    if (!HostRuns(target)) continue;
    Loop hot;
    for (const Loop& l : ArmLoops(For(target, MatmulProgram(DType::kBF16))))
      if (l.bfdot > hot.bfdot) hot = l;
    EXPECT_GE(hot.bfdot, 8) << target << ": no loop of BFDOT in the bf16 matmul";
    EXPECT_EQ(hot.scalar_fp, 0) << target << ": scalar arithmetic in the BFDOT loop";
    const bool fixed_sve = std::string(target).rfind("cpu-sve", 0) == 0 && target[7] != '\0';
    EXPECT_EQ(hot.sve_bfdot, fixed_sve ? hot.bfdot : 0) << target << ": BFDOT registers";
  }
}

// With FEAT_DotProd the quantized matmul's block loop is SDOT (kernels/cpu/qmatmul.h): two per
// block, in a loop of vector arithmetic with no scalar lane arithmetic.
TEST_F(IsaTest, ArmQuantizedMatmulRunsOnSdot) {
  if (!HostRuns("cpu-neon")) GTEST_SKIP() << "not an AArch64 host";
  if (!DetectArm().dotprod) GTEST_SKIP() << "the host has no FEAT_DotProd";
  for (const char* target : {"cpu-neon", "cpu-sve", "cpu-sve128", "cpu-sve256", "cpu-sve512"}) {
    if (!HostRuns(target)) continue;
    Loop hot;
    for (const Loop& l : ArmLoops(For(target, QmatmulProgram())))
      if (l.sdot > hot.sdot) hot = l;
    EXPECT_GE(hot.sdot, 2) << target << ": no loop of SDOT in the quantized matmul";
    EXPECT_GE(hot.vector_fp, 2) << target << ": the lanes' FMAs are not vector code";
  }
}

TEST_F(IsaTest, ArmScalarBuildHasNoVectorArithmetic) {
  if (!HostRuns("cpu-scalar") || !HostRuns("cpu-neon")) GTEST_SKIP() << "not an AArch64 host";
  for (const Program& prog : {ExpAddProgram(), MatmulProgram()}) {
    const std::string dis = For("cpu-scalar", prog);
    EXPECT_GT(Count(dis, "\\bf(add|mul)\\s+s[0-9]+"), 0) << "no scalar float code";
    for (const Loop& l : ArmLoops(dis)) EXPECT_EQ(l.vector_fp, 0) << "vector arithmetic in a loop";
  }
}

}  // namespace
}  // namespace ptox::conformance
