// A build the compiler rejects is remembered under its cache key: the next call (in this process
// or another) gets the same error without running the compiler, a failure leaves no temporary
// file in the cache, and `ptox cache clear` forgets it. A crash of the compiler is not remembered.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/unit/driver/driver_test_util.h"

namespace ptox::driver {
namespace {

using testing::DriverTest;
using testing::MustParse;
using testing::Ptox;
using testing::ReadFile;
using testing::ScopedEnv;
using testing::UniqueScale;

namespace fs = std::filesystem;

class RejectedBuildTest : public DriverTest {
 protected:
  // The cache's files whose names have ".tmp." (builds in progress or their leftovers).
  std::vector<std::string> TempFiles() const {
    std::vector<std::string> tmp;
    for (const std::string& f : CacheFiles())
      if (f.find(".tmp.") != std::string::npos) tmp.push_back(f);
    return tmp;
  }
  // A compiler that counts its runs in <tmp>/runs, then fails as a real one does on a bad
  // source (a diagnostic, exit status `status`).
  std::string CountingCompiler(int status) {
    const std::string cc = tmp_ / ("counting-cc-" + std::to_string(status));
    testing::WriteFile(cc, "#!/bin/sh\necho run >> " + (tmp_ / "runs") +
                               "\necho 'counting-cc: error: expected a semicolon' >&2\nexit " +
                               std::to_string(status) + "\n");
    EXPECT_EQ(chmod(cc.c_str(), 0755), 0);
    return cc;
  }
  int Runs() const {
    const std::string runs = ReadFile(tmp_ / "runs");
    return static_cast<int>(std::count(runs.begin(), runs.end(), '\n'));
  }
};

std::vector<Arg> ScaleArgs(std::vector<float>& x, std::vector<float>& y) {
  return {Tensor::Contiguous(x.data(), DType::kF32, {8, 16}),
          Tensor::Contiguous(y.data(), DType::kF32, {8, 16})};
}

// In one process: the tile library is broken for the first call and repaired before the second,
// which leaves the cache key as it was. The second call failing with the first one's error is the
// evidence that the compiler did not run again (it would have succeeded).
TEST_F(RejectedBuildTest, SecondCallInAProcessGetsTheSameErrorWithoutACompile) {
  const fs::path root = tmp_ / "root";
  fs::create_directory(root);
  fs::copy(fs::path(PTOX_EXAMPLES_DIR) / ".." / "kernels", root / "kernels",
           fs::copy_options::recursive);
  const std::string tile = (root / "kernels" / "cpu" / "tile.h").string();
  const std::string good = ReadFile(tile);
  testing::WriteFile(tile, "#error this tile library is broken on purpose\n" + good);
  ScopedEnv kernels("PTOX_KERNELS_DIR", root.string());
  Program prog = MustParse(UniqueScale());
  std::vector<float> x(128, 1.0f), y(128, 0.0f);

  Status first = ptox::Run(prog, ScaleArgs(x, y), {.target = "cpu-scalar"});
  ASSERT_EQ(first.code(), StatusCode::kToolchain) << first.message();
  EXPECT_NE(first.message().find("broken on purpose"), std::string::npos) << first.message();
  EXPECT_EQ(TempFiles(), std::vector<std::string>{}) << "a failed build leaves no temporary file";

  testing::WriteFile(tile, good);
  Status second = ptox::Run(prog, ScaleArgs(x, y), {.target = "cpu-scalar"});
  EXPECT_EQ(second.code(), first.code());
  EXPECT_EQ(second.message(), first.message()) << "remembered, not compiled again";
  Status other = ptox::Run(MustParse(prog.ToText()), ScaleArgs(x, y), {.target = "cpu-scalar"});
  EXPECT_EQ(other.message(), first.message()) << "another Program of the same source too";
  EXPECT_EQ(TempFiles(), std::vector<std::string>{});
  EXPECT_EQ(y, std::vector<float>(128, 0.0f));

  // Clearing the cache forgets the failure: the repaired library compiles.
  ASSERT_TRUE(ClearCache().ok());
  Status third = ptox::Run(prog, ScaleArgs(x, y), {.target = "cpu-scalar"});
  EXPECT_TRUE(third.ok()) << third.message();
}

// Across processes: the second CLI run fails from the cache's record (the compiler ran once), a
// failure leaves only that record and the source its reproducer names, and `ptox cache clear`
// makes the next run compile again.
TEST_F(RejectedBuildTest, AnotherProcessGetsTheErrorFromTheCache) {
  ScopedEnv cc("PTOX_CXX", CountingCompiler(1));
  const std::string file = WriteProgram("p.pto", UniqueScale());
  ProcessResult r1 = Ptox({"run", file, "--target=cpu-scalar"});
  EXPECT_EQ(r1.exit_code, 3) << r1.err;
  EXPECT_NE(r1.err.find("counting-cc: error: expected a semicolon"), std::string::npos) << r1.err;
  EXPECT_EQ(Runs(), 1);
  const std::vector<std::string> files = CacheFiles();
  ASSERT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  const std::string key = files[0].substr(0, files[0].find('.'));
  EXPECT_EQ(files, (std::vector<std::string>{key + ".failed", key + ".failed.cc"}));
  EXPECT_NE(r1.err.find("(the generated source is kept at " + CachePath(key + ".failed.cc") + ")"),
            std::string::npos)
      << r1.err;

  ProcessResult r2 = Ptox({"run", file, "--target=cpu-scalar"});
  EXPECT_EQ(r2.exit_code, 3) << r2.err;
  EXPECT_EQ(Runs(), 1) << "the second process did not run the compiler";
  EXPECT_NE(r2.err.find("counting-cc: error: expected a semicolon"), std::string::npos) << r2.err;
  EXPECT_NE(r2.err.find("`ptox cache clear` builds it again"), std::string::npos) << r2.err;
  EXPECT_EQ(CacheFiles(), files);

  ProcessResult clear = Ptox({"cache", "clear"});
  EXPECT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_EQ(CacheFiles(), std::vector<std::string>{});
  ProcessResult r3 = Ptox({"run", file, "--target=cpu-scalar"});
  EXPECT_EQ(r3.exit_code, 3) << r3.err;
  EXPECT_EQ(Runs(), 2) << "cleared: the compiler ran again";
}

// A compiler that crashed (status 4, an internal compiler error) or ran out of memory may succeed
// next time: every run compiles, and still leaves no temporary file.
TEST_F(RejectedBuildTest, ACrashOrAnOutOfMemoryIsNotRemembered) {
  const std::string oom = tmp_ / "oom-cc";
  testing::WriteFile(oom, "#!/bin/sh\necho run >> " + (tmp_ / "runs") +
                              "\necho 'g++: fatal error: Killed signal terminated program "
                              "cc1plus' >&2\nexit 1\n");
  ASSERT_EQ(chmod(oom.c_str(), 0755), 0);
  const std::string file = WriteProgram("p.pto", UniqueScale());
  int runs = 0;
  for (const std::string& compiler : {CountingCompiler(4), oom}) {
    ScopedEnv cc("PTOX_CXX", compiler);
    for (int i = 0; i < 2; ++i) {
      ProcessResult r = Ptox({"run", file, "--target=cpu-scalar"});
      EXPECT_EQ(r.exit_code, 3) << r.err;
      EXPECT_EQ(Runs(), ++runs) << compiler << ": compiled every time";
      EXPECT_EQ(TempFiles(), std::vector<std::string>{});
      for (const std::string& f : CacheFiles())
        EXPECT_EQ(f.substr(f.size() - 10), ".failed.cc") << "the kept source only: " << f;
    }
  }
}

}  // namespace
}  // namespace ptox::driver
