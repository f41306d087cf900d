// Helpers for the driver tests: a per-test compile cache (PTOX_CACHE_DIR in a fresh temp dir),
// never-seen-before programs, and the ptox CLI as a subprocess.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "driver/cache.h"
#include "ptox/ptox.h"
#include "ptox/subprocess.h"
#include "tests/common/files.h"

namespace ptox::driver::testing {

namespace fs = std::filesystem;

using ptox::testing::Ptox;
using ptox::testing::ReadFile;
using ptox::testing::ScopedEnv;
using ptox::testing::TempDir;
using ptox::testing::WriteFile;

// The sorted file names in `dir` (empty when it does not exist).
inline std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// Expects the cache entry whose .so is at `so` to be valid: its .sum record names the entry's key
// and the .so's hash (the record's format is in src/driver/cache.cc).
inline void ExpectValidEntry(const std::string& so) {
  ASSERT_EQ(fs::path(so).extension(), ".so") << so;
  const std::string base = so.substr(0, so.size() - 3);
  const std::string key = fs::path(base).filename().string();
  const std::string record = ReadFile(base + ".sum");
  EXPECT_EQ(record.rfind("ptox-cache-entry 2\nkey " + key + "\nidentity ", 0), 0u) << record;
  EXPECT_NE(record.find("\nso " + HashHex(ReadFile(so)) + "\n"), std::string::npos) << record;
}

// y = x * k + c over one 8x16 f32 tile. The in-process executable memo is keyed by the generated
// source, so every test uses its own constants: UniqueScale() never returns the same text twice.
inline std::string ScaleProgram(double k, double c = 0.25) {
  std::ostringstream s;
  s << "func @scale(%x: in tensor<8x16xf32>, %y: out tensor<8x16xf32>) {\n"
    << "  incore {\n"
    << "    %t = tile.load %x[0, 0] : tile<8x16xf32>\n"
    << "    %u = tile.mul %t, " << k << "\n"
    << "    %v = tile.add %u, " << c << "\n"
    << "    tile.store %v, %y[0, 0]\n"
    << "  }\n"
    << "}\n";
  return s.str();
}
inline std::string UniqueScale() {
  static std::atomic<int> n{0};
  return ScaleProgram(1.5 + n++);
}

// The best CPU target of this host ("cpu" resolves to it), e.g. cpu-avx512.
inline std::string BestCpu() { return AvailableTargets().front(); }

// The program in `text`, parsed and verified (fails the test otherwise).
inline Program MustParse(const std::string& text) {
  Result<Program> p = Program::Parse(text);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : Program();
}

// The program in the file at `path`, as `ptox run <path>` reads it (fails the test otherwise). A
// program compiled in this process that a CLI run must find in the cache comes from the same
// file: positions in the generated code name the file, so they are part of the cache key.
inline Program MustLoad(const std::string& path) {
  Result<Program> p = Program::FromFile(path);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : Program();
}

// Runs the one-input, one-output program on `target` and on the interpreter over the same
// input; expects both to succeed with bit-identical outputs (the test programs are elementwise).
inline void ExpectMatchesInterp(const Program& prog, const std::string& target) {
  std::vector<float> x(8 * 16), y(8 * 16, -1.0f), ref(8 * 16, -2.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 20.0f;
  auto args = [&](std::vector<float>& out) {
    return std::vector<Arg>{Tensor::Contiguous(x.data(), DType::kF32, {8, 16}),
                            Tensor::Contiguous(out.data(), DType::kF32, {8, 16})};
  };
  Status s = Run(prog, args(y), {.target = target});
  ASSERT_TRUE(s.ok()) << target << ": " << s.message();
  Status r = Run(prog, args(ref), {.target = "interp"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(y, ref) << target;
}


// Fixture: every test gets its own empty compile cache in a fresh temp dir. Its programs build
// without precompiled preludes (PTOX_PCH=0; the binaries are the same): each test's fresh cache
// would otherwise build the tile library's prelude again, more compiler time than the test's own
// programs take. prelude_test.cc turns them on.
class DriverTest : public ::testing::Test {
 protected:
  DriverTest()
      : cache_dir_(tmp_ / "cache"), env_("PTOX_CACHE_DIR", cache_dir_), pch_env_("PTOX_PCH", "0") {}

  // Writes `text` to <tmp>/<name> and returns the path.
  std::string WriteProgram(const std::string& name, const std::string& text) {
    std::string path = tmp_ / name;
    WriteFile(path, text);
    return path;
  }
  std::vector<std::string> CacheFiles() const { return ListDir(cache_dir_); }
  std::string CachePath(const std::string& name) const { return cache_dir_ + "/" + name; }

  TempDir tmp_;
  std::string cache_dir_;
  ScopedEnv env_;
  ScopedEnv pch_env_;
};

}  // namespace ptox::driver::testing
