// bf16 x bf16 matmul blocks on the ISAs' bf16 dot products (included by matmul.h): AVX512_BF16's
// vdpbf16ps (matmul_bf16_avx512.h) and Arm's BFDOT (matmul_bf16_arm.h) multiply pairs of bf16 of
// consecutive k exactly and add both products into an f32 lane: twice the work of an f32 FMA per
// instruction. Both read and write subnormals as zero whatever the FP control register says, so
// the packing of each block of A and of B returns a range check, and a pair of blocks takes the
// dot products only where DpExact says they compute what the f32 kernel would, within the
// documented bound (docs/ops.md); other blocks take the f32 kernel. The ISA's file defines Pair
// (bf16 of k in the low half, k + 1 in the high half), PackAPairs / PackBPairs (panels of pairs,
// returning the check), DpUsable / DpExact and MicroKernelDp.
#pragma once

#include <cstdint>

#if defined(PTOX_CPU_MATMUL_SIMD) && defined(__AVX512BF16__)
#include "kernels/cpu/matmul_bf16_avx512.h"
#elif defined(PTOX_CPU_MATMUL_SIMD) && defined(__aarch64__) && \
    defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)
#include "kernels/cpu/matmul_bf16_arm.h"
#endif

#ifdef PTOX_CPU_MATMUL_BF16
namespace ptox::cpu::mm {

inline void MacroKernelDp(int64_t kp, int64_t mc, int64_t nc, const Pair* ap, const Pair* bp,
                          float* c, int64_t ldc) {
  ForEachBlock(kp, mc, nc, ap, bp, c, ldc,
               [&](const Pair* a, const Pair* b, float* cb, int64_t ld, int nv) {
                 WithVectors(nv, [&](auto n) { MicroKernelDp<n>(kp, a, b, cb, ld); });
               });
}

// The packed path for bf16 A and B in memory (views), rows of B contiguous: as GemmPacked over
// pair blocks; a block pair that fails the range check is packed again as f32 and takes the f32
// kernel. Either way the k blocks are summed in order. k blocks of kKC elements (panels of half
// the L1) when many row panels reuse each B panel (128 x 2048 x 5632 with B kept: 5-8 % faster
// than twice as deep); few-row products, which add each block into C once or twice, take blocks
// twice as deep, as many bytes as an f32 panel (16 x 2048 x 5632 kept: 5 % faster).
inline void GemmPackedDp(Ctx& ctx, float* c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                         Src<DT::kBF16> a, Src<DT::kBF16> b) {
  const int64_t kKD = m <= 2 * kMR ? 2 * kKC : kKC;
  const int64_t nc_max = (std::min<int64_t>(kNC, n) + kNR - 1) / kNR * kNR;
  const int64_t mc_max = std::min<int64_t>(kMC, (m + kMR - 1) / kMR * kMR);
  auto* buf = reinterpret_cast<Pair*>(PackBuffer(2, kKC * nc_max));
  auto* apd = reinterpret_cast<Pair*>(PackBuffer(3, kKC * mc_max));
  for (int64_t jc = 0; jc < n; jc += kNC) {
    const int64_t nc = std::min<int64_t>(kNC, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKD) {
      const int64_t kc = std::min<int64_t>(kKD, k - pc);
      const Src<DT::kBF16> bk = b.Offset(pc, jc);
      const int64_t ncp = (nc + kNR - 1) / kNR * kNR;
      auto pack = [&](void* dst) { return PackBPairs(static_cast<Pair*>(dst), bk, kc, nc); };
      const Packed blk =
          PackedBlock(ctx, bk, kPairPanels, kc, nc, (kc + 1) / 2 * ncp * 4, buf, pack);
      if (blk.panels == nullptr) return;  // ctx failed
      const auto* bpd = static_cast<const Pair*>(blk.panels);
      const float* bp = nullptr;  // the f32 block of B, packed on first need
      for (int64_t ic = 0; ic < m; ic += kMC) {
        const int64_t mc = std::min<int64_t>(kMC, m - ic);
        const int64_t eb = blk.check;  // B's range check
        if (DpUsable(eb) && DpExact(PackAPairs(apd, a.Offset(ic, pc), mc, kc), eb)) {
          MacroKernelDp((kc + 1) / 2, mc, nc, apd, bpd, c + ic * ldc + jc, ldc);
          continue;
        }
        if (bp == nullptr) {
          bp = PanelsOfB(ctx, PackBuffer(0, kc * nc_max), bk, kc, nc);
          if (bp == nullptr) return;  // ctx failed
        }
        float* ap = PackBuffer(1, kc * mc_max);
        PackA<DT::kBF16>(ap, a.Offset(ic, pc), mc, kc);
        MacroKernel(kc, mc, nc, ap, bp, c + ic * ldc + jc, ldc);
      }
    }
  }
}

}  // namespace ptox::cpu::mm
#endif  // PTOX_CPU_MATMUL_BF16
