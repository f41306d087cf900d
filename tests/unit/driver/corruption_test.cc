// A damaged cache entry is detected by its checksum and rebuilt (never loaded), and processes or
// threads compiling the same kernel at once all succeed and leave exactly one valid entry.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "driver/cache.h"
#include "tests/unit/driver/driver_test_util.h"

namespace ptox::driver {
namespace {

using testing::DriverTest;
using testing::ExpectMatchesInterp;
using testing::MustParse;
using testing::Ptox;
using testing::ReadFile;
using testing::UniqueScale;
using testing::WriteFile;

enum class Damage { kTruncateSo, kFlipByteInSo, kDeleteSum, kGarbageSum, kOtherValidSo };

std::string DamageName(const ::testing::TestParamInfo<Damage>& info) {
  switch (info.param) {
    case Damage::kTruncateSo: return "TruncateSo";
    case Damage::kFlipByteInSo: return "FlipByteInSo";
    case Damage::kDeleteSum: return "DeleteSum";
    case Damage::kGarbageSum: return "GarbageSum";
    case Damage::kOtherValidSo: return "OtherValidSo";
  }
  return "?";
}

class CorruptEntry : public DriverTest, public ::testing::WithParamInterface<Damage> {};

// Builds the entry in this process, damages it, then runs in a fresh process (this process
// memoizes loaded executables): the run must rebuild and agree with the interpreter.
TEST_P(CorruptEntry, IsDetectedAndRebuilt) {
  std::string text = UniqueScale();
  Result<std::string> so =
      Compile(MustParse(text), {.target = "cpu-scalar", .emit = Emit::kBinary});
  ASSERT_TRUE(so.ok()) << so.status().message();
  std::string sum = so->substr(0, so->size() - 3) + ".sum";
  std::string good = ReadFile(*so);
  ASSERT_GT(good.size(), 1000u);
  switch (GetParam()) {
    case Damage::kTruncateSo: WriteFile(*so, good.substr(0, good.size() / 2)); break;
    case Damage::kFlipByteInSo: {
      std::string bad = good;
      bad[bad.size() / 3] ^= 0x5a;
      WriteFile(*so, bad);
      break;
    }
    case Damage::kDeleteSum: ASSERT_EQ(std::remove(sum.c_str()), 0); break;
    case Damage::kGarbageSum: WriteFile(sum, "\x01garbage, not a hash\xff"); break;
    case Damage::kOtherValidSo: {
      // A loadable shared object of another program (y = x * k + 0.5) under the old checksum.
      Result<std::string> other = Compile(MustParse(testing::ScaleProgram(-7.5, 0.5)),
                                          {.target = "cpu-scalar", .emit = Emit::kBinary});
      ASSERT_TRUE(other.ok()) << other.status().message();
      WriteFile(*so, ReadFile(*other));
      break;
    }
  }
  std::vector<std::string> files_before = CacheFiles();
  ProcessResult r = Ptox({"run", WriteProgram("p.pto", text), "--target=cpu-scalar", "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(sum), HashHex(ReadFile(*so))) << "the entry was rebuilt";
  EXPECT_NE(ReadFile(*so).size(), 0u);
  std::vector<std::string> files_after = CacheFiles();
  if (GetParam() == Damage::kDeleteSum) files_before.push_back(sum.substr(sum.rfind('/') + 1));
  std::sort(files_before.begin(), files_before.end());
  EXPECT_EQ(files_after, files_before) << "no temporary files are left behind";
}

INSTANTIATE_TEST_SUITE_P(Damages, CorruptEntry,
                         ::testing::Values(Damage::kTruncateSo, Damage::kFlipByteInSo,
                                           Damage::kDeleteSum, Damage::kGarbageSum,
                                           Damage::kOtherValidSo),
                         DamageName);

// N processes compile the same never-seen kernel into the same cache at once.
TEST_F(DriverTest, ConcurrentProcessesShareOneEntry) {
  constexpr int kProcs = 4;
  std::string file = WriteProgram("p.pto", UniqueScale());
  std::vector<ProcessResult> results(kProcs);
  const std::string target = testing::BestCpu();
  std::vector<std::thread> threads;
  for (int i = 0; i < kProcs; ++i)
    threads.emplace_back([&, i] {
      std::optional<ProcessResult> r =
          RunProcess({PTOX_CLI, "run", file, "--target=" + target, "--check"}, 120000);
      if (r) results[i] = *r;
    });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kProcs; ++i) {
    EXPECT_EQ(results[i].exit_code, 0) << i << ": " << results[i].err;
    EXPECT_EQ(results[i].out, results[0].out) << i;
  }
  EXPECT_NE(results[0].out.find("OK"), std::string::npos) << results[0].out;
  std::vector<std::string> files = CacheFiles();
  ASSERT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  EXPECT_EQ(ReadFile(CachePath(files[1])), HashHex(ReadFile(CachePath(files[0]))));
}

// Two threads of one process run the same new program at once: both get correct results and
// the cache holds one entry.
TEST_F(DriverTest, ConcurrentThreadsShareOneEntry) {
  Program prog = MustParse(UniqueScale());
  std::thread t1([&] { ExpectMatchesInterp(prog, testing::BestCpu()); });
  std::thread t2([&] { ExpectMatchesInterp(prog, testing::BestCpu()); });
  t1.join();
  t2.join();
  std::vector<std::string> files = CacheFiles();
  ASSERT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  EXPECT_EQ(ReadFile(CachePath(files[1])), HashHex(ReadFile(CachePath(files[0]))));
}

}  // namespace
}  // namespace ptox::driver
