// The CPU targets: cpu-scalar, cpu-avx2, cpu-avx512, cpu-neon, cpu-sve (one ISA each) and their
// toolchain — the host C++ compiler found at run time, spawned directly (no shell), producing a
// shared object that is loaded with dlopen. Which ISAs the host runs comes from CPUID + XGETBV on
// x86-64 and from the kernel's hardware capabilities on AArch64 (ptox/cpu_features.h); tests hide
// ISAs with PTOX_CPU_DISABLE.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "kernels/abi.h"
#include "ptox/cpu_features.h"
#include "ptox/files.h"
#include "ptox/subprocess.h"
#include "support/hash.h"
#include "support/warn.h"
#include "targets/cpu/codegen.h"
#include "targets/cpu/cpu_target.h"
#include "targets/host/launch.h"
#include "targets/cpu/policy.h"

namespace ptox::targets::cpu {
namespace {

namespace fs = std::filesystem;

// The folder that holds kernels/ (generated code includes "kernels/cpu/tile.h").
std::string KernelsRoot() {
  if (const char* env = std::getenv("PTOX_KERNELS_DIR"); env && *env) return env;
  return PTOX_SOURCE_DIR;
}

// The compiler that built ptox when it was cross-compiled (aarch64-linux-gnu-g++ for a build run
// under qemu-aarch64: the host's g++ would make x86-64 code); empty for a native build.
#ifndef PTOX_CROSS_CXX
#define PTOX_CROSS_CXX ""
#endif

// The compiler: $PTOX_CXX, else the cross compiler ptox was built with, else the first of g++,
// c++, clang++ on PATH (empty when none is). Resolved once per process.
const std::string& CompilerPath() {
  static const std::string path = [] {
    if (const char* env = std::getenv("PTOX_CXX"); env && *env) {
      return FindExecutable(env).value_or(std::string());
    }
    for (const char* name : {PTOX_CROSS_CXX, "g++", "c++", "clang++"})
      if (auto p = *name ? FindExecutable(name) : std::nullopt) return *p;
    return std::string();
  }();
  return path;
}

// Why no compiler can be used: for Build's kToolchain error.
std::string NoCompilerMessage() {
  std::string msg = "toolchain error: no C++ compiler found";
  if (const char* env = std::getenv("PTOX_CXX"); env && *env) {
    return msg + ": PTOX_CXX='" + env +
           "' is not an executable (unset it to use g++, c++ or clang++ from PATH)";
  }
  return msg + " (install g++ or set PTOX_CXX)";
}

// Test hook: PTOX_CPU_DISABLE=avx512,avx2 (a comma-separated list of ISA names: scalar, avx2,
// avx512, neon, sve) makes Available() answer as on a host without those ISAs. Read on every call.
bool DisabledByEnv(std::string_view isa) {
  const char* env = std::getenv("PTOX_CPU_DISABLE");
  std::string_view list = env ? env : "";
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (list.substr(0, comma) == isa) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Identifies the compiler binary without running it: resolved path, size and modification time.
std::string CompilerIdentity() {
  const std::string& path = CompilerPath();
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  struct stat st {};
  if (ec || stat(real.c_str(), &st) != 0) return "missing:" + path;
  return real.string() + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
}

// The kernel library's content (every header under kernels/): part of every cache key, so an
// edited tile library never reuses stale binaries.
const std::string& KernelLibraryText() {
  static const std::string text = [] {
    std::vector<fs::path> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(KernelsRoot() + "/kernels", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file()) files.push_back(it->path());
    std::sort(files.begin(), files.end());
    std::string all;
    for (const fs::path& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      all += f.filename().string() + "\n" + ss.str();
    }
    return all;
  }();
  return text;
}

// The environment the compiler runs with. Variables such as CPATH, GCC_EXEC_PREFIX,
// COMPILER_PATH, LIBRARY_PATH, SOURCE_DATE_EPOCH or CCC_OVERRIDE_OPTIONS change the binary a
// compiler produces, so none is passed on: the compiler sees only PATH and LD_LIBRARY_PATH (it
// finds as / ld and its own libraries through them; both are part of the build identity) and
// TMPDIR (where its temporary files go, which changes nothing), with messages in the C locale.
const std::vector<std::string>& CompilerEnvironment() {
  static const std::vector<std::string> env = [] {
    std::vector<std::string> out = {"LC_ALL=C"};
    for (const char* name : {"PATH", "LD_LIBRARY_PATH", "TMPDIR"})
      if (const char* v = std::getenv(name)) out.push_back(std::string(name) + "=" + v);
    return out;
  }();
  return env;
}

// Moves a failed build's source from `from` to `to` (one name per cache key: a failure that
// happens again replaces it instead of adding a file); returns where it is now.
std::string KeepSource(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  return ec ? from : to;
}

// Whether a failed compile says that the compiler rejected the source, so the same source fails
// again (BuildRejected): exit status 1, the status GCC and Clang give errors in a source or its
// flags. An internal compiler error (4), a signal (128 + n) or a timeout may not recur, nor does
// status 1 when the compiler says it ran out of something (a child killed by the OOM killer, a
// full disk under the assembler).
bool Rejected(const ProcessResult& r) {
  if (r.timed_out || r.exit_code != 1) return false;
  for (const char* transient : {"signal terminated program", "No space left on device",
                                "Cannot allocate memory", "memory exhausted", "out of memory",
                                "Disk quota exceeded", "Resource temporarily unavailable"})
    if (r.err.find(transient) != std::string::npos) return false;
  return true;
}

// PTOX_COMPILE_TIMEOUT (seconds, 1 to 86400; default 300): how long one compile may take
// before its process group is killed.
int CompileTimeoutMs() {
  constexpr int kDefaultS = 300;
  const char* env = std::getenv("PTOX_COMPILE_TIMEOUT");
  if (env == nullptr || *env == '\0') return kDefaultS * 1000;
  char* end = nullptr;
  const long s = std::strtol(env, &end, 10);
  if (*end != '\0' || s < 1 || s > 86400) {
    Warn(std::string("ignoring PTOX_COMPILE_TIMEOUT='") + env +
         "': expected seconds in [1, 86400]; using " + std::to_string(kDefaultS));
    return kDefaultS * 1000;
  }
  return static_cast<int>(s * 1000);
}

int64_t CacheSize(int name, int64_t fallback) {
  long v = sysconf(name);
  return v > 0 ? v : fallback;
}

// The L3 that one core's data can live in, from sysfs ("32768K"): glibc's sysconf may report a
// whole socket's L3s added up (384 MiB on a 32 MiB-per-CCD EPYC VM).
int64_t L3Bytes() {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i);
    std::ifstream level(dir + "/level"), size(dir + "/size");
    int l = 0;
    int64_t kib = 0;
    std::string unit;
    if (level >> l && l == 3 && size >> kib >> unit && kib > 0 && unit == "K") return kib << 10;
  }
  return CacheSize(_SC_LEVEL3_CACHE_SIZE, int64_t{32} << 20);
}

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(void* handle, EntryFn entry) : handle_(handle), entry_(entry) {}
  ~CpuExecutable() override { dlclose(handle_); }

  void Run(const std::vector<Arg>& args, const RunContext& ctx) const override {
    host::Launch(entry_, args, ctx);
  }

 private:
  void* handle_;
  EntryFn entry_;
};

std::string IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kNeon: return "neon";
    case Isa::kSve: return "sve";
  }
  return "?";
}

}  // namespace

CpuTarget::CpuTarget(Isa isa, int sve_bits)
    : isa_(isa),
      sve_bits_(sve_bits),
      name_("cpu-" + IsaName(isa) + (sve_bits > 0 ? std::to_string(sve_bits) : "")) {
  caps_.l2_bytes = CacheSize(_SC_LEVEL2_CACHE_SIZE, 1 << 20);
  // Tiles live in a per-worker heap arena (kernels/cpu/core.h Arena): the budget bounds that
  // arena, not a cache; tiling heuristics size tiles from l2_bytes.
  caps_.onchip_budget_bytes = int64_t{32} << 20;
  caps_.policy = &CpuPolicy::Get();
}

std::string_view CpuTarget::name() const { return name_; }

bool CpuTarget::Available(std::string* why) const {
  auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  // Only the ISA decides: a missing or broken compiler is a toolchain error when building
  // (kToolchain, exit 3), not a reason to report a different target.
  const std::string_view isa = name().substr(4);
  const bool disabled = DisabledByEnv(isa);
  const std::string note = disabled ? " (disabled by PTOX_CPU_DISABLE)" : "";
  if (isa_ == Isa::kScalar) return disabled ? fail("disabled by PTOX_CPU_DISABLE") : true;
  if (isa_ == Isa::kNeon || isa_ == Isa::kSve) {
    static const ArmFeatures arm = ::ptox::DetectArm();
    if (!arm.aarch64) return fail("the host is not AArch64");
    if (isa_ == Isa::kNeon && (disabled || !arm.asimd))
      return fail("the host lacks Advanced SIMD (NEON)" + note);
    if (isa_ == Isa::kSve && (disabled || !arm.sve)) return fail("the host lacks SVE" + note);
    if (sve_bits_ > 0 && arm.sve_bits != sve_bits_)
      return fail("the host's SVE vectors have " + std::to_string(arm.sve_bits) + " bits, not " +
                  std::to_string(sve_bits_));
    return true;
  }
  static const CpuFeatures f = ::ptox::Detect();
  if (!f.x86) return fail("the host is not x86-64");
  if (isa_ == Isa::kAvx2 && (disabled || !(f.avx2 && f.fma && f.os_ymm)))
    return fail("the host lacks AVX2 + FMA (or the OS does not enable YMM state)" + note);
  if (isa_ == Isa::kAvx512 &&
      (disabled || !(f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.os_zmm)))
    return fail("the host lacks AVX-512 F/BW/DQ/VL (or the OS does not enable ZMM state)" + note);
  return true;
}

#if defined(__aarch64__)
namespace {
// The optional extensions of the host that the tile library uses, as -march suffixes: BFDOT for
// bf16 matmuls (kernels/cpu/matmul_bf16_arm.h), SDOT for quantized ones (kernels/cpu/qmatmul.h).
std::string ArmExtensions() {
  static const ArmFeatures f = ::ptox::DetectArm();
  return std::string(f.bf16 ? "+bf16" : "") + (f.dotprod ? "+dotprod" : "");
}
}  // namespace
#endif

std::vector<std::string> CpuTarget::Flags() const {
  // No contraction (FMA) and no reassociation: elementwise results must equal the interpreter's.
  // -fno-math-errno / -fno-trapping-math let the compiler if-convert the selects in
  // kernels/scalar.h, without which AVX2 loops over Exp stay scalar. They would also let it fold
  // invalid operations on constants to +NaN (the hardware makes -NaN): scalars reach tiles
  // through pc::Opaque, so nothing is folded (tests/conformance/constants_test.cc).
  std::vector<std::string> flags = {"-std=c++20", "-O3", "-fPIC", "-shared", "-ffp-contract=off",
                                    "-fno-math-errno", "-fno-trapping-math", "-fno-exceptions",
                                    "-fno-rtti", "-fvisibility=hidden", "-DNDEBUG",
                                    "-I" + KernelsRoot()};
  // The matmul's cache blocks come from the caches this target reports (kernels/cpu/matmul.h).
  flags.push_back("-DPTOX_CPU_L1_BYTES=" + std::to_string(CacheSize(_SC_LEVEL1_DCACHE_SIZE, 32 << 10)));
  flags.push_back("-DPTOX_CPU_L2_BYTES=" + std::to_string(caps_.l2_bytes));
  static const int64_t l3 = L3Bytes();  // where fused stores start to stream (kernels/cpu/memory.h)
  flags.push_back("-DPTOX_CPU_L3_BYTES=" + std::to_string(l3));
#if defined(__x86_64__)
  switch (isa_) {
    case Isa::kScalar:
      flags.insert(flags.end(),
                   {"-march=x86-64", "-fno-tree-vectorize", "-fno-tree-slp-vectorize"});
      break;
    case Isa::kAvx2:
      flags.insert(flags.end(), {"-march=x86-64-v3", "-mprefer-vector-width=256"});
      break;
    case Isa::kAvx512: {
      flags.insert(flags.end(), {"-march=x86-64-v4", "-mprefer-vector-width=512"});
      // bf16 dot products for bf16 matmuls (kernels/cpu/matmul_bf16.h) where the host has them.
      static const CpuFeatures f = ::ptox::Detect();
      if (f.avx512_bf16 && f.os_zmm) flags.push_back("-mavx512bf16");
      // Integer dot products for quantized matmuls (kernels/cpu/qmatmul.h).
      if (f.avx512_vnni && f.os_zmm) flags.push_back("-mavx512vnni");
      break;
    }
    case Isa::kNeon:
    case Isa::kSve: break;  // never available on x86-64
  }
#elif defined(__aarch64__)
  switch (isa_) {
    case Isa::kScalar:
      // Advanced SIMD is part of AArch64: the scalar build keeps the compiler, Highway (emulated
      // 128-bit vectors, plain C++) and the tile library (PTOX_CPU_SCALAR) from using it.
      flags.insert(flags.end(), {"-march=armv8-a", "-fno-tree-vectorize", "-fno-tree-slp-vectorize",
                                 "-DHWY_COMPILE_ONLY_EMU128", "-DPTOX_CPU_SCALAR"});
      break;
    // With the host's extensions, Armv8.2-A: GCC's bf16 and dot-product intrinsics want it, and
    // FEAT_BF16 / FEAT_DotProd appear no earlier.
    case Isa::kNeon:
      flags.push_back(ArmExtensions().empty() ? "-march=armv8-a"
                                              : "-march=armv8.2-a" + ArmExtensions());
      break;
    // Vector-length agnostic: one binary for every SVE length (Highway's HWY_SVE target); with
    // sve_bits, for that length only.
    case Isa::kSve:
      flags.push_back("-march=armv8.2-a+sve" + ArmExtensions());
      if (sve_bits_ > 0) flags.push_back("-msve-vector-bits=" + std::to_string(sve_bits_));
      break;
    case Isa::kAvx2:
    case Isa::kAvx512: break;  // never available on AArch64
  }
#endif
  return flags;
}

std::unique_ptr<ProgramState> CpuTarget::NewProgramState() const {
  return std::make_unique<host::HostState>();
}

std::string CpuTarget::Source(const ir::Func& func) const { return GenerateSource(func); }

std::string CpuTarget::BuildIdentity() const {
  std::string id = std::string(name()) + "\nabi " + std::to_string(abi::kAbiVersion) +
                   "\ncompiler " + CompilerIdentity() + "\nflags";
  for (const std::string& f : Flags()) id += " " + f;
  id += "\nenvironment";
  for (const std::string& e : CompilerEnvironment())
    if (e.rfind("TMPDIR=", 0) != 0) id += "\n  " + e;
  return id + "\n" + KernelLibraryText();
}

std::vector<std::pair<std::string, std::string>> CpuTarget::IdentityParts() const {
  std::string flags;
  for (const std::string& f : Flags()) flags += (flags.empty() ? "" : " ") + f;
  const std::string& cc = CompilerPath();
  return {{"compiler", cc.empty() ? "none found (install g++ or set PTOX_CXX)" : CompilerIdentity()},
          {"flags", flags},
          {"kernels", KernelsRoot() + "/kernels"},
          {"kernel library", HashHex(KernelLibraryText())},
          {"abi", std::to_string(abi::kAbiVersion)}};
}

namespace {

// How a compile failed: what happened ("failed with exit code 1"), the compiler's messages, and
// whether it rejected the source (the same source fails again: BuildRejected).
struct CompileFailure {
  std::string what, err;
  bool rejected = false;
};

// Runs the compiler command `argv`: nullopt when it succeeded, else how it failed. Throws kRuntime
// when no process could be started for lack of processes or memory (a resource, not the compiler).
std::optional<CompileFailure> RunCompiler(const std::vector<std::string>& argv) {
  const int timeout_ms = CompileTimeoutMs();
  std::optional<ProcessResult> r =
      RunProcess(argv, {.timeout_ms = timeout_ms, .env = CompilerEnvironment()});
  const int start_errno = r ? 0 : errno;
  if (r && r->exit_code == 0 && !r->timed_out) return std::nullopt;
  if (!r && (start_errno == EAGAIN || start_errno == ENOMEM)) {
    throw Error(StatusCode::kRuntime, std::string("runtime error: cannot start the C++ compiler ") +
                                          argv[0] + ": " + std::strerror(start_errno) +
                                          " (out of processes or memory)");
  }
  std::string what = !r ? std::string("could not be started: ") + std::strerror(start_errno)
                     : r->timed_out ? "timed out after " + std::to_string(timeout_ms / 1000) +
                                          " s (PTOX_COMPILE_TIMEOUT)"
                                    : "failed with exit code " + std::to_string(r->exit_code);
  return CompileFailure{std::move(what), r ? r->err : std::string(), r && Rejected(*r)};
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  return command;
}

// Writes `text` to `path` (a file of the compile cache); throws as a failed build.
void WriteSource(const std::string& path, const std::string& text) {
  if (WriteFile(path, {text})) return;
  const int e = errno;
  throw Error(IsResourceErrno(e) ? StatusCode::kRuntime : StatusCode::kToolchain,
              std::string(IsResourceErrno(e) ? "runtime" : "toolchain") + " error: cannot write " +
                  path + ": " + std::strerror(e));
}

// The path GCC's -include takes for the precompiled header at `gch_path` ("<name>.h.gch"): GCC
// reads the .gch in place of the header, which need not exist.
std::string IncludeOf(const std::string& gch_path) {
  constexpr std::string_view kGch = ".gch";
  PTOX_ICHECK(gch_path.size() > kGch.size() &&
              gch_path.compare(gch_path.size() - kGch.size(), kGch.size(), kGch) == 0)
      << "not a precompiled header: " << gch_path;
  return gch_path.substr(0, gch_path.size() - kGch.size());
}

}  // namespace

std::string CpuTarget::Prelude(const std::string& source) const {
  // GCC's precompiled headers: Clang has its own format and options (-include-pch), so for it
  // (the resolved compiler's name says clang) nothing is precompiled. Were a GCC named otherwise,
  // Build would find the header unusable and compile without it.
  std::error_code ec;
  const std::string real = fs::canonical(CompilerPath(), ec).filename().string();
  if (ec || real.find("clang") != std::string::npos) return "";
  return cpu::Prelude(source);
}

void CpuTarget::BuildPrelude(const std::string& prelude, const std::string& key,
                             const std::string& out_path) const {
  const std::string& cc = CompilerPath();
  if (cc.empty()) throw Error(StatusCode::kToolchain, NoCompilerMessage());
  // The key goes into the header as a macro, whose text GCC keeps in the .gch: the cache checks
  // it there as it checks a shared object's KeyStamp.
  const std::string header_path = out_path + ".h";
  WriteSource(header_path, prelude + "#define PTOX_PRELUDE_KEY \"" + KeyStamp(key) + "\"\n");
  // The program's own flags: GCC uses a precompiled header only where they agree with its own.
  std::vector<std::string> argv = {cc};
  for (const std::string& f : Flags()) argv.push_back(f);
  argv.insert(argv.end(), {"-x", "c++-header", "-o", out_path, header_path});
  // Nothing is kept on failure: the driver then compiles programs without a prelude.
  std::optional<CompileFailure> failed;
  try {
    failed = RunCompiler(argv);
  } catch (...) {
    std::remove(header_path.c_str());
    throw;
  }
  std::remove(header_path.c_str());
  if (!failed) return;
  std::remove(out_path.c_str());
  throw Error(StatusCode::kToolchain, "toolchain error: the C++ compiler " + failed->what +
                                          " building a precompiled tile-library prelude\n" +
                                          failed->err + "reproduce with: " + CommandLine(argv));
}

void CpuTarget::Build(const std::string& source, const std::string& key,
                      const std::string& out_path, const std::string& prelude_path,
                      const std::string& failure_stem) const {
  const std::string& cc = CompilerPath();
  if (cc.empty()) throw Error(StatusCode::kToolchain, NoCompilerMessage());
  std::string src_path = out_path + ".cc";
  // The key goes into the binary (KeyStamp): the cache checks it before and after loading.
  WriteSource(src_path, source +
                            "\n// The compile cache key of this binary.\nextern \"C\" "
                            "__attribute__((visibility(\"default\"), used)) const char " +
                            kKeySymbol + "[] = \"" + KeyStamp(key) + "\";\n");
  // The precompiled prelude comes first (-include); the source's own prelude then repeats its
  // macros and includes nothing more (every header has #pragma once).
  auto command = [&](bool with_prelude) {
    std::vector<std::string> argv = {cc};
    for (const std::string& f : Flags()) argv.push_back(f);
    if (with_prelude) argv.insert(argv.end(), {"-include", IncludeOf(prelude_path)});
    argv.insert(argv.end(), {"-o", out_path, src_path});
    return argv;
  };
  std::optional<CompileFailure> failed = RunCompiler(command(!prelude_path.empty()));
  if (failed && !prelude_path.empty()) {
    // Were the .gch unusable after all (GCC rejects one made by another compiler or with other
    // flags, and stops at a damaged one), the source builds as it would without it.
    failed = RunCompiler(command(false));
    if (!failed)
      Warn("the precompiled tile library " + prelude_path +
           " could not be used; the kernel was compiled without it");
  }
  if (!failed) {
    std::remove(src_path.c_str());
    return;
  }
  // The reproducer compiles the source where it is kept, into a file beside it, so that running
  // it leaves nothing in the cache that looks like a build in progress.
  std::vector<std::string> argv = command(false);
  const std::string kept = KeepSource(src_path, failure_stem + ".cc");
  argv[argv.size() - 2] = kept == src_path ? out_path : failure_stem + ".so";  // -o <this>
  argv.back() = kept;
  std::string message = "toolchain error: the C++ compiler " + failed->what + "\n" + failed->err +
                        "reproduce with: " + CommandLine(argv) +
                        "\n(the generated source is kept at " + kept + ")";
  if (failed->rejected) throw BuildRejected(std::move(message));
  throw Error(StatusCode::kToolchain, std::move(message));
}

std::shared_ptr<const Executable> CpuTarget::Load(const std::string& so_path,
                                                  const std::string& key) const {
  void* handle = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    throw Error(StatusCode::kToolchain,
                "toolchain error: cannot load " + so_path + ": " + (e ? e : "unknown error"));
  }
  const auto* stamp = static_cast<const char*>(dlsym(handle, kKeySymbol));
  if (stamp == nullptr || KeyStamp(key) != stamp) {
    dlclose(handle);
    throw Error(StatusCode::kRuntime, "runtime error: " + so_path +
                                          " is not the binary of cache key " + key +
                                          " (was it replaced while loading?)");
  }
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, abi::kEntrySymbol));
  if (entry == nullptr) {
    dlclose(handle);
    throw Error(StatusCode::kToolchain, "toolchain error: " + so_path + " has no " +
                                            abi::kEntrySymbol);
  }
  return std::make_shared<CpuExecutable>(handle, entry);
}

}  // namespace ptox::targets::cpu
