// A damaged or foreign cache entry (truncated, corrupted, another program's binary even with its
// own record, a symlink, a folder, group-writable) is detected and rebuilt, never loaded; and
// processes or threads compiling the same kernel at once all succeed and leave one valid entry.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

namespace fs = std::filesystem;

enum class Damage {
  kTruncateSo,
  kFlipByteInSo,
  kDeleteSum,
  kGarbageSum,
  kOtherValidSo,
  kOtherEntryUnderKey,
  kForgedRecord,
  kSymlinkElsewhere,
  kSoIsADirectory,
  kGroupWritableSo,
};

std::string DamageName(const ::testing::TestParamInfo<Damage>& info) {
  switch (info.param) {
    case Damage::kTruncateSo: return "TruncateSo";
    case Damage::kFlipByteInSo: return "FlipByteInSo";
    case Damage::kDeleteSum: return "DeleteSum";
    case Damage::kGarbageSum: return "GarbageSum";
    case Damage::kOtherValidSo: return "OtherValidSo";
    case Damage::kOtherEntryUnderKey: return "OtherEntryUnderKey";
    case Damage::kForgedRecord: return "ForgedRecord";
    case Damage::kSymlinkElsewhere: return "SymlinkElsewhere";
    case Damage::kSoIsADirectory: return "SoIsADirectory";
    case Damage::kGroupWritableSo: return "GroupWritableSo";
  }
  return "?";
}

// The .so of another program (y = x * k + 0.5), a valid entry of its own key.
std::string OtherEntry() {
  Result<std::string> other = Compile(MustParse(testing::ScaleProgram(-7.5, 0.5)),
                                      {.target = "cpu-scalar", .emit = Emit::kBinary});
  EXPECT_TRUE(other.ok()) << other.status().message();
  return other.ok() ? *other : std::string();
}

std::string SumPath(const std::string& so) { return so.substr(0, so.size() - 3) + ".sum"; }

// Damages the entry at `so` (whose good content is `good`) as `damage` says.
void Apply(Damage damage, const std::string& so, const std::string& good) {
  const std::string sum = SumPath(so);
  switch (damage) {
    case Damage::kTruncateSo: WriteFile(so, good.substr(0, good.size() / 2)); break;
    case Damage::kFlipByteInSo: {
      std::string bad = good;
      bad[bad.size() / 3] ^= 0x5a;
      WriteFile(so, bad);
      break;
    }
    case Damage::kDeleteSum: ASSERT_EQ(std::remove(sum.c_str()), 0); break;
    case Damage::kGarbageSum: WriteFile(sum, "\x01garbage, not a hash\xff"); break;
    case Damage::kOtherValidSo: WriteFile(so, ReadFile(OtherEntry())); break;  // old record
    case Damage::kOtherEntryUnderKey: {  // both files of another entry, renamed to this key
      std::string other = OtherEntry();
      WriteFile(so, ReadFile(other));
      WriteFile(sum, ReadFile(SumPath(other)));
      break;
    }
    case Damage::kForgedRecord: {  // another binary with a record that claims this key
      std::string other = ReadFile(OtherEntry()), record = ReadFile(sum);
      size_t at = record.find("\nso ") + 4;
      WriteFile(so, other);
      WriteFile(sum, record.substr(0, at) + HashHex(other) + "\n");
      break;
    }
    case Damage::kSymlinkElsewhere: {  // the right bytes, but in a file outside the cache
      std::string elsewhere = (fs::path(so).parent_path().parent_path() / "elsewhere.so").string();
      WriteFile(elsewhere, good);
      ASSERT_EQ(std::remove(so.c_str()), 0);
      ASSERT_EQ(symlink(elsewhere.c_str(), so.c_str()), 0);
      break;
    }
    case Damage::kSoIsADirectory:
      ASSERT_EQ(std::remove(so.c_str()), 0);
      ASSERT_EQ(mkdir(so.c_str(), 0700), 0);
      WriteFile(so + "/inside", "a folder where the entry should be\n");
      break;
    case Damage::kGroupWritableSo: ASSERT_EQ(chmod(so.c_str(), 0666), 0); break;
  }
}

class CorruptEntry : public DriverTest, public ::testing::WithParamInterface<Damage> {};

// Builds the entry in this process, damages it, then runs in a fresh process (this process
// memoizes loaded executables): the run must rebuild and agree with the interpreter, and leave
// one valid entry and nothing else new.
TEST_P(CorruptEntry, IsDetectedAndRebuilt) {
  const std::string file = WriteProgram("p.pto", UniqueScale());
  Result<std::string> so =
      Compile(testing::MustLoad(file), {.target = "cpu-scalar", .emit = Emit::kBinary});
  ASSERT_TRUE(so.ok()) << so.status().message();
  std::string good = ReadFile(*so);
  ASSERT_GT(good.size(), 1000u);
  Apply(GetParam(), *so, good);
  std::vector<std::string> files_before = CacheFiles();
  ProcessResult r = Ptox({"run", file, "--target=cpu-scalar", "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
  struct stat st {};
  ASSERT_EQ(lstat(so->c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the entry is a file again";
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  testing::ExpectValidEntry(*so);  // rebuilt
  std::vector<std::string> files_after = CacheFiles();
  if (GetParam() == Damage::kDeleteSum) {
    files_before.push_back(fs::path(SumPath(*so)).filename());
    std::sort(files_before.begin(), files_before.end());
  }
  EXPECT_EQ(files_after, files_before) << "no temporary files are left behind";
}

INSTANTIATE_TEST_SUITE_P(Damages, CorruptEntry,
                         ::testing::Values(Damage::kTruncateSo, Damage::kFlipByteInSo,
                                           Damage::kDeleteSum, Damage::kGarbageSum,
                                           Damage::kOtherValidSo, Damage::kOtherEntryUnderKey,
                                           Damage::kForgedRecord, Damage::kSymlinkElsewhere,
                                           Damage::kSoIsADirectory, Damage::kGroupWritableSo),
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
  testing::ExpectValidEntry(CachePath(files[0]));
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
  testing::ExpectValidEntry(CachePath(files[0]));
}

}  // namespace
}  // namespace ptox::driver
