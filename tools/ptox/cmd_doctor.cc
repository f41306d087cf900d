// `ptox doctor`: checks the host for what ptox needs (compilers, CUDA, CPU ISA, test tools, cache
// directory) and prints one `ok` / `warn` / `fail` line per check. Exit 0 unless a check fails.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "commands.h"
#include "ptox/ptox.h"
#include "ptox/cpu_features.h"
#include "ptox/subprocess.h"

namespace ptox::cli {
namespace {

enum class Level { kOk, kWarn, kFail };

struct Check {
  Level level;
  std::string what;
  std::string detail;
  std::string fix;  // for warn / fail
};

void Print(const Check& c) {
  static constexpr const char* kTag[] = {"ok  ", "warn", "fail"};
  std::string line = fmt::format("{} {}: {}", kTag[static_cast<int>(c.level)], c.what, c.detail);
  if (c.level != Level::kOk && !c.fix.empty()) line += fmt::format(" (fix: {})", c.fix);
  std::printf("%s\n", line.c_str());
}

// The line of `exe --version` that names the version (the first, or the first with `marker`).
std::string VersionLine(const std::string& exe, const std::string& marker = "") {
  std::optional<ProcessResult> r = RunProcess({exe, "--version"}, 10000);
  if (!r || r->exit_code != 0) return "(`--version` failed)";
  std::string text = r->out.empty() ? r->err : r->out;
  std::string first;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (first.empty()) first = line;
    if (!marker.empty() && line.find(marker) != std::string::npos) return line;
    start = end + 1;
  }
  return first;
}

void CheckCompilers(std::vector<Check>& out) {
  int found = 0;
  for (const char* cc : {"g++", "clang++"}) {
    std::optional<std::string> path = FindExecutable(cc);
    if (path) {
      ++found;
      out.push_back({Level::kOk, cc, fmt::format("{} ({})", VersionLine(*path), *path), ""});
    } else {
      out.push_back({Level::kWarn, cc, "not found on PATH",
                     std::string("apt-get install ") + (cc[0] == 'g' ? "g++" : "clang")});
    }
  }
  if (found == 0)
    out.push_back({Level::kFail, "c++ compiler",
                   "neither g++ nor clang++ is on PATH: the cpu "
                   "targets cannot compile kernels",
                   "apt-get install g++"});
  std::optional<std::string> nvcc = FindExecutable("nvcc", {"/usr/local/cuda/bin"});
  if (nvcc) {
    out.push_back(
        {Level::kOk, "nvcc", fmt::format("{} ({})", VersionLine(*nvcc, "release"), *nvcc), ""});
  } else {
    out.push_back({Level::kWarn, "nvcc", "not found on PATH or in /usr/local/cuda/bin",
                   "install the CUDA toolkit; needed only for the cuda target"});
  }
}

void CheckCpu(std::vector<Check>& out) {
  CpuFeatures cpu = Detect();
  if (!cpu.x86) {
    out.push_back({Level::kOk, "cpu",
                   "not x86: ISA checks for this architecture are not "
                   "implemented yet",
                   ""});
    return;
  }
  out.push_back({Level::kOk, "cpu",
                 fmt::format("{} (XCR0=0x{:x})", cpu.brand.empty() ? "x86" : cpu.brand, cpu.xcr0),
                 ""});
  for (const CpuFeatureInfo& f : AllCpuFeatures()) {
    std::string what = fmt::format("cpu {}", f.name);
    if (Usable(cpu, f)) {
      out.push_back({Level::kOk, what, "yes", ""});
    } else if (cpu.*f.member) {
      const char* state = f.state == CpuState::kZmm ? "opmask/ZMM" : "YMM";
      out.push_back({Level::kWarn, what,
                     fmt::format("the CPU has it, but the OS does not save {} state (XCR0=0x{:x})",
                                 state, cpu.xcr0),
                     "enable AVX/AVX-512 state in the kernel or hypervisor (e.g. drop "
                     "`noxsave`/`clearcpuid` boot options)"});
    } else {
      out.push_back({Level::kOk, what, "no (targets that need it are unavailable)", ""});
    }
  }
}

void CheckTestTools(std::vector<Check>& out) {
  const std::vector<std::string> llvm_dirs = {"/usr/lib/llvm-14/bin",
                                              "/usr/lib/llvm-14/build/utils/lit"};
  struct Tool {
    const char* what;
    std::vector<const char*> names;
  };
  for (const Tool& t : {Tool{"FileCheck", {"FileCheck", "FileCheck-14"}},
                        Tool{"lit", {"lit", "llvm-lit", "lit.py"}}}) {
    std::optional<std::string> path;
    for (const char* n : t.names)
      if (!path) path = FindExecutable(n, llvm_dirs);
    if (path) {
      out.push_back({Level::kOk, t.what, *path, ""});
    } else {
      out.push_back({Level::kWarn, t.what, "not found (golden tests are skipped)",
                     "apt-get install llvm-14-tools"});
    }
  }
}

// The cache directory exists (or can be created) and a file can be written in it.
void CheckCache(std::vector<Check>& out) {
  namespace fs = std::filesystem;
  const std::string dir = CacheDir();
  const std::string fix = "set PTOX_CACHE_DIR to a writable directory";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    out.push_back({Level::kFail, "cache dir", fmt::format("{}: {}", dir, ec.message()), fix});
    return;
  }
  std::string probe = dir + "/.doctor-XXXXXX";
  int fd = mkstemp(probe.data());
  if (fd < 0) {
    out.push_back({Level::kFail, "cache dir", fmt::format("{}: not writable", dir), fix});
    return;
  }
  close(fd);
  unlink(probe.c_str());
  out.push_back({Level::kOk, "cache dir", fmt::format("{} (writable)", dir), ""});
}

void CheckThreads(std::vector<Check>& out) {
  unsigned hw = std::thread::hardware_concurrency();
  cpu_set_t set;
  CPU_ZERO(&set);
  int usable = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  std::string detail = fmt::format("{} hardware threads", hw);
  if (usable > 0) detail += fmt::format(", {} usable by this process", usable);
  out.push_back({Level::kOk, "threads", detail, ""});
  out.push_back(
      {Level::kOk, "targets", fmt::format("{}", fmt::join(AvailableTargets(), ", ")), ""});
}

int RunDoctor() {
  std::vector<Check> checks;
  CheckCompilers(checks);
  CheckCpu(checks);
  CheckTestTools(checks);
  CheckCache(checks);
  CheckThreads(checks);
  bool failed = false;
  for (const Check& c : checks) {
    Print(c);
    failed = failed || c.level == Level::kFail;
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace

Handler RegisterDoctor(CLI::App& app) {
  app.add_subcommand("doctor", "Check compilers, CUDA, CPU ISA, test tools and the cache dir");
  return [] { return RunDoctor(); };
}

}  // namespace ptox::cli
