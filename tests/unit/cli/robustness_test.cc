// The CLI in a hostile environment: thread limits (--threads, PTOX_NUM_THREADS, threads the host
// refuses), FIFO and directory inputs, and outputs that cannot all be written. Each gets a clear
// message and the right exit code; never an abort, a hang, or some outputs written and others
// not. PTOX_FAULT (include/ptox/fault.h) stands in for ulimits and full disks.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/unit/cli/test_util.h"
#include "tools/ptox/npy.h"

namespace ptox::cli {
namespace {

namespace fs = std::filesystem;

using ptox::testing::ScopedEnv;
using testing::Ptox;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

const std::string kDynExample = std::string(PTOX_EXAMPLES_DIR) + "/hello_dyn.pto";

// Two outputs, so that one can be written and the other not.
constexpr char kTwoOutputs[] = R"(
func @two(%a: in tensor<8x16xf32>, %b: out tensor<8x16xf32>, %c: out tensor<8x16xf32>) {
  incore {
    %t = tile.load %a[0, 0] : tile<8x16xf32>
    tile.store %t, %b[0, 0]
    %u = tile.add %t, 1.0
    tile.store %u, %c[0, 0]
  }
}
)";

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Threads, MoreThanTheMaximumIsInvalidInput) {
  for (const char* flag : {"--threads=100000", "--threads=1025"}) {
    ProcessResult r = Ptox({"run", kDynExample, "--dims", "N=64", "--target=cpu", flag});
    EXPECT_EQ(r.exit_code, 1) << flag << ": " << r.err;
    EXPECT_NE(r.err.find("1024"), std::string::npos) << r.err;
  }
  ProcessResult bench = Ptox({"bench", "--matmul", "8x8x8", "--threads", "1,5000", "--reps", "1"});
  EXPECT_EQ(bench.exit_code, 1) << bench.err;
  EXPECT_NE(bench.err.find("at most 1024"), std::string::npos) << bench.err;
}

// A malformed PTOX_NUM_THREADS is a warning, never the thread count atoi made of it (an abort:
// 99999999999 overflowed into a billion threads).
TEST(Threads, MalformedEnvironmentIsAWarning) {
  for (const char* value : {"99999999999", "-1", "4x", "0"}) {
    ScopedEnv env("PTOX_NUM_THREADS", value);
    ProcessResult r = Ptox({"run", kDynExample, "--dims", "N=64", "--target=cpu"});
    EXPECT_EQ(r.exit_code, 0) << value << ": " << r.err;
    EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find(std::string("ignoring PTOX_NUM_THREADS='") + value + "'"),
              std::string::npos)
        << r.err;
  }
}

// Threads the host refuses (as under a low `ulimit -u` or a container's pids limit) leave fewer
// workers and a warning; the run still succeeds and agrees with the interpreter. This used to
// abort (exit 134).
TEST(Threads, RefusedThreadsLeaveFewerWorkers) {
  for (const char* fault : {"thread:1+", "thread:3"}) {
    ScopedEnv env("PTOX_FAULT", fault);
    ProcessResult r =
        Ptox({"run", kDynExample, "--dims", "N=300", "--target=cpu", "--threads=8", "--check"});
    EXPECT_EQ(r.exit_code, 0) << fault << ": " << r.err;
    EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("cannot start worker thread"), std::string::npos) << r.err;
  }
  // ptox bench measures its FMA peak on threads of its own: on those it got.
  ScopedEnv env("PTOX_FAULT", "thread:1+");
  ProcessResult bench = Ptox({"bench", "--matmul", "16x16x16", "--threads", "4", "--reps", "1"});
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.out.find("OK"), std::string::npos) << bench.out;
}

// A FIFO is refused at once (open used to wait for a writer forever), as program or input.
TEST(Inputs, FifoIsRefusedNotWaitedFor) {
  TempDir dir;
  const std::string fifo = dir / "in.npy";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> commands = {
      {"run", kDynExample, "--inputs", fifo + "," + fifo},
      {"run", fifo},
      {"opt", fifo},
  };
  for (const std::vector<std::string>& args : commands) {
    std::vector<std::string> argv = {PTOX_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    std::optional<ProcessResult> r = RunProcess(argv, /*timeout_ms=*/20000);
    ASSERT_TRUE(r.has_value());
    EXPECT_FALSE(r->timed_out) << args[0] << " waited on the FIFO";
    EXPECT_EQ(r->exit_code, 1) << r->err;
    EXPECT_NE(r->err.find("not a regular file (a FIFO)"), std::string::npos) << r->err;
  }
}

// A directory given as the program was read as an empty module (`ptox opt DIR` exited 0).
TEST(Inputs, DirectoryIsNotAProgram) {
  TempDir dir;
  for (const char* sub : {"opt", "run", "compile"}) {
    ProcessResult r = Ptox({sub, dir.path()});
    EXPECT_EQ(r.exit_code, 1) << sub << ": " << r.err;
    EXPECT_NE(r.err.find("not a regular file (a directory)"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << sub;
  }
  ProcessResult npy = Ptox({"run", kDynExample, "--inputs", dir.path() + "," + dir.path()});
  EXPECT_EQ(npy.exit_code, 1) << npy.err;
  EXPECT_NE(npy.err.find("not a regular file (a directory)"), std::string::npos) << npy.err;
}

// When one output cannot be written (PTOX_FAULT=write:N fails the N-th file half-way with
// ENOSPC), no output of the run is left — neither the ones before it nor a truncated file — and
// files of an earlier run stay as they were. A full disk is a runtime error (4), not invalid
// input.
TEST(Outputs, AreAllOrNothing) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTwoOutputs);
  const std::string out = dir / "out";
  ProcessResult first = Ptox({"run", dir / "p.pto", "--outputs", out, "--seed", "1"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::vector<std::string> files = {"b.npy", "c.npy"};
  ASSERT_EQ(Names(out), files);
  const std::string b = ReadFile(out + "/b.npy"), c = ReadFile(out + "/c.npy");
  for (const char* fault : {"write:1", "write:2"}) {
    ScopedEnv env("PTOX_FAULT", fault);
    ProcessResult r = Ptox({"run", dir / "p.pto", "--outputs", out, "--seed", "2"});
    EXPECT_EQ(r.exit_code, 4) << fault << ": " << r.err;
    EXPECT_NE(r.err.find("runtime error: cannot write"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("No space left on device (no output was written)"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.out.find("OK"), std::string::npos) << r.out;
    EXPECT_EQ(Names(out), files) << fault << ": no temporary or partial file";
    EXPECT_EQ(ReadFile(out + "/b.npy"), b) << fault;
    EXPECT_EQ(ReadFile(out + "/c.npy"), c) << fault;
  }
  // Into a fresh folder: nothing at all, not even the folder.
  ScopedEnv env("PTOX_FAULT", "write:2");
  ProcessResult r = Ptox({"run", dir / "p.pto", "--outputs", dir / "fresh"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_FALSE(fs::exists(dir / "fresh"));
}

// An output whose name is taken by a folder is refused before anything is written.
TEST(Outputs, FolderInTheWayIsInvalidAndWritesNothing) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTwoOutputs);
  const std::string out = dir / "out";
  ASSERT_TRUE(fs::create_directories(out + "/c.npy"));
  ProcessResult r = Ptox({"run", dir / "p.pto", "--outputs", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("c.npy is a directory"), std::string::npos) << r.err;
  EXPECT_EQ(Names(out), std::vector<std::string>{"c.npy"});
}

TEST(Outputs, TraceOnAFullDiskIsARuntimeError) {
  TempDir dir;
  ScopedEnv env("PTOX_FAULT", "write:1");
  ProcessResult r = Ptox({"run", kDynExample, "--dims", "N=64", "--trace", dir / "t.json"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "t.json")) << "no truncated trace";
}

// y = log(x) on an 8x16 tile: NaN exactly where x < 0. Rows 4.. are left unwritten (the CLI
// fills outputs with NaN bytes, which are not the run's).
constexpr char kLog[] = R"(
func @lg(%x: in tensor<8x16xf32>, %y: out tensor<8x16xf32>) {
  incore {
    %t = tile.load %x[0, 0] : tile<4x16xf32>
    %u = tile.log %t
    tile.store %u, %y[0, 0]
  }
}
)";

// --check-nan fails a run that writes a NaN on every target, the interpreter included (it was
// silently ignored there), and only for NaNs the run wrote.
TEST(CheckNan, FailsOnEveryTargetForNaNsTheRunWrote) {
  TempDir dir;
  WriteFile(dir / "p.pto", kLog);
  for (const char* target : {"interp", "cpu"}) {
    ProcessResult nan = Ptox({"run", dir / "p.pto", "--target", target, "--check-nan"});
    EXPECT_EQ(nan.exit_code, 4) << target << ": " << nan.err;
    EXPECT_NE(nan.err.find("NaN written to %y (argument 1) at [0, "), std::string::npos)
        << target << ": " << nan.err;
    ProcessResult plain = Ptox({"run", dir / "p.pto", "--target", target});
    EXPECT_EQ(plain.exit_code, 0) << target << ": " << plain.err;
  }
  // Positive inputs: no NaN is written; the unwritten, NaN-filled rows do not count.
  std::string in = dir / "x.npy";
  Result<NpyArray> x = NpyArray::Allocate(DType::kF32, {8, 16});
  ASSERT_TRUE(x.ok());
  std::vector<float> ones(128, 2.0f);
  std::memcpy(x->data(), ones.data(), x->nbytes());
  ASSERT_TRUE(WriteNpy(in, *x).ok());
  for (const char* target : {"interp", "cpu"}) {
    ProcessResult r =
        Ptox({"run", dir / "p.pto", "--target", target, "--check-nan", "--inputs", in});
    EXPECT_EQ(r.exit_code, 0) << target << ": " << r.err;
    EXPECT_NE(r.out.find("nan=64"), std::string::npos) << target << ": " << r.out;
  }
}

}  // namespace
}  // namespace ptox::cli
