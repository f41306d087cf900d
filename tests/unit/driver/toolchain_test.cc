// The CPU toolchain as the driver uses it: compiler failures and a missing compiler (kToolchain,
// exit 3), ISA selection (PTOX_CPU_DISABLE), `ptox compile --emit`, and runtime errors raised by
// generated code (kRuntime, exit 4).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "tests/unit/driver/driver_test_util.h"

namespace ptox::driver {
namespace {

using testing::BestCpu;
using testing::DriverTest;
using testing::MustParse;
using testing::Ptox;
using testing::ReadFile;
using testing::ScopedEnv;
using testing::UniqueScale;

// The rest of the line that follows `marker` in `text` (empty when absent).
std::string LineAfter(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  return text.substr(at, text.find('\n', at) - at);
}

// A compiler that fails the way a real one does: a diagnostic on stderr and exit status 1.
TEST_F(DriverTest, CompilerFailureIsAToolchainErrorWithAReproducer) {
  std::string cc = tmp_ / "failing-cc";
  testing::WriteFile(cc, "#!/bin/sh\necho 'failing-cc: error: no luck today' >&2\nexit 1\n");
  ASSERT_EQ(chmod(cc.c_str(), 0755), 0);
  std::string file = WriteProgram("p.pto", UniqueScale());
  for (const std::string& compiler : {cc, std::string("/bin/false")}) {
    ScopedEnv env("PTOX_CXX", compiler);
    ProcessResult r = Ptox({"run", file, "--target=cpu-scalar"});
    EXPECT_EQ(r.exit_code, 3) << r.err;  // StatusCode::kToolchain
    EXPECT_NE(r.err.find("toolchain error: the C++ compiler failed with exit code 1"),
              std::string::npos)
        << r.err;
    if (compiler == cc) {
      EXPECT_NE(r.err.find("failing-cc: error: no luck today"), std::string::npos) << r.err;
    }
    std::string command = LineAfter(r.err, "reproduce with: ");
    EXPECT_EQ(command.rfind(compiler + " ", 0), 0u) << r.err;
    EXPECT_NE(command.find(" -march="), std::string::npos) << command;
    std::string kept = LineAfter(r.err, "(the generated source is kept at ");
    ASSERT_FALSE(kept.empty()) << r.err;
    kept.pop_back();  // the closing parenthesis
    EXPECT_NE(command.find(" " + kept), std::string::npos) << "the command compiles " << kept;
    EXPECT_NE(ReadFile(kept).find("ptox_entry"), std::string::npos) << kept;
    EXPECT_EQ(r.out, "") << "no results on failure";
  }
  for (const std::string& f : CacheFiles()) {
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << "no temporary file is left: " << f;
    EXPECT_NE(f.find(".failed"), std::string::npos) << "no entry, the failures only: " << f;
  }
}

TEST_F(DriverTest, MissingCompilerIsAToolchainError) {
  std::string missing = tmp_ / "no-such-compiler";
  ScopedEnv env("PTOX_CXX", missing);
  std::string file = WriteProgram("p.pto", UniqueScale());
  ProcessResult r = Ptox({"run", file, "--target=cpu"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no C++ compiler found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << "names PTOX_CXX's value: " << r.err;
  // What needs no compiler still works.
  ProcessResult src = Ptox({"compile", file, "--target=cpu-scalar", "--emit=src"});
  EXPECT_EQ(src.exit_code, 0) << src.err;
  EXPECT_NE(src.out.find("ptox_entry"), std::string::npos);
  EXPECT_TRUE(CacheFiles().empty());
}

TEST_F(DriverTest, CpuIsTheBestAvailableIsa) {
  std::vector<std::string> targets = AvailableTargets();
  ASSERT_GE(targets.size(), 2u);
  EXPECT_EQ(targets.back(), "interp");
  EXPECT_EQ(targets[targets.size() - 2], "cpu-scalar");
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_EQ(targets.front(), "cpu-avx512");
  }
}

// PTOX_CPU_DISABLE makes the host look like one without the listed ISAs: asking for one is an
// `unsupported` error naming the missing features (nothing compiled), and "cpu" falls back.
TEST_F(DriverTest, MissingIsaIsUnsupportedAndCpuFallsBack) {
  if (BestCpu() != "cpu-avx512") GTEST_SKIP() << "needs an AVX-512 host";
  std::string file = WriteProgram("p.pto", UniqueScale());
  Program prog = testing::MustLoad(file);  // the CLI's program: the same cache keys
  auto binary = [&](const std::string& target) {
    Result<std::string> p = Compile(prog, {.target = target, .emit = Emit::kBinary});
    EXPECT_TRUE(p.ok()) << target << ": " << p.status().message();
    return p.ok() ? *p : "";
  };
  {
    ScopedEnv env("PTOX_CPU_DISABLE", "avx512");
    EXPECT_EQ(AvailableTargets().front(), "cpu-avx2");
    std::vector<float> x(128), y(128);
    std::vector<Arg> args = {Tensor::Contiguous(x.data(), DType::kF32, {8, 16}),
                             Tensor::Contiguous(y.data(), DType::kF32, {8, 16})};
    Status s = ptox::Run(prog, args, {.target = "cpu-avx512"});
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.message();
    EXPECT_NE(s.message().find("AVX-512"), std::string::npos) << s.message();
    EXPECT_TRUE(CacheFiles().empty()) << "nothing was compiled";
    EXPECT_EQ(binary("cpu"), binary("cpu-avx2"));
  }
  ScopedEnv env("PTOX_CPU_DISABLE", "avx512,avx2");
  std::string scalar = binary("cpu-scalar");
  std::vector<std::string> files = CacheFiles();
  ProcessResult r = Ptox({"run", file, "--target=cpu-avx512"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cpu-avx512"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("AVX-512 F/BW/DQ/VL"), std::string::npos) << r.err;
  r = Ptox({"run", file, "--target=cpu-avx2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("AVX2"), std::string::npos) << r.err;
  r = Ptox({"run", file, "--target=cpu", "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CacheFiles(), files) << "cpu reused the cpu-scalar entry";
  EXPECT_EQ(binary("cpu"), scalar);
}

TEST_F(DriverTest, CompileEmitsIrSourceAndBinary) {
  std::string file = WriteProgram("p.pto", UniqueScale());
  std::string ir = tmp_ / "out.ir", src = tmp_ / "out.cc", bin = tmp_ / "out.so";
  for (const auto& [emit, out] : {std::pair{"ir", ir}, {"src", src}, {"bin", bin}}) {
    ProcessResult r =
        Ptox({"compile", file, "--target=cpu-scalar", std::string("--emit=") + emit, "-o", out});
    ASSERT_EQ(r.exit_code, 0) << emit << ": " << r.err;
    EXPECT_EQ(r.out, "") << "stdout carries artifacts only, and this one went to " << out;
  }
  Result<Program> lowered = Program::FromFile(ir);
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  EXPECT_EQ(lowered->FunctionNames(), std::vector<std::string>{"scale"});
  EXPECT_NE(ReadFile(ir).find("tile.mul"), std::string::npos);
  EXPECT_NE(ReadFile(src).find("PTOX_EXPORT int ptox_entry("), std::string::npos);
  void* handle = dlopen(bin.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_NE(dlsym(handle, "ptox_entry"), nullptr);
  dlclose(handle);
  EXPECT_EQ(CacheFiles().size(), 2u) << "bin went through the cache";
}

// A load whose offset comes from a run-time scalar: out of bounds only when %i is too large.
constexpr char kShifted[] = R"(func @shifted(%x: in tensor<8x16xf32>, %y: out tensor<8x16xf32>,
                 %i: in index) {
  incore {
    %t = tile.load %x[%i, 0] : tile<8x16xf32>
    tile.store %t, %y[0, 0]
  }
}
)";

TEST_F(DriverTest, OutOfBoundsLoadIsARuntimeErrorOnEveryCpuTarget) {
  Program prog = MustParse(kShifted);
  std::vector<float> x(128, 1.0f), y(128, 0.0f);
  std::vector<std::string> targets = AvailableTargets();
  for (const std::string& target : targets) {
    for (int64_t i : {int64_t{8}, int64_t{-1}}) {
      std::vector<Arg> args = {Tensor::Contiguous(x.data(), DType::kF32, {8, 16}),
                               Tensor::Contiguous(y.data(), DType::kF32, {8, 16}), i};
      Status s = ptox::Run(prog, args, {.target = target});
      EXPECT_EQ(s.code(), StatusCode::kRuntime) << target << ": " << s.message();
      EXPECT_NE(s.message().find("tile.load"), std::string::npos) << target << ": " << s.message();
      // The source position of the load: "at <input>:4:5" (generated code), "(<input>:4)"
      // (interpreter).
      const std::string& m = s.message();
      EXPECT_NE(m.find(target == "interp" ? "tile.load (<input>:4)" : "tile.load at <input>:4:5"),
                std::string::npos)
          << target << ": " << m;
      EXPECT_NE(s.message().find("out of bounds"), std::string::npos) << s.message();
    }
    EXPECT_EQ(y, std::vector<float>(128, 0.0f)) << target << ": nothing was stored";
  }
  std::string file = WriteProgram("shifted.pto", kShifted);
  ProcessResult r = Ptox({"run", file, "--target=cpu", "--scalars", "i=8"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  // The op at its file:line:col, in the task named by where its incore scope is in the file: the
  // positions the user wrote, the interpreter's file:line.
  EXPECT_NE(r.err.find("task 0 (shifted.incore0 (" + file + ":3:3)) failed: tile.load at " + file +
                       ":4:5: "),
            std::string::npos)
      << r.err;
  ProcessResult interp = Ptox({"run", file, "--target=interp", "--scalars", "i=8"});
  EXPECT_EQ(interp.exit_code, 4) << interp.err;
  EXPECT_NE(interp.err.find("tile.load (" + file + ":4)"), std::string::npos) << interp.err;
  r = Ptox({"run", file, "--target=cpu", "--scalars", "i=0", "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The file name goes into the generated code's messages as a C++ string literal: quotes,
// backslashes and control characters in it neither break the build nor change the name.
TEST_F(DriverTest, AFileNameInGeneratedMessagesIsEscaped) {
  const std::string name = "a \"quoted\" dir\\with\tcontrol\n%s\?\?/chars.pto";
  Result<Program> prog = Program::Parse(kShifted, name);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  std::vector<float> x(128, 1.0f), y(128, 0.0f);
  std::vector<Arg> args = {Tensor::Contiguous(x.data(), DType::kF32, {8, 16}),
                           Tensor::Contiguous(y.data(), DType::kF32, {8, 16}), int64_t{8}};
  Status s = ptox::Run(*prog, args, {.target = "cpu-scalar"});
  EXPECT_EQ(s.code(), StatusCode::kRuntime) << s.message();
  EXPECT_NE(s.message().find("(shifted.incore0 (" + name + ":3:3))"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("tile.load at " + name + ":4:5: "), std::string::npos) << s.message();
  // An assert's position is part of a printf format.
  Result<Program> checked = Program::Parse(R"(func @f(%n: in index, %y: out tensor<1x16xf32>) {
  %ok = arith.lt %n, 10
  arith.assert %ok, %n {op = "my.check", msg = "n = {} is not below 10"}
  incore {
    %t = tile.full 0.0 : tile<1x16xf32>
    tile.store %t, %y[0, 0]
  }
})",
                                           name);
  ASSERT_TRUE(checked.ok()) << checked.status().message();
  s = ptox::Run(*checked, {int64_t{12}, Tensor::Contiguous(y.data(), DType::kF32, {1, 16})},
                {.target = "cpu-scalar"});
  EXPECT_NE(s.message().find("my.check at " + name + ":3:3: n = 12 is not below 10"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace ptox::driver
