// The compiler as a process: it never outlives ptox (a timeout or `kill -9` of ptox ends the
// compiler and everything it started), what a dead build left in the cache is swept by the next
// build, and the compiler sees only the environment that is part of the cache key.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/driver/driver_test_util.h"

extern char** environ;

namespace ptox::driver {
namespace {

using testing::DriverTest;
using testing::Ptox;
using testing::ReadFile;
using testing::ScopedEnv;
using testing::UniqueScale;

namespace fs = std::filesystem;

// Polls `done` every 10 ms for up to `seconds`.
template <typename F>
bool Within(double seconds, F done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// Whether process `pid` runs nothing any more (gone, or a zombie).
bool Gone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

class CompileProcessTest : public DriverTest {
 protected:
  // A fake compiler that starts a helper (as g++ starts cc1plus), records the helper's pid and
  // then hangs; the helper would write `late` after 3 s.
  std::string HangingCompiler() {
    std::string cc = tmp_ / "hanging-cc";
    testing::WriteFile(cc, "#!/bin/sh\n(sleep 3; echo late > " + tmp_ / "late" + ") &\necho $! > " +
                               tmp_ / "helper.pid" + "\nsleep 60\n");
    EXPECT_EQ(chmod(cc.c_str(), 0755), 0);
    return cc;
  }
  pid_t HelperPid() { return std::stoi(ReadFile(tmp_ / "helper.pid")); }
  bool HelperStarted() { return !ReadFile(tmp_ / "helper.pid").empty(); }
};

// `kill -9` of ptox while it compiles: the compiler and its helper die with it (they used to run
// on and write their outputs), and the next build removes the files the dead one left.
TEST_F(CompileProcessTest, KillingPtoxEndsTheCompileAndTheNextBuildSweepsItsFiles) {
  std::string file = WriteProgram("p.pto", UniqueScale());
  pid_t ptox = 0;
  {
    ScopedEnv cxx("PTOX_CXX", HangingCompiler());
    std::vector<std::string> args = {PTOX_CLI, "run", file, "--target=cpu-scalar"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&ptox, PTOX_CLI, nullptr, nullptr, argv.data(), environ), 0);
  }
  ASSERT_TRUE(Within(60, [&] { return HelperStarted(); })) << "the compiler never started";
  ASSERT_EQ(kill(ptox, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(ptox, &status, 0), ptox);
  EXPECT_TRUE(Within(2, [&] { return Gone(HelperPid()); })) << "the compiler's helper survived";
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  EXPECT_FALSE(fs::exists(tmp_ / "late")) << "a compile outlived ptox";
  std::vector<std::string> left = CacheFiles();
  EXPECT_FALSE(left.empty()) << "the dead build's lock and source stay until swept";
  for (const std::string& f : left) EXPECT_NE(f.find(".tmp."), std::string::npos) << f;

  ProcessResult r = Ptox({"run", file, "--target=cpu-scalar", "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> files = CacheFiles();
  ASSERT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  testing::ExpectValidEntry(CachePath(files[0]));
}

// PTOX_COMPILE_TIMEOUT ends a compile that hangs, with everything it started, as a toolchain
// error; only the kept source remains.
TEST_F(CompileProcessTest, TimeoutEndsTheWholeCompile) {
  ScopedEnv cxx("PTOX_CXX", HangingCompiler());
  ScopedEnv timeout("PTOX_COMPILE_TIMEOUT", "1");
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = Ptox({"run", WriteProgram("p.pto", UniqueScale()), "--target=cpu-scalar"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("the C++ compiler timed out after 1 s (PTOX_COMPILE_TIMEOUT)"),
            std::string::npos)
      << r.err;
  ASSERT_TRUE(HelperStarted());
  EXPECT_TRUE(Within(2, [&] { return Gone(HelperPid()); })) << "the compiler's helper survived";
  std::vector<std::string> files = CacheFiles();
  ASSERT_EQ(files.size(), 1u) << ::testing::PrintToString(files);
  EXPECT_EQ(fs::path(files[0]).extension(), ".cc") << "the kept source";
}

// Variables that change what the compiler produces (CPATH, GCC_EXEC_PREFIX, ...) never reach it;
// PATH, which picks its assembler and linker, does, and is part of the key.
TEST_F(CompileProcessTest, CompilerSeesOnlyTheKeyedEnvironment) {
  std::string cc = tmp_ / "env-cc";
  testing::WriteFile(cc, "#!/bin/sh\nenv | sort > " + tmp_ / "env.txt" + "\nexec g++ \"$@\"\n");
  ASSERT_EQ(chmod(cc.c_str(), 0755), 0);
  ScopedEnv cxx("PTOX_CXX", cc);
  std::string file = WriteProgram("p.pto", UniqueScale());
  {
    ScopedEnv cpath("CPATH", tmp_.path()), prefix("GCC_EXEC_PREFIX", "/nonexistent/"),
        cplus("CPLUS_INCLUDE_PATH", "/nonexistent"), library("LIBRARY_PATH", "/nonexistent");
    ProcessResult r = Ptox({"run", file, "--target=cpu-scalar", "--check"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string env = ReadFile(tmp_ / "env.txt");
  for (const char* hidden : {"CPATH=", "GCC_EXEC_PREFIX=", "CPLUS_INCLUDE_PATH=", "LIBRARY_PATH=",
                             "PTOX_CACHE_DIR=", "HOME="})
    EXPECT_EQ(env.find(std::string("\n") + hidden), std::string::npos) << hidden << " in\n" << env;
  EXPECT_NE(env.find("LC_ALL=C\n"), std::string::npos) << env;
  EXPECT_NE(env.find("PATH=" + std::string(std::getenv("PATH")) + "\n"), std::string::npos) << env;
  EXPECT_EQ(CacheFiles().size(), 2u);
  {
    ScopedEnv cpath("CPATH", "/elsewhere");  // cleared: the same binary, the same entry
    ASSERT_EQ(Ptox({"run", file, "--target=cpu-scalar"}).exit_code, 0);
    EXPECT_EQ(CacheFiles().size(), 2u);
  }
  ScopedEnv path("PATH", tmp_.path() + ":" + std::getenv("PATH"));
  ASSERT_EQ(Ptox({"run", file, "--target=cpu-scalar", "--check"}).exit_code, 0);
  EXPECT_EQ(CacheFiles().size(), 4u) << "another PATH, another entry";
}

// PTOX_FAULT=compile:1 (a compiler that fails after writing its output) leaves nothing behind.
TEST_F(CompileProcessTest, FailedCompileLeavesNoFiles) {
  ScopedEnv fault("PTOX_FAULT", "compile:1");
  ProcessResult r = Ptox({"run", WriteProgram("p.pto", UniqueScale()), "--target=cpu-scalar"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("injected by PTOX_FAULT"), std::string::npos) << r.err;
  EXPECT_EQ(CacheFiles(), std::vector<std::string>{});
}

// A full disk while writing the generated source is a runtime error (4); while installing the
// entry, a warning: the build is used uncached. Neither leaves a file.
TEST_F(CompileProcessTest, FullDiskDuringABuild) {
  std::string file = WriteProgram("p.pto", UniqueScale());
  {
    ScopedEnv fault("PTOX_FAULT", "write:1");  // the generated source
    ProcessResult r = Ptox({"run", file, "--target=cpu-scalar"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
    EXPECT_EQ(CacheFiles(), std::vector<std::string>{});
  }
  ScopedEnv fault("PTOX_FAULT", "write:2");  // the entry's record
  ProcessResult r = Ptox({"run", file, "--target=cpu-scalar", "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("this kernel is not kept"), std::string::npos) << r.err;
  EXPECT_EQ(CacheFiles(), std::vector<std::string>{});
}

}  // namespace
}  // namespace ptox::driver
