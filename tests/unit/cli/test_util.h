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

#include "ptox/subprocess.h"
#include "tests/common/files.h"

namespace ptox::cli::testing {

using ptox::testing::Ptox;
using ptox::testing::ReadFile;
using ptox::testing::TempDir;
using ptox::testing::WriteFile;


// The lines of `text`, without their '\n'.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace ptox::cli::testing
