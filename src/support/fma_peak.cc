// FMA loops per ISA (compiled for their ISA with target attributes, picked at run time with
// ptox::Detect()) and the multi-threaded peak measurement over them.
#include "ptox/fma_peak.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <thread>
#include <vector>

#include "ptox/fault.h"
#include "ptox/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PTOX_FMA_X86 1
#endif

// The loops are optimized even in Debug builds, so that a Debug `ptox bench` measures the same
// ceiling as a Release one (at -O0 every accumulator would live in memory). Clang has no
// per-function optimization level; there the build's own level applies.
#if defined(__GNUC__) && !defined(__clang__)
#define PTOX_FMA_OPT __attribute__((noinline, optimize("O2")))
#else
#define PTOX_FMA_OPT __attribute__((noinline))
#endif

namespace ptox {
namespace {

#if PTOX_FMA_X86
// The sum of all lanes of the kFmaChains accumulators.
__attribute__((target("avx512f"))) PTOX_FMA_OPT float Total512(const __m512* acc) {
  __m512 s = acc[0];
  for (int i = 1; i < kFmaChains; ++i) s = _mm512_add_ps(s, acc[i]);
  // Not _mm512_reduce_add_ps: GCC 12 warns falsely inside it (-Wuninitialized).
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  float total = 0;
  for (float x : out) total += x;
  return total;
}

__attribute__((target("avx512f"))) PTOX_FMA_OPT float FmaLoopAvx512(int64_t iters) {
  __m512 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  return Total512(acc);
}

__attribute__((target("avx512f,avx512bf16"))) PTOX_FMA_OPT float DotLoopBf16(int64_t iters) {
  __m512 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // (1.0, 1.0) pairs
  const __m512bh b = (__m512bh)_mm512_set1_epi32(0x33d633d6);  // (1e-7, 1e-7) pairs
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  return Total512(acc);
}

__attribute__((target("avx2,fma"))) PTOX_FMA_OPT float FmaLoopAvx2(int64_t iters) {
  __m256 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kFmaChains; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  float total = 0;
  for (float x : out) total += x;
  return total;
}
#endif

// Any host: a fused multiply-add where the target has a fast one, else a multiply and an add
// (two flops either way).
PTOX_FMA_OPT float FmaLoopScalar(int64_t iters) {
  float acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = 0.001f * static_cast<float>(i);
  const float a = 0.9999999f, b = 1e-7f;
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kFmaChains; ++i) {
#if defined(__FP_FAST_FMAF)
      acc[i] = __builtin_fmaf(acc[i], a, b);
#else
      acc[i] = acc[i] * a + b;
#endif
    }
  }
  float total = 0;
  for (float x : acc) total += x;
  return total;
}

std::atomic<float> g_sink{0};  // keeps the loops' results alive

}  // namespace

FmaKernel BestFmaKernel() {
  for (const char* isa : {"avx512", "avx2"})
    if (FmaKernel k = FmaKernelFor(isa); k.isa != nullptr) return k;
  return FmaKernelFor("scalar");
}

FmaKernel FmaKernelFor(std::string_view isa) {
  const FmaKernel scalar{"scalar", 1, &FmaLoopScalar};
  if (isa == "scalar") return scalar;
#if PTOX_FMA_X86
  static const CpuFeatures f = Detect();
  if (isa == "avx512" && f.avx512f && f.os_zmm) return {"avx512", 16, &FmaLoopAvx512};
  if (isa == "avx2" && f.avx2 && f.fma && f.os_ymm) return {"avx2", 8, &FmaLoopAvx2};
#endif
  return {nullptr, 0, nullptr};
}

FmaKernel Bf16DotKernel() {
#if PTOX_FMA_X86
  static const CpuFeatures f = Detect();
  if (f.avx512_bf16 && f.os_zmm) return {"avx512bf16", 32, &DotLoopBf16};
#endif
  return {nullptr, 0, nullptr};
}

int64_t FmaIterations(const FmaKernel& k) {
  // A vector loop issues kFmaChains FMA instructions per iteration whatever its width (about
  // 2 per cycle): 20M iterations take ~0.1 s. Scalar code may issue a multiply and an add.
  return k.lanes > 1 ? 20'000'000 : 10'000'000;
}

double RunFmaOnThreads(const FmaKernel& k, int threads, int64_t iters) {
  threads = std::max(threads, 1);
  auto body = [&] { g_sink.store(k.run(iters), std::memory_order_relaxed); };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < threads; ++t) {
      if (fault::ShouldFail(fault::Site::kThread))
        throw std::system_error(EAGAIN, std::generic_category(), "injected by PTOX_FAULT");
      pool.emplace_back(body);
    }
  } catch (const std::system_error&) {
    // The host refused a thread (RLIMIT_NPROC): the flops count only the threads that ran, as
    // the executor then also runs on fewer.
  }
  body();
  for (std::thread& t : pool) t.join();
  return 2.0 * k.lanes * kFmaChains * static_cast<double>(iters) * (pool.size() + 1);
}

double MeasurePeakGflops(const FmaKernel& k, int threads) {
  const int64_t iters = FmaIterations(k);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto start = std::chrono::steady_clock::now();
    double flops = RunFmaOnThreads(k, threads, iters);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, flops / s / 1e9);
  }
  return best;
}

}  // namespace ptox
