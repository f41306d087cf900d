// Helpers shared by the CLI tests: a per-test temporary directory, whole-file I/O, and running the
// ptox binary (PTOX_CLI) as a subprocess.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ptox::cli::testing {

// A fresh directory under $TMPDIR, removed with its contents at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ptox_cli_XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
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

// The lines of `text`, without their '\n'.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace ptox::cli::testing
