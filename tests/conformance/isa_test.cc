// Disassembles the shared objects each CPU target builds (objdump) and checks the ISA they use:
// cpu-avx512 uses zmm registers, cpu-avx2 nothing EVEX-only (zmm, {k} masks, {1toN} broadcasts),
// cpu-scalar no ymm / zmm at all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <string>

#include "driver/cache.h"
#include "driver/compile.h"
#include "ptox/builder.h"
#include "ptox/ptox.h"
#include "ptox/subprocess.h"
#include "targets/target.h"

namespace ptox::conformance {
namespace {

constexpr const char* kObjdump = "/usr/bin/objdump";

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
  Result<Program> p = f.Build();
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

bool HostRuns(const std::string& target) {
  std::vector<std::string> all = AvailableTargets();
  return std::find(all.begin(), all.end(), target) != all.end();
}

// Builds the program for `target` through the driver's cache and returns the disassembly of the
// shared object.
std::string Disassemble(const std::string& target_name) {
  Program prog = ExpAddProgram();
  const ir::Func& func = *prog.module().funcs.back();
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

class IsaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kObjdump, X_OK) != 0) GTEST_SKIP() << kObjdump << " is missing";
  }
  std::string For(const std::string& target) {
    if (!HostRuns(target)) return {};
    return Disassemble(target);
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
  if (!HostRuns("cpu-scalar")) GTEST_SKIP() << "the host does not run cpu-scalar";
  std::string dis = For("cpu-scalar");
  EXPECT_GT(Count(dis, "%xmm[0-9]+"), 0) << "no SSE float code in the cpu-scalar build";
  EXPECT_EQ(Count(dis, "%[yz]mm[0-9]+"), 0) << "ymm / zmm register in the cpu-scalar build";
}

}  // namespace
}  // namespace ptox::conformance
