// The FMA peak of this host: register-blocked FMA loops (AVX-512, AVX2, scalar) and a measurement
// on N threads at once — the compute ceiling that `ptox bench` and bench/ report rates against.
#pragma once

#include <cstdint>
#include <string_view>

namespace ptox {

// Independent FMA chains per loop iteration: enough to cover FMA latency x throughput (4 cycles x
// 2 pipes on Intel, 4 x 2 x 2 on Zen 4 / Zen 5 with 512-bit FMAs split in halves) with room.
inline constexpr int kFmaChains = 24;

// One FMA loop: run(iters) executes `iters` iterations of kFmaChains independent FMA chains,
// each `lanes` f32 wide, i.e. 2 * lanes * kFmaChains * iters flops per call. Its result only
// keeps the compiler from dropping the work.
struct FmaKernel {
  const char* isa;  // "avx512", "avx2" or "scalar"
  int lanes;
  float (*run)(int64_t iters);
};

// The widest loop this host runs: AVX-512 where the CPU has avx512f and the OS saves ZMM state,
// else AVX2 + FMA where the OS saves YMM state, else scalar.
FmaKernel BestFmaKernel();

// The loop of one ISA ("avx512", "avx2" or "scalar") where this host runs it, else isa = nullptr:
// the ceiling of code built for that ISA (a cpu-avx2 kernel on an AVX-512 host).
FmaKernel FmaKernelFor(std::string_view isa);

// The bf16 dot-product loop (vdpbf16ps: 16 lanes x 2 products and adds per instruction, counted
// as lanes = 32) where the host has AVX512_BF16, the ceiling of bf16 matmuls; else isa = nullptr.
FmaKernel Bf16DotKernel();

// Iterations per thread for one run of `k` of about 0.1 s (20M for the vector loops).
int64_t FmaIterations(const FmaKernel& k);

// Runs k.run(iters) on `threads` threads at once (the calling thread is one of them; fewer when
// the host refuses some) and returns the flops done.
double RunFmaOnThreads(const FmaKernel& k, int threads, int64_t iters);

// The best of 3 runs of k on `threads` threads at once (FmaIterations each), in GFLOP/s.
// `threads` < 1 counts as 1.
double MeasurePeakGflops(const FmaKernel& k, int threads);

}  // namespace ptox
