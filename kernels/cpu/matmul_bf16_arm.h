// bf16 x bf16 matmul blocks on Arm's BFDOT (FEAT_BF16: built with +bf16 where the host has it;
// included by matmul_bf16.h, which describes the scheme). BFDOT (Arm ARM, BFDotAdd) multiplies
// the bf16 pairs of consecutive k exactly, adds the two products, and adds that sum to the f32
// lane, ignoring FPCR: both additions round to odd (an error below one ulp, where rounding to
// nearest errs by half of one), and subnormal inputs and results are read and written as zero.
// - Rounding: a kc-deep block adds ceil(kc / 2) sums, each to odd, where the f32 kernel makes kc
//   rounded FMAs, so its worst case is (kc + 1) eps sum_k |a||b| against the f32 kernel's
//   kc eps (eps = 2^-24): within the documented K eps per block except for one eps on an odd kc.
// - Subnormals: as on AVX512_BF16 (matmul_bf16_avx512.h), no subnormal input and the exponent
//   fields of the smallest nonzero magnitudes summing to at least 142 keep every product and
//   partial sum zero or normal.
// - Overflow: rounding to odd turns an overflow into the largest finite number, not infinity. With
//   Fa and Fb the exponent fields of the largest magnitudes, |a b| < 2^(Fa + Fb - 252), so a sum
//   of at most 2^10 products stays below 2^127 — finite, with no rounding near the overflow —
//   when Fa + Fb <= 369; and no infinity or NaN is in either block (F < 255).
// The check a packing returns holds both: the smallest exponent field (kNoNonzero for a block of
// zeros) in bits 0-7 and the largest in bits 8-15. Packing is plain C++ (the compiler vectorizes
// the range check); the micro-kernel is BFDOT by element: NEON's on cpu-neon and the
// length-agnostic cpu-sve (as the f32 kernel, matmul.h's Vec), SVE's on cpu-sve<N>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#define PTOX_CPU_MATMUL_BF16 1

namespace ptox::cpu::mm {

using Pair = uint32_t;  // bf16 of k (low half) and k + 1 (high half)

static_assert(2 * kKC <= 1024, "the overflow rule assumes blocks of at most 2^10 k");

constexpr int kNoNonzero = 255;  // the smallest exponent field of a block of zeros: any partner

// The range check: a running minimum of (magnitude bits - 1), where zero wraps to 0xffff, so that
// it ends as the smallest nonzero magnitude - 1, and a running maximum of the magnitude bits.
struct Range {
  uint16_t low = 0xffff, high = 0;
  void Add(uint16_t x) {
    const auto mag = static_cast<uint16_t>(x & 0x7fff);
    low = std::min(low, static_cast<uint16_t>(mag - 1));
    high = std::max(high, mag);
  }
  int64_t Check() const {
    const int64_t min_e = low == 0xffff ? kNoNonzero : (low + 1) >> 7;
    return min_e | int64_t{high >> 7} << 8;
  }
};

// Whether BFDOT computes blocks of A and B with these checks within the bound (see the top), and
// whether a block of B with this check can (before A is packed).
inline bool DpUsable(int64_t b) { return (b & 0xff) >= 1 && (b >> 8) < 255; }
inline bool DpExact(int64_t a, int64_t b) {
  return DpUsable(a) && DpUsable(b) && (a & 0xff) + (b & 0xff) >= 142 && (a >> 8) + (b >> 8) <= 369;
}

// A rows [0, mc) x cols [0, kc) into kH-row panels (kMR: the micro-kernel's) of ceil(kc / 2)
// pairs each (pair-major), the odd last pair's high half zero.
template <int kH = kMR>
inline int64_t PackAPairs(Pair* dst, Src<DT::kBF16> a, int64_t mc, int64_t kc) {
  const int64_t kp = (kc + 1) / 2;
  Range range;
  for (int64_t i0 = 0; i0 < mc; i0 += kH) {
    const int64_t h = std::min<int64_t>(kH, mc - i0);
    Pair* panel = dst + i0 * kp;
    if (h < kH) std::fill(panel, panel + kp * kH, Pair{0});
    for (int64_t r = 0; r < h; ++r) {
      const Unaligned<uint16_t>* row = a.p + (i0 + r) * a.rs;
      for (int64_t p = 0; p < kp; ++p) {
        const uint16_t lo = row[2 * p * a.cs];
        const uint16_t hi = 2 * p + 1 < kc ? row[(2 * p + 1) * a.cs] : uint16_t{0};
        range.Add(lo);
        range.Add(hi);
        panel[p * kH + r] = lo | Pair{hi} << 16;
      }
    }
  }
  return range.Check();
}

// B rows [0, kc) x cols [0, nc) into kNR-wide panels of ceil(kc / 2) pair rows, zero past kc and
// past nc: rows contiguous, a pair of rows at a time across every panel; a transposed B (B^T's
// rows contiguous, as weights are stored) as A is, its rows into kNR-row panels.
inline int64_t PackBPairs(Pair* dst, Src<DT::kBF16> b, int64_t kc, int64_t nc) {
  if (b.cs != 1) return PackAPairs<kNR>(dst, b.Transposed(), nc, kc);
  const int64_t kp = (kc + 1) / 2;
  Range range;
  for (int64_t p = 0; p < kp; ++p) {
    const Unaligned<uint16_t>* r0 = b.p + 2 * p * b.rs;
    const Unaligned<uint16_t>* r1 = 2 * p + 1 < kc ? r0 + b.rs : nullptr;
    for (int64_t j0 = 0; j0 < nc; j0 += kNR) {
      const int64_t w = std::min<int64_t>(kNR, nc - j0);
      Pair* out = dst + j0 * kp + p * kNR;
      for (int64_t j = 0; j < w; ++j) {
        const uint16_t lo = r0[j0 + j], hi = r1 ? r1[j0 + j] : uint16_t{0};
        range.Add(lo);
        range.Add(hi);
        out[j] = lo | Pair{hi} << 16;
      }
      std::fill(out + w, out + kNR, Pair{0});
    }
  }
  return range.Check();
}

// BFDOT by element on one register of B pairs (kL columns) and four A pairs: lane i of the A
// register is row i's pair; SVE's indexed form picks it within each 128-bit segment, so A's four
// pairs are loaded into every segment (LD1RQ).
#if defined(__ARM_FEATURE_SVE_BITS) && __ARM_FEATURE_SVE_BITS > 0
struct DotVec {
  using B = svbfloat16_t __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
  static B LoadB(const Pair* p) { return svreinterpret_bf16_u32(svld1_u32(svptrue_b32(), p)); }
  static B LoadA4(const Pair* p) { return svreinterpret_bf16_u32(svld1rq_u32(svptrue_b32(), p)); }
  template <int kLane>
  static V Dot(V acc, B b, B a) { return svbfdot_lane_f32(acc, b, a, kLane); }
};
#else
struct DotVec {
  using B = bfloat16x8_t;
  static B LoadB(const Pair* p) { return vreinterpretq_bf16_u32(vld1q_u32(p)); }
  static B LoadA4(const Pair* p) { return LoadB(p); }
  template <int kLane>
  static V Dot(V acc, B b, B a) { return vbfdotq_laneq_f32(acc, b, a, kLane); }
};
#endif

// Row kR of the register block: its pair is lane kR % 4 of a4 (an immediate of the instruction).
template <int kR, int kNVc>
__attribute__((always_inline)) inline void DotRow(V (&acc)[kMR][kNVc],
                                                  const DotVec::B (&bv)[kNVc], DotVec::B a4) {
#pragma GCC unroll 4
  for (int v = 0; v < kNVc; ++v) acc[kR][v] = DotVec::Dot<kR % 4>(acc[kR][v], bv[v], a4);
}

// c[kMR x kNVc vectors] += a_panel * b_panel over kp pairs, as MicroKernel (the packed B panel's
// rows prefetched kAhead pairs ahead).
template <int kNVc = kNV>
__attribute__((always_inline)) inline void MicroKernelDp(int64_t kp, const Pair* a, const Pair* b,
                                                         float* c, int64_t ldc) {
  static_assert(kMR % 4 == 0, "A pairs are loaded four rows at a time");
  V acc[kMR][kNVc];
  StartBlock(acc, c, ldc);
  for (int64_t p = 0; p < kp; ++p) {
#pragma GCC unroll 8
    for (int64_t off = 0; off < kNVc * kL; off += 16)
      __builtin_prefetch(b + (p + kAhead) * kNR + off, 0, 3);
    DotVec::B bv[kNVc], av[kMR / 4];
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) bv[v] = DotVec::LoadB(b + p * kNR + v * kL);
#pragma GCC unroll 4
    for (int q = 0; q < kMR / 4; ++q) av[q] = DotVec::LoadA4(a + p * kMR + 4 * q);
    [&]<int... kR>(std::integer_sequence<int, kR...>) {
      (DotRow<kR>(acc, bv, av[kR / 4]), ...);
    }(std::make_integer_sequence<int, kMR>{});
  }
  AddBlock(acc, c, ldc);
}

}  // namespace ptox::cpu::mm
