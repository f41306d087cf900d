// The persistent compile cache: hits and misses across processes, what the key depends on, the
// cache folder's creation, and `ptox cache info|clear`.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "driver/cache.h"
#include "ptox/manifest.h"
#include "targets/target.h"
#include "tests/unit/driver/driver_test_util.h"

namespace ptox::driver {
namespace {

using testing::DriverTest;
using testing::ExpectMatchesInterp;
using testing::MustParse;
using testing::Ptox;
using testing::ReadFile;
using testing::ScopedEnv;
using testing::TempDir;
using testing::UniqueScale;

// The cache path of `text` compiled for `target` (a build on a miss).
std::string BinaryPath(const std::string& text, const std::string& target) {
  Result<std::string> path =
      Compile(MustParse(text), {.target = target, .emit = Emit::kBinary});
  EXPECT_TRUE(path.ok()) << path.status().message();
  return path.ok() ? *path : std::string();
}

// The entry keys (file stems of the .so files) in `files`.
std::vector<std::string> Keys(const std::vector<std::string>& files) {
  std::vector<std::string> keys;
  for (const std::string& f : files)
    if (f.size() > 3 && f.substr(f.size() - 3) == ".so") keys.push_back(f.substr(0, f.size() - 3));
  return keys;
}

int64_t MtimeNs(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

TEST_F(DriverTest, FirstRunCreatesOneEntryAndAnotherProcessReusesIt) {
  // From the file the CLI runs: the file's name is in the generated messages, so in the key.
  const std::string file = WriteProgram("p.pto", UniqueScale());
  ExpectMatchesInterp(testing::MustLoad(file), testing::BestCpu());
  std::vector<std::string> files = CacheFiles();
  ASSERT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  std::vector<std::string> keys = Keys(files);
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(files[1], keys[0] + ".sum");
  std::string so = CachePath(keys[0] + ".so"), sum = CachePath(keys[0] + ".sum");
  testing::ExpectValidEntry(so);
  int64_t so_mtime = MtimeNs(so), sum_mtime = MtimeNs(sum);

  ProcessResult r = Ptox({"run", file, "--target=" + testing::BestCpu(), "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
  EXPECT_EQ(CacheFiles(), files);
  EXPECT_EQ(MtimeNs(so), so_mtime);
  EXPECT_EQ(MtimeNs(sum), sum_mtime);

  Result<CacheInfo> info = GetCacheInfo();
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->dir, cache_dir_);
  EXPECT_EQ(info->entries, 1);
  EXPECT_EQ(info->bytes, static_cast<int64_t>(ReadFile(so).size() + ReadFile(sum).size()));
}

TEST_F(DriverTest, CacheCommandsAndClearCache) {
  BinaryPath(UniqueScale(), testing::BestCpu());
  ProcessResult info = Ptox({"cache", "info"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("dir: " + cache_dir_ + "\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("entries: 1\n"), std::string::npos) << info.out;

  ProcessResult clear = Ptox({"cache", "clear"});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_EQ(clear.out, "removed 2 files\n");
  EXPECT_TRUE(CacheFiles().empty());
  Result<CacheInfo> after = GetCacheInfo();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->entries, 0);
  EXPECT_EQ(after->bytes, 0);

  BinaryPath(UniqueScale(), "cpu-scalar");
  Result<int64_t> removed = ClearCache();
  ASSERT_TRUE(removed.ok()) << removed.status().message();
  EXPECT_EQ(*removed, 2);
  EXPECT_TRUE(CacheFiles().empty());
}

// The identity the build manifest reports per target (`ptox version --verbose`) is the one the
// cache records for that target's entries, and `cache info` counts intact entries as such.
TEST_F(DriverTest, ManifestNamesTheIdentityEntriesAreKeyedOn) {
  const std::string target = testing::BestCpu();
  const std::string so = BinaryPath(UniqueScale(), target);
  std::string identity;
  for (const TargetManifest& t : GetBuildManifest().targets)
    if (t.name == target) identity = t.identity;
  ASSERT_EQ(identity.size(), 32u) << target;
  const std::string record = ReadFile(so.substr(0, so.size() - 3) + ".sum");
  EXPECT_NE(record.find("\nidentity " + identity + "\n"), std::string::npos) << record;
  Result<CacheInfo> info = GetCacheInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->corrupt, 0);
  testing::WriteFile(so, ReadFile(so) + "appended");
  EXPECT_EQ(GetCacheInfo()->corrupt, 1);
  EXPECT_NE(Ptox({"cache", "info"}).out.find("\ncorrupt: 1\n"), std::string::npos);
}

TEST_F(DriverTest, KeyChangesWithTheIr) {
  std::string a = BinaryPath(testing::ScaleProgram(3.0), "cpu-scalar");
  std::string b = BinaryPath(testing::ScaleProgram(3.0, 0.5), "cpu-scalar");
  EXPECT_NE(a, b);
  EXPECT_EQ(Keys(CacheFiles()).size(), 2u);
}

TEST_F(DriverTest, KeyChangesWithTheTarget) {
  if (testing::BestCpu() == "cpu-scalar") GTEST_SKIP() << "this host has one CPU target";
  std::string text = UniqueScale();
  std::string best = BinaryPath(text, testing::BestCpu()), scalar = BinaryPath(text, "cpu-scalar");
  EXPECT_NE(best, scalar);
  EXPECT_EQ(Keys(CacheFiles()).size(), 2u);
  EXPECT_EQ(BinaryPath(text, "cpu"), best) << "cpu is the best ISA of this host";
}

// The cache names an entry with its target's artifact extension: another extension is another
// entry, and info / clear count any target's entries (a stray file in the folder is none).
TEST_F(DriverTest, EntriesTakeTheTargetsArtifactExtension) {
  CompileCache cache;
  const std::string key = HashHex("an artifact"), identity = HashHex("a device toolchain");
  CompileCache::Built built =
      cache.Insert(key, identity, "cubin", [&](const std::string& tmp, const std::string&) {
        testing::WriteFile(tmp, "device code\n" + targets::KeyStamp(key));
      });
  EXPECT_FALSE(built.temporary);
  EXPECT_EQ(built.path, CachePath(key + ".cubin"));
  EXPECT_EQ(cache.Lookup(key, identity, "cubin"), built.path);
  EXPECT_EQ(cache.Lookup(key, identity, "so"), std::nullopt) << "a .cubin is no .so";
  testing::WriteFile(CachePath("notes.txt"), "kept");
  EXPECT_EQ(cache.Stats().entries, 1);
  EXPECT_EQ(cache.Clear(), 2);
  EXPECT_EQ(CacheFiles(), std::vector<std::string>{"notes.txt"});
}

// Comments and spacing that leave every op where it was produce the same entry. (Positions are
// part of the generated error messages, so moving an op to another line, or the program to
// another file, is a different binary.)
TEST_F(DriverTest, KeyIgnoresCommentsAndSpacing) {
  std::string text = UniqueScale();
  std::string noisy = text;
  noisy.insert(noisy.find(") {\n") + 3, "   // the entry   ");
  noisy.insert(noisy.find("%y[0, 0]") + 8, "\t\t  ");
  noisy += "\n\n// trailing comment\n   \n";
  std::string a = BinaryPath(text, testing::BestCpu());
  EXPECT_EQ(BinaryPath(noisy, testing::BestCpu()), a);
  EXPECT_EQ(Keys(CacheFiles()).size(), 1u);
}

// A different compiler binary (a wrapper script around g++, or clang++) is a different key.
TEST_F(DriverTest, KeyChangesWithTheCompiler) {
  std::string wrapper = tmp_ / "wrapped-g++";
  testing::WriteFile(wrapper, "#!/bin/sh\nexec g++ \"$@\"\n");
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  std::string file = WriteProgram("p.pto", UniqueScale());
  std::vector<std::string> compilers = {"g++", wrapper};
  if (FindExecutable("clang++")) compilers.push_back("clang++");
  for (size_t i = 0; i < compilers.size(); ++i) {
    ScopedEnv cxx("PTOX_CXX", compilers[i]);
    ProcessResult r = Ptox({"run", file, "--target=cpu-scalar", "--check"});
    ASSERT_EQ(r.exit_code, 0) << compilers[i] << ": " << r.err;
    EXPECT_EQ(Keys(CacheFiles()).size(), i + 1) << compilers[i];
  }
}

TEST(CacheDir, NestedMissingDirIsCreatedPrivate) {
  TempDir tmp;
  std::string dir = tmp / "a/b/ptox-cache";
  ScopedEnv env("PTOX_CACHE_DIR", dir);
  Result<CacheInfo> info = GetCacheInfo();
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->dir, dir);
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// A cache folder that cannot exist (under a regular file, or a regular file itself) is a clear
// runtime error naming the folder, before anything is compiled; the CLI exits 4.
TEST(CacheDir, UnusableDirIsAClearError) {
  TempDir tmp;
  std::string file = tmp / "plain-file";
  testing::WriteFile(file, "not a folder\n");
  std::string prog_path = tmp / "p.pto";
  std::string text = UniqueScale();
  testing::WriteFile(prog_path, text);
  for (const std::string& dir : {file + "/cache", file}) {
    ScopedEnv env("PTOX_CACHE_DIR", dir);
    Result<std::string> bin = Compile(MustParse(text), {.emit = Emit::kBinary});
    ASSERT_FALSE(bin.ok()) << dir;
    EXPECT_EQ(bin.status().code(), StatusCode::kRuntime) << bin.status().message();
    EXPECT_NE(bin.status().message().find("cannot create the compile cache " + dir),
              std::string::npos)
        << bin.status().message();
    Result<CacheInfo> info = GetCacheInfo();
    EXPECT_EQ(info.status().code(), StatusCode::kRuntime) << dir;
    ProcessResult r = Ptox({"run", prog_path, "--target=cpu"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("compile cache"), std::string::npos) << r.err;
  }
  EXPECT_EQ(testing::ReadFile(file), "not a folder\n");
  EXPECT_EQ(testing::ListDir(tmp.path()).size(), 2u) << "nothing else was written";
}

}  // namespace
}  // namespace ptox::driver
