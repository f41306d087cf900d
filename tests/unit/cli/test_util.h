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
#include "tests/common/files.h"

namespace ptox::cli::testing {

using ptox::testing::ReadFile;
using ptox::testing::TempDir;
using ptox::testing::WriteFile;

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
