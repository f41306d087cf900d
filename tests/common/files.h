// Test helpers shared by the test binaries: temporary directories, whole-file reads / writes,
// scoped environment variables, and running the ptox CLI (binaries that define PTOX_CLI).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include "ptox/subprocess.h"

namespace ptox::testing {

// A fresh directory under $TMPDIR, removed with its contents at destruction (even when a test
// made parts of it read-only).
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ptox_test_XXXXXX").string();
    EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sets (or, with nullopt, unsets) an environment variable for the scope; restores it after.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) setenv(name_.c_str(), value->c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_) setenv(name_.c_str(), old_->c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

#ifdef PTOX_CLI
// Runs `ptox args...`; fails the test when the binary cannot be started or times out.
inline ProcessResult Ptox(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {PTOX_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  std::optional<ProcessResult> r = RunProcess(argv, 120000);
  EXPECT_TRUE(r.has_value()) << "cannot start " << PTOX_CLI;
  if (!r) return ProcessResult{};
  EXPECT_FALSE(r->timed_out);
  return *r;
}
#endif

}  // namespace ptox::testing
