// `ptox doctor`'s checks. Each looks at one component ptox uses and appends `ok`, `warn` (ptox
// works, something optional is missing or odd) or `fail` (something ptox needs is broken) lines,
// each warn and fail with the command that fixes it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ptox/manifest.h"

namespace ptox::cli::doctor {

enum class Level { kOk, kWarn, kFail };

struct Check {
  Level level;
  std::string what;
  std::string detail;
  std::string fix;  // for warn / fail
};
using Checks = std::vector<Check>;

// The compiler the CPU targets build kernels with, the kernel library it compiles against, and
// (when both are there and `cache_usable`) one kernel built, run and compared.
void Toolchain(const BuildManifest& manifest, bool cache_usable, Checks& out);
// The CPU's ISA extensions, and whether the OS saves their registers.
void Cpu(Checks& out);
// lit and FileCheck (the golden tests), clang++ (the fuzzers).
void TestTools(Checks& out);
// The compile cache: a folder this user owns and may write, its size, corrupt entries. Returns
// whether kernels can be compiled through it.
bool Cache(Checks& out);
// The Python package (importable, built from the same source as this CLI) and the default model
// (present and intact), through the Python that `ptox generate` runs.
void Python(const BuildManifest& manifest, Checks& out);
// MPI, the Arm cross toolchain and QEMU, the CUDA toolkit and a GPU.
void OptionalTools(Checks& out);
// Cores this process may use (affinity, cgroup CPU quota) against the threads runs start.
void Cores(Checks& out);

// The CPUs a cgroup CPU quota allows (quota / period), or nullopt when none applies. Reads the
// cgroup paths from `self_cgroup` (the text of /proc/self/cgroup) and the limits under
// `cgroup_root` (/sys/fs/cgroup): cpu.max in cgroup v2, cpu.cfs_quota_us and cpu.cfs_period_us in
// v1, at this process's cgroup and each one above it (the least wins).
std::optional<double> CgroupCpuLimit(const std::string& self_cgroup,
                                     const std::string& cgroup_root);

}  // namespace ptox::cli::doctor
