// Precompiled preludes (the tile-library includes of generated code, compiled once per compiler,
// flags and library text into the cache's prelude folder): programs that include the same parts
// share one; the binary is the same with or without it; a damaged, foreign or stale one is never
// used for a program: it is rebuilt, or the program compiles without it, never an error.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "driver/cache.h"
#include "ptox/subprocess.h"
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
using testing::UniqueScale;

namespace fs = std::filesystem;

class PreludeTest : public DriverTest {
 protected:
  std::string PreludeDir() const { return cache_dir_ + "/" + kPreludeFolder; }
  // The built preludes (their .gch files), sorted.
  std::vector<std::string> Preludes() const {
    std::vector<std::string> out;
    for (const std::string& f : testing::ListDir(PreludeDir()))
      if (f.size() > 6 && f.substr(f.size() - 6) == ".h.gch") out.push_back(PreludeDir() + "/" + f);
    return out;
  }
  // Runs a program never compiled before in a new process (no memo of this one's) on cpu-scalar
  // and checks it against the interpreter; returns the process's stderr.
  std::string RunFreshProgram() {
    ProcessResult r =
        Ptox({"run", WriteProgram("p.pto", UniqueScale()), "--target=cpu-scalar", "--check"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.err;
  }

  ScopedEnv pch_{"PTOX_PCH", "1"};
};

// The bytes of `section` of the shared object at `so` (objcopy writes them beside it, in the test's
// cache folder; the file is removed).
std::string Section(const std::string& so, const std::string& section) {
  const std::string out = so + section + ".bin";
  std::optional<ProcessResult> r = RunProcess(
      {"objcopy", "-O", "binary", "--only-section=" + section, so, out}, {.timeout_ms = 60000});
  EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->err : "objcopy did not start");
  const std::string bytes = fs::exists(out) ? ReadFile(out) : "";
  fs::remove(out);
  EXPECT_FALSE(bytes.empty()) << so << " " << section;
  return bytes;
}

// Expects the prelude at `gch` to be a valid entry: its record names its key and its hash.
void ExpectValidPrelude(const std::string& gch) {
  const std::string base = gch.substr(0, gch.size() - std::string(".h.gch").size());
  const std::string key = fs::path(base).filename();
  const std::string record = ReadFile(base + ".sum");
  EXPECT_EQ(record.rfind("ptox-cache-entry 2\nkey " + key + "\nidentity ", 0), 0u) << record;
  EXPECT_NE(record.find("\nso " + HashHex(ReadFile(gch)) + "\n"), std::string::npos) << record;
  EXPECT_NE(ReadFile(gch).find(targets::KeyStamp(key)), std::string::npos) << "carries its key";
}

TEST_F(PreludeTest, ProgramsUsingTheSameLibraryPartsShareOnePrelude) {
  ExpectMatchesInterp(MustParse(UniqueScale()), "cpu-scalar");
  ASSERT_EQ(Preludes().size(), 1u);
  const std::string gch = Preludes()[0];
  struct stat before {};
  ASSERT_EQ(stat(gch.c_str(), &before), 0);
  EXPECT_EQ(RunFreshProgram(), "");
  ExpectMatchesInterp(MustParse(UniqueScale()), "cpu-scalar");
  ASSERT_EQ(Preludes(), std::vector<std::string>{gch}) << "no second prelude";
  struct stat after {};
  ASSERT_EQ(stat(gch.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "the prelude was reused, not rebuilt";
  ExpectValidPrelude(gch);
}

// The prelude saves parsing only: the compiler makes the same bytes without it.
TEST_F(PreludeTest, BinaryIsTheSameWithoutThePrelude) {
  const std::string text = UniqueScale();
  Result<std::string> with =
      Compile(MustParse(text), {.target = "cpu-scalar", .emit = Emit::kBinary});
  ASSERT_TRUE(with.ok()) << with.status().message();
  ASSERT_EQ(Preludes().size(), 1u);
  ScopedEnv off("PTOX_PCH", "0");
  ScopedEnv other_cache("PTOX_CACHE_DIR", tmp_ / "cache-without");
  Result<std::string> without =
      Compile(MustParse(text), {.target = "cpu-scalar", .emit = Emit::kBinary});
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_FALSE(fs::exists(fs::path(tmp_ / "cache-without") / kPreludeFolder))
      << "PTOX_PCH=0 builds none";
  // The shared objects differ only in the name of the temporary source file in their symbol
  // table: what is loaded and run must be the same bytes.
  for (const char* section : {".text", ".rodata", ".data"}) {
    EXPECT_TRUE(Section(*without, section) == Section(*with, section)) << section;
  }
}

// A prelude folder that cannot be used (a file in its place) costs time only.
TEST_F(PreludeTest, UnusablePreludeFolderIsNotAnError) {
  fs::create_directories(cache_dir_);
  testing::WriteFile(PreludeDir(), "not a folder");
  EXPECT_EQ(RunFreshProgram(), "");
}

// A cache cleared while a process runs: its next program builds the prelude again, quietly (the
// process remembered the old one's path).
TEST_F(PreludeTest, CacheClearedInProcessBuildsThePreludeAgain) {
  ExpectMatchesInterp(MustParse(UniqueScale()), "cpu-scalar");
  ASSERT_EQ(Preludes().size(), 1u);
  ASSERT_TRUE(ClearCache().ok());
  EXPECT_TRUE(Preludes().empty());
  ::testing::internal::CaptureStderr();
  ExpectMatchesInterp(MustParse(UniqueScale()), "cpu-scalar");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "no warning";
  EXPECT_EQ(Preludes().size(), 1u);
}

enum class Damage { kTruncate, kFlipByte, kEmpty, kDeleteSum, kOtherPrelude };

std::string DamageName(const ::testing::TestParamInfo<Damage>& info) {
  switch (info.param) {
    case Damage::kTruncate: return "Truncate";
    case Damage::kFlipByte: return "FlipByte";
    case Damage::kEmpty: return "Empty";
    case Damage::kDeleteSum: return "DeleteSum";
    case Damage::kOtherPrelude: return "OtherPrelude";
  }
  return "?";
}

class DamagedPreludeTest : public PreludeTest, public ::testing::WithParamInterface<Damage> {};

// A damaged prelude fails the cache's checks (its record's hash, the key it carries): the next
// program rebuilds it and runs, with nothing on stderr.
TEST_P(DamagedPreludeTest, IsRebuiltWithoutAnError) {
  EXPECT_EQ(RunFreshProgram(), "");
  ASSERT_EQ(Preludes().size(), 1u);
  const std::string gch = Preludes()[0];
  const std::string sum = gch.substr(0, gch.size() - 6) + ".sum";
  std::string bytes = ReadFile(gch);
  switch (GetParam()) {
    case Damage::kTruncate: bytes.resize(bytes.size() / 2); break;
    case Damage::kFlipByte: bytes[bytes.size() / 2] ^= 0x40; break;
    case Damage::kEmpty: bytes.clear(); break;
    case Damage::kDeleteSum: ASSERT_TRUE(fs::remove(sum)); break;
    case Damage::kOtherPrelude: {
      // A valid prelude of other library parts (a program with a reduction), under this key.
      const std::string reduce =
          "func @rowsum(%x: in tensor<8x16xf32>, %y: out tensor<8x1xf32>) {\n"
          "  incore {\n"
          "    %t = tile.load %x[0, 0] : tile<8x16xf32>\n"
          "    %s = tile.row_sum %t\n"
          "    tile.store %s, %y[0, 0]\n"
          "  }\n"
          "}\n";
      ProcessResult r = Ptox({"run", WriteProgram("r.pto", reduce), "--target=cpu-scalar"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ASSERT_EQ(Preludes().size(), 2u);
      const std::string other = Preludes()[0] == gch ? Preludes()[1] : Preludes()[0];
      bytes = ReadFile(other);
      break;
    }
  }
  if (GetParam() != Damage::kDeleteSum) testing::WriteFile(gch, bytes);
  EXPECT_EQ(RunFreshProgram(), "") << "no warning, no error";
  ExpectValidPrelude(gch);  // rebuilt: the damaged file does not match its record
}

INSTANTIATE_TEST_SUITE_P(Damages, DamagedPreludeTest,
                         ::testing::Values(Damage::kTruncate, Damage::kFlipByte, Damage::kEmpty,
                                           Damage::kDeleteSum, Damage::kOtherPrelude),
                         DamageName);

// A prelude that passes the cache's checks but that the compiler will not use (made with other
// flags, as by another compiler at the same path): the program compiles without it and runs, with
// a warning that it could not be used.
TEST_F(PreludeTest, PreludeTheCompilerRejectsIsNotUsed) {
  EXPECT_EQ(RunFreshProgram(), "");
  ASSERT_EQ(Preludes().size(), 1u);
  const std::string gch = Preludes()[0];
  const std::string base = gch.substr(0, gch.size() - 6);
  const std::string key = fs::path(base).filename();
  // The same text and key as the real one, compiled with other flags.
  const std::string header = tmp_ / "foreign.h";
  testing::WriteFile(header, "#include \"kernels/cpu/core.h\"\n#define PTOX_PRELUDE_KEY \"" +
                                 targets::KeyStamp(key) + "\"\n");
  const char* kernels = std::getenv("PTOX_KERNELS_DIR");
  ASSERT_NE(kernels, nullptr);
  std::optional<ProcessResult> cc = RunProcess({"g++", "-std=c++20", "-O0", "-x", "c++-header",
                                                std::string("-I") + kernels, "-o", gch, header},
                                               {.timeout_ms = 120000});
  ASSERT_TRUE(cc && cc->exit_code == 0) << (cc ? cc->err : "g++ did not start");
  // A record that matches the forged file, as one written by the cache would.
  std::string record = ReadFile(base + ".sum");
  const size_t at = record.find("\nso ");
  ASSERT_NE(at, std::string::npos) << record;
  testing::WriteFile(base + ".sum", record.substr(0, at) + "\nso " + HashHex(ReadFile(gch)) + "\n");
  const std::string err = RunFreshProgram();
  EXPECT_NE(err.find("could not be used; the kernel was compiled without it"), std::string::npos)
      << err;
  EXPECT_EQ(err.find("error"), std::string::npos) << err;
}

// Another kernel library (a header edited) or another target's flags make another build
// identity, so another prelude: the old one is never used for them.
TEST_F(PreludeTest, EditedLibraryOrOtherFlagsGetTheirOwnPrelude) {
  EXPECT_EQ(RunFreshProgram(), "");
  ASSERT_EQ(Preludes().size(), 1u);
  const char* kernels = std::getenv("PTOX_KERNELS_DIR");
  ASSERT_NE(kernels, nullptr);
  const fs::path edited = tmp_ / "edited";
  fs::create_directories(edited);
  fs::copy(fs::path(kernels) / "kernels", edited / "kernels", fs::copy_options::recursive);
  const fs::path core = edited / "kernels" / "cpu" / "core.h";
  testing::WriteFile(core, ReadFile(core) + "\n// edited\n");
  {
    ScopedEnv env("PTOX_KERNELS_DIR", edited.string());
    EXPECT_EQ(RunFreshProgram(), "");
  }
  EXPECT_EQ(Preludes().size(), 2u);
  const std::string best = testing::BestCpu();
  if (best == "cpu-scalar") GTEST_SKIP() << "no second CPU target on this host";
  ProcessResult r =
      Ptox({"run", WriteProgram("p.pto", UniqueScale()), "--target=" + best, "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Preludes().size(), 3u);
  for (const std::string& gch : Preludes()) ExpectValidPrelude(gch);
}

}  // namespace
}  // namespace ptox::driver
