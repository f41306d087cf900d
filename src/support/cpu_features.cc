// CPUID / XGETBV queries behind ptox::Detect() (x86 only; other architectures report x86=false),
// and getauxval / prctl behind ptox::DetectArm() (AArch64 only).
#include "ptox/cpu_features.h"

#include <cstring>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define PTOX_HAVE_CPUID 1
#endif

namespace ptox {

bool CpuFeatures::OsEnabled(CpuState state) const {
  switch (state) {
    case CpuState::kXmm: return x86;
    case CpuState::kYmm: return os_ymm;
    case CpuState::kZmm: return os_zmm;
  }
  return false;
}

const std::vector<CpuFeatureInfo>& AllCpuFeatures() {
  static const std::vector<CpuFeatureInfo> kAll = {
#define PTOX_X(member, name, state) {name, &CpuFeatures::member, CpuState::state},
      PTOX_CPU_FEATURES(PTOX_X)
#undef PTOX_X
  };
  return kAll;
}

#ifdef PTOX_HAVE_CPUID
namespace {

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

// CPUID(leaf, subleaf); all zero when the leaf is beyond the CPU's maximum.
Regs CpuId(unsigned leaf, unsigned subleaf) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d)) return Regs{};
  return r;
}

bool Bit(unsigned reg, int bit) { return (reg >> bit) & 1u; }

uint64_t XGetBv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

std::string Brand() {
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000004u) return "";
  char text[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    Regs r = CpuId(0x80000002u + i, 0);
    unsigned words[4] = {r.a, r.b, r.c, r.d};
    std::memcpy(text + 16 * i, words, 16);
  }
  std::string s(text);
  size_t first = s.find_first_not_of(' ');
  size_t last = s.find_last_not_of(' ');
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

}  // namespace

CpuFeatures Detect() {
  CpuFeatures f;
  f.x86 = true;
  f.brand = Brand();
  Regs l1 = CpuId(1, 0);
  f.sse42 = Bit(l1.c, 20);
  f.fma = Bit(l1.c, 12);
  bool osxsave = Bit(l1.c, 27);
  bool avx = Bit(l1.c, 28);
  if (osxsave) f.xcr0 = XGetBv0();
  f.os_ymm = osxsave && avx && (f.xcr0 & 0x6) == 0x6;
  f.os_zmm = f.os_ymm && (f.xcr0 & 0xE0) == 0xE0;
  Regs l7 = CpuId(7, 0);
  f.avx2 = Bit(l7.b, 5);
  f.avx512f = Bit(l7.b, 16);
  f.avx512dq = Bit(l7.b, 17);
  f.avx512bw = Bit(l7.b, 30);
  f.avx512vl = Bit(l7.b, 31);
  f.avx512_vnni = Bit(l7.c, 11);
  f.avx512_fp16 = Bit(l7.d, 23);
  // Leaf 7 subleaf 1 exists only when subleaf 0 reports it in EAX.
  if (l7.a >= 1) f.avx512_bf16 = Bit(CpuId(7, 1).a, 5);
  return f;
}
#else
CpuFeatures Detect() { return CpuFeatures{}; }
#endif

#if defined(__aarch64__)
ArmFeatures DetectArm() {
  ArmFeatures f;
  f.aarch64 = true;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.asimd = hw & HWCAP_ASIMD;
  f.sve = hw & HWCAP_SVE;
  f.dotprod = hw & HWCAP_ASIMDDP;
  f.sve2 = hw2 & HWCAP2_SVE2;
  f.bf16 = hw2 & HWCAP2_BF16;
  f.i8mm = hw2 & HWCAP2_I8MM;
  if (f.sve) {
    const int vl = prctl(PR_SVE_GET_VL);  // bytes in the low 16 bits, flags above
    if (vl > 0) f.sve_bits = (vl & PR_SVE_VL_LEN_MASK) * 8;
  }
  return f;
}
#else
ArmFeatures DetectArm() { return ArmFeatures{}; }
#endif

}  // namespace ptox
