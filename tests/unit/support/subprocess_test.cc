// RunProcess: output capture, the environment it passes, why a program could not start, and
// that a timeout ends the program's whole process group (not just the program), as it must for
// a compiler driver and the cc1plus / as / ld it starts.
#include "ptox/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "tests/common/files.h"

namespace ptox {
namespace {

using testing::ReadFile;
using testing::TempDir;

// Whether process `pid` is gone (or a zombie nobody reaped yet: it runs nothing).
bool Gone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

// Waits up to two seconds for `pid` to be gone.
bool EventuallyGone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (Gone(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(RunProcess, CapturesBothStreamsAndTheExitCode) {
  std::optional<ProcessResult> r = RunProcess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
  std::optional<ProcessResult> killed = RunProcess({"sh", "-c", "kill -SEGV $$"});
  ASSERT_TRUE(killed.has_value());
  EXPECT_EQ(killed->exit_code, 128 + SIGSEGV);
}

TEST(RunProcess, ReportsWhyAProgramCannotStart) {
  TempDir dir;
  errno = 0;
  EXPECT_FALSE(RunProcess({dir / "missing"}).has_value());
  EXPECT_EQ(errno, ENOENT);
  testing::WriteFile(dir / "bad-interpreter", "#!/nonexistent/interpreter\n");
  ASSERT_EQ(chmod((dir / "bad-interpreter").c_str(), 0755), 0);
  errno = 0;
  EXPECT_FALSE(RunProcess({dir / "bad-interpreter"}).has_value());
  EXPECT_EQ(errno, ENOENT) << "execve's own errno comes back";
}

// The program gets exactly the environment it is given.
TEST(RunProcess, PassesTheGivenEnvironmentOnly) {
  setenv("PTOX_TEST_LEAK", "1", 1);
  std::optional<ProcessResult> r =
      RunProcess({"/usr/bin/env"}, {.timeout_ms = 10000, .env = {{"A=1", "B=two"}}});
  unsetenv("PTOX_TEST_LEAK");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->out, "A=1\nB=two\n");
}

// A timed-out program and everything it started are killed: the background `sleep` used to keep
// running (only the program itself got SIGKILL).
TEST(RunProcess, TimeoutKillsTheWholeProcessGroup) {
  TempDir dir;
  const std::string pidfile = dir / "pid";
  auto start = std::chrono::steady_clock::now();
  std::optional<ProcessResult> r =
      RunProcess({"sh", "-c", "sleep 30 & echo $! > " + pidfile + "; wait"}, {.timeout_ms = 500});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, 128 + SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  const pid_t sleeper = std::stoi(ReadFile(pidfile));
  EXPECT_TRUE(EventuallyGone(sleeper)) << "the background sleep " << sleeper << " survived";
}

// What a program leaves running in its group when it exits is ended too (a compiler's helper
// must not write its outputs after the build was cleaned up).
TEST(RunProcess, LeftoversOfTheGroupEndWithTheProgram) {
  TempDir dir;
  const std::string pidfile = dir / "pid";
  std::optional<ProcessResult> r =
      RunProcess({"sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > " + pidfile + "; exit 0"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_FALSE(r->timed_out);
  EXPECT_TRUE(EventuallyGone(std::stoi(ReadFile(pidfile))));
}

}  // namespace
}  // namespace ptox
