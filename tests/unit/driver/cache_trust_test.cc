// Whose compile cache is used: a folder that someone else can write (group / world-writable, or
// another user's) is refused, since whoever writes it runs code in this process; and what the
// cache sweeps: files of builds whose process died, never those of a build still running.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/unit/driver/driver_test_util.h"

namespace ptox::driver {
namespace {

using testing::DriverTest;
using testing::MustParse;
using testing::Ptox;
using testing::UniqueScale;

// Compiles a fresh program through the cache (kBinary); returns the status.
Status CompileFresh() {
  return Compile(MustParse(UniqueScale()), {.target = "cpu-scalar", .emit = Emit::kBinary})
      .status();
}

TEST_F(DriverTest, CacheWritableByOthersIsRefused) {
  ASSERT_TRUE(CompileFresh().ok());  // creates the folder (0700)
  const std::vector<std::string> files = CacheFiles();
  std::string file = WriteProgram("p.pto", UniqueScale());
  for (mode_t mode : {0777, 0770, 0722, 01777}) {
    ASSERT_EQ(chmod(cache_dir_.c_str(), mode), 0);
    Status s = CompileFresh();
    EXPECT_EQ(s.code(), StatusCode::kRuntime) << std::oct << mode << ": " << s.message();
    EXPECT_NE(s.message().find("refusing the compile cache " + cache_dir_ +
                               ": it is writable by group or others"),
              std::string::npos)
        << s.message();
    ProcessResult r = Ptox({"run", file, "--target=cpu-scalar"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("chmod go-w " + cache_dir_), std::string::npos) << r.err;
    EXPECT_EQ(CacheFiles(), files) << "nothing was added or loaded";
  }
  ASSERT_EQ(chmod(cache_dir_.c_str(), 0755), 0);  // others may read: fine
  EXPECT_TRUE(CompileFresh().ok());
}

// Another user's folder (not root's) is refused even when it is not writable by others: its
// owner could put any code in it. Needs root, to give the folder away.
TEST_F(DriverTest, AnotherUsersCacheIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown the cache folder";
  ASSERT_TRUE(CompileFresh().ok());
  ASSERT_EQ(chown(cache_dir_.c_str(), 65534, 65534), 0);
  Status s = CompileFresh();
  EXPECT_EQ(s.code(), StatusCode::kRuntime) << s.message();
  EXPECT_NE(s.message().find("it belongs to uid 65534, not to this user (uid 0) or root"),
            std::string::npos)
      << s.message();
  Result<CacheInfo> info = GetCacheInfo();
  EXPECT_EQ(info.status().code(), StatusCode::kRuntime);
  ASSERT_EQ(chown(cache_dir_.c_str(), 0, 0), 0);
}

// An entry file that is not this user's or root's is not loaded: it is rebuilt.
TEST_F(DriverTest, EntryOwnedBySomeoneElseIsRebuilt) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown an entry";
  const std::string file = WriteProgram("p.pto", UniqueScale());
  Result<std::string> so =
      Compile(testing::MustLoad(file), {.target = "cpu-scalar", .emit = Emit::kBinary});
  ASSERT_TRUE(so.ok()) << so.status().message();
  ASSERT_EQ(chown(so->c_str(), 65534, 65534), 0);
  ProcessResult r = Ptox({"run", file, "--target=cpu-scalar", "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(stat(so->c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "rebuilt by this user";
  testing::ExpectValidEntry(*so);
}

// Sets the modification time of `path` to `hours` ago.
void Age(const std::string& path, int hours) {
  auto then = std::chrono::system_clock::now() - std::chrono::hours(hours);
  timespec times[2];
  times[0].tv_sec = times[1].tv_sec = std::chrono::system_clock::to_time_t(then);
  times[0].tv_nsec = times[1].tv_nsec = 0;
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

// The first build of a process sweeps what dead builds left: all files of a build whose lock is
// free, and lock-less leftovers (kept sources) older than a day. A build whose lock is held (it
// is running, here in this test) and recent kept sources stay; `ptox cache clear` removes the
// kept sources but not the running build either.
TEST_F(DriverTest, DeadBuildsAreSweptRunningOnesKept) {
  ASSERT_TRUE(CompileFresh().ok());
  const std::vector<std::string> entry = CacheFiles();
  const std::string k = cache_dir_ + "/00112233445566778899aabbccddeeff";
  auto touch = [](const std::string& p) { testing::WriteFile(p, "x"); };
  for (const char* f : {".lock.tmp.11.22", ".so.tmp.11.22", ".so.tmp.11.22.cc", ".sum.tmp.11.22"})
    touch(k + f);                 // dead: its lock is free
  touch(k + ".so.tmp.33.44.cc");  // kept source, two days old
  Age(k + ".so.tmp.33.44.cc", 48);
  touch(k + ".so.tmp.55.66.cc");  // kept source, recent
  touch(k + ".lock.tmp.77.88");   // running: the lock is held
  touch(k + ".so.tmp.77.88");
  int held = open((k + ".lock.tmp.77.88").c_str(), O_RDWR);
  ASSERT_GE(held, 0);
  ASSERT_EQ(flock(held, LOCK_EX), 0);

  ProcessResult r = Ptox({"compile", WriteProgram("p.pto", UniqueScale()), "--target=cpu-scalar",
                          "--emit=bin", "-o", tmp_ / "out.so"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> left;
  for (const std::string& f : CacheFiles())
    if (f.find(".tmp.") != std::string::npos) left.push_back(f);
  const std::string stem = "00112233445566778899aabbccddeeff";
  EXPECT_EQ(left, (std::vector<std::string>{stem + ".lock.tmp.77.88", stem + ".so.tmp.55.66.cc",
                                            stem + ".so.tmp.77.88"}));
  EXPECT_EQ(CacheFiles().size(), entry.size() + 2 + left.size()) << "two new entry files";

  ProcessResult clear = Ptox({"cache", "clear"});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_EQ(CacheFiles(),
            (std::vector<std::string>{stem + ".lock.tmp.77.88", stem + ".so.tmp.77.88"}));
  close(held);
}

}  // namespace
}  // namespace ptox::driver
