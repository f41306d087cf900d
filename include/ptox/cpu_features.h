// Host CPU ISA detection (never /proc/cpuinfo): on x86 with CPUID + XGETBV, which SIMD extensions
// the CPU reports and which of them the OS has enabled; on AArch64 with the kernel's hardware
// capabilities (getauxval) and the SVE vector length (prctl). Used by `ptox doctor` and the CPU
// backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptox {

// The register state an extension needs the OS to save on context switches (XCR0 bits).
enum class CpuState { kXmm, kYmm, kZmm };

// X(member, "name as Linux spells it", CpuState)
#define PTOX_CPU_FEATURES(X)          \
  X(sse42, "sse4.2", kXmm)            \
  X(avx2, "avx2", kYmm)               \
  X(fma, "fma", kYmm)                 \
  X(avx512f, "avx512f", kZmm)         \
  X(avx512bw, "avx512bw", kZmm)       \
  X(avx512dq, "avx512dq", kZmm)       \
  X(avx512vl, "avx512vl", kZmm)       \
  X(avx512_bf16, "avx512_bf16", kZmm) \
  X(avx512_fp16, "avx512_fp16", kZmm) \
  X(avx512_vnni, "avx512_vnni", kZmm)

struct CpuFeatures {
  bool x86 = false;     // false on other architectures: every feature below is false
  std::string brand;    // e.g. "Intel(R) Xeon(R) ..." (empty when the CPU does not say)
  uint64_t xcr0 = 0;    // XGETBV(0); 0 when the OS does not use XSAVE
  bool os_ymm = false;  // the OS saves YMM state (XCR0 bits 1, 2)
  bool os_zmm = false;  // the OS saves opmask + ZMM state (XCR0 bits 5, 6, 7) as well

  // What CPUID reports, whether or not the OS enabled the registers; see Usable().
#define PTOX_X(member, name, state) bool member = false;
  PTOX_CPU_FEATURES(PTOX_X)
#undef PTOX_X

  // True when the CPU reports the feature and the OS saves the state it needs.
  bool OsEnabled(CpuState state) const;
};

// One row of PTOX_CPU_FEATURES, for code that walks every feature (ptox doctor).
struct CpuFeatureInfo {
  const char* name;
  bool CpuFeatures::*member;
  CpuState state;
};
const std::vector<CpuFeatureInfo>& AllCpuFeatures();

// Whether code using `f` can run: the CPU has it and the OS enabled its register state.
inline bool Usable(const CpuFeatures& cpu, const CpuFeatureInfo& f) {
  return cpu.*f.member && cpu.OsEnabled(f.state);
}

// Queries the CPU (cheap; a few CPUID instructions).
CpuFeatures Detect();

// What an AArch64 host runs, as its kernel reports it (AT_HWCAP / AT_HWCAP2: the kernel enables a
// feature's state before it sets the bit, so there is no separate OS check as on x86).
struct ArmFeatures {
  bool aarch64 = false;  // false on other architectures: every feature below is false
  bool asimd = false;    // NEON (Advanced SIMD); every AArch64 Linux host has it
  bool sve = false;
  bool sve2 = false;
  bool bf16 = false;     // BFDOT / BFMMLA (FEAT_BF16)
  bool dotprod = false;  // SDOT / UDOT (FEAT_DotProd)
  bool i8mm = false;     // SMMLA / USDOT (FEAT_I8MM)
  int sve_bits = 0;      // this thread's SVE vector length in bits (PR_SVE_GET_VL); 0 without
                         // SVE
};
ArmFeatures DetectArm();

}  // namespace ptox
