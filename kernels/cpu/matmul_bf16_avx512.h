// bf16 x bf16 matmul blocks on AVX512_BF16 (included by matmul_bf16.h, which describes the
// scheme). vdpbf16ps multiplies pairs of bf16 of consecutive k exactly and adds both products
// into f32 lanes, rounding to nearest: twice the work of an f32 FMA per instruction (527 vs 264
// GFLOP/s on one Zen 5 core). It treats subnormal inputs and results as zero whatever MXCSR says,
// so it only runs on a block of A and a block of B where that cannot change a result. With Ea and
// Eb the exponent fields of their smallest nonzero magnitudes, every nonzero bf16 of a block is a
// multiple of 2^(E - 134), so every product and partial sum is a multiple of 2^(Ea + Eb - 268):
// zero or normal (>= 2^-126) when Ea + Eb >= 142 and neither block holds subnormals (E >= 1). A
// small activation meets ordinary weights (2^-60 x 2^-20) safely; other blocks take the f32
// kernel, which is exact about them. The packing's check is the block's MinExponent.
#pragma once

#include <cstdint>

#define PTOX_CPU_MATMUL_BF16 1
#define PTOX_CPU_MATMUL_BF16_STREAM 1  // StreamRowsDp: 4-16 rows times B in place

namespace ptox::cpu::mm {

using Pair = uint32_t;  // bf16 of k (low half) and k + 1 (high half)

// The range check: a running minimum over bf16 lanes of (magnitude bits - 1), where zero wraps
// to 0xffff, so that it ends as the smallest nonzero magnitude - 1 (no mask registers).
constexpr int kNoNonzero = 255;  // MinExponent of a block of zeros: any partner is safe
inline __m512i Lower(__m512i lowest, __m512i x) {
  const __m512i mag = _mm512_and_si512(x, _mm512_set1_epi16(0x7fff));
  return _mm512_min_epu16(lowest, _mm512_sub_epi16(mag, _mm512_set1_epi16(1)));
}
inline __m512i Lower(__m512i lowest, __m256i x) {  // zero upper lanes leave it as it is
  return Lower(lowest, _mm512_zextsi256_si512(x));
}
inline __m512i NoneLower() { return _mm512_set1_epi16(-1); }
// The exponent field of the smallest nonzero magnitude (0: a subnormal), kNoNonzero if none.
inline int MinExponent(__m512i lowest) {
  const __m256i m =
      _mm256_min_epu16(_mm512_castsi512_si256(lowest), _mm512_extracti64x4_epi64(lowest, 1));
  const __m128i q = _mm_min_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  const auto smallest = static_cast<uint16_t>(_mm_cvtsi128_si32(_mm_minpos_epu16(q)) + 1);
  return smallest == 0 ? kNoNonzero : smallest >> 7;
}
// Whether vdpbf16ps is exact on blocks of A and B with these MinExponents (see the top), and
// whether a block of B with this one can be (before A is packed).
inline bool DpExact(int64_t ea, int64_t eb) { return ea >= 1 && eb >= 1 && ea + eb >= 142; }
inline bool DpUsable(int64_t eb) { return eb >= 1; }

// Columns [0, w) of bf16 rows r0 and r1 (r1 == nullptr: zero) as kL pairs, checked into lowest.
inline void PairRow(Pair* out, const Unaligned<uint16_t>* r0, const Unaligned<uint16_t>* r1,
                    int64_t w, __m512i& lowest) {
  for (int64_t j = 0; j < kNR; j += kL) {
    const int64_t n = std::clamp<int64_t>(w - j, 0, kL);
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    const __m256i lo = _mm256_maskz_loadu_epi16(m, r0 + j);
    const __m256i hi = r1 ? _mm256_maskz_loadu_epi16(m, r1 + j) : _mm256_setzero_si256();
    lowest = Lower(Lower(lowest, lo), hi);
    const __m512i v = _mm512_or_si512(_mm512_cvtepu16_epi32(lo),
                                      _mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
    _mm512_storeu_si512(out + j, v);
  }
}

// A rows [0, mc) x cols [0, kc) into kH-row panels (kMR: the micro-kernel's) of ceil(kc / 2)
// pairs each (pair-major). With contiguous rows a pair is one 32-bit word of the row
// (little-endian: k in the low half).
template <int kH = kMR>
inline int PackAPairs(Pair* dst, Src<DT::kBF16> a, int64_t mc, int64_t kc) {
  static_assert(kH % 8 == 0, "panels are transposed 8 rows at a time");
  const int64_t kp = (kc + 1) / 2, kfull = kc / 2;
  __m512i lowest = NoneLower();
  for (int64_t i0 = 0; i0 < mc; i0 += kH) {
    const int64_t h = std::min<int64_t>(kH, mc - i0);
    Pair* panel = dst + i0 * kp;
    if (h < kH) std::fill(panel, panel + kp * kH, Pair{0});
    // Whole panels of contiguous rows: 16 pairs of 8 rows at a time through Transpose8x16.
    int64_t p0 = 0;
    if (h == kH && a.cs == 1)
      for (; p0 + kTransposeCols <= kfull; p0 += kTransposeCols)
        for (int g = 0; g < kH; g += 8)
          Transpose8x16(a.p + (i0 + g) * a.rs + 2 * p0, a.rs * 2, panel + p0 * kH + g, kH);
    for (int64_t r = 0; r < h; ++r) {
      const Unaligned<uint16_t>* row = a.p + (i0 + r) * a.rs;
      int64_t p = p0;
      if (a.cs == 1) {
        for (int64_t k = 0; k < kc; k += kL) {  // the range check, kL elements at a time
          const __mmask16 m = static_cast<__mmask16>((1u << std::min<int64_t>(kL, kc - k)) - 1);
          lowest = Lower(lowest, _mm256_maskz_loadu_epi16(m, row + k));
        }
        const auto* words = reinterpret_cast<const Unaligned<Pair>*>(row);
        for (; p < kfull; ++p) panel[p * kH + r] = words[p];
      }
      for (; p < kp; ++p) {
        const uint16_t lo = row[2 * p * a.cs];
        const uint16_t hi = 2 * p + 1 < kc ? row[(2 * p + 1) * a.cs] : uint16_t{0};
        lowest = Lower(lowest, _mm256_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, hi, lo));
        panel[p * kH + r] = lo | Pair{hi} << 16;
      }
    }
  }
  return MinExponent(lowest);
}

// B rows [0, kc) x cols [0, nc) into kNR-wide panels of ceil(kc / 2) pair rows (the last pair's
// odd half zero past kc, as columns past nc). Rows contiguous: whole pairs of panels go 32
// columns at a time: two rows interleaved by unpacklo / unpackhi of 16-bit lanes, whose lane
// order one permute per 16 pairs restores, and the range check as a running minimum (element by
// element this packing took 40 % of a 128 x 2048 x 5632 product); the rest through PairRow.
// Otherwise B^T is packed as A is, its rows (B's columns) into kNR-row panels: a transposed B,
// as LLM weights are usually stored, holds the pair of k and k + 1 of a column in one 32-bit
// word (bf16 B^T: 4.9 -> 2.3 ms at 16 x 2048 x 6144 against an f32 kernel on element-by-element
// packing). Returns the block's MinExponent.
inline int PackBPairs(Pair* dst, Src<DT::kBF16> b, int64_t kc, int64_t nc) {
  if (b.cs != 1) return PackAPairs<kNR>(dst, b.Transposed(), nc, kc);
  const int64_t kp = (kc + 1) / 2, kfull = kc / 2;
  constexpr int64_t kChunk = 2 * kL, kGroup = 4 * kNR;  // columns per step, per row pass
  const int64_t fast = nc / (2 * kNR) * (2 * kNR);      // whole chunks filling whole panels
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  __m512i lowest = NoneLower();
  for (int64_t g = 0; g < fast; g += kGroup)  // groups of panels row pair by row pair: runs the
    for (int64_t p = 0; p < kfull; ++p) {     // prefetchers follow, few write streams
      const Unaligned<uint16_t>* r0 = b.p + 2 * p * b.rs;
      for (int64_t j = g; j < std::min(fast, g + kGroup); j += kChunk) {
        // The same columns 4 pairs ahead: short runs per row (128 x 2048 x 5632: +5-8 %)
        _mm_prefetch(r0 + 8 * b.rs + j, _MM_HINT_T0);
        _mm_prefetch(r0 + 9 * b.rs + j, _MM_HINT_T0);
        const __m512i x0 = _mm512_loadu_si512(r0 + j), x1 = _mm512_loadu_si512(r0 + b.rs + j);
        lowest = Lower(Lower(lowest, x0), x1);
        const __m512i lo = _mm512_unpacklo_epi16(x0, x1), hi = _mm512_unpackhi_epi16(x0, x1);
        for (int h = 0; h < 2; ++h) {
          const int64_t c = j + h * kL;  // the first of these 16 columns
          _mm512_storeu_si512(dst + c / kNR * kNR * kp + p * kNR + c % kNR,
                              _mm512_permutex2var_epi64(lo, h ? second : first, hi));
        }
      }
    }
  for (int64_t p = 0; p < kp; ++p) {  // the columns past `fast`, and an odd last row
    const Unaligned<uint16_t>* r0 = b.p + 2 * p * b.rs;
    const Unaligned<uint16_t>* r1 = 2 * p + 1 < kc ? r0 + b.rs : nullptr;
    for (int64_t j0 = p < kfull ? fast : 0; j0 < nc; j0 += kNR)
      PairRow(dst + j0 * kp + p * kNR, r0 + j0, r1 ? r1 + j0 : nullptr,
              std::min<int64_t>(kNR, nc - j0), lowest);
  }
  return MinExponent(lowest);
}


// c[kMR x kNVc vectors] += a_panel * b_panel over kp pairs, as MicroKernel (its prefetch of
// packed panels too: 16 x 2048 x 5632 kept, one thread: 1.33 -> 0.88 ms; 128 rows: 7.1 -> 6.6 ms;
// freshly packed blocks 2-5 % faster), and into L2 kFar pairs ahead: few-row products stream kept
// blocks from memory faster than the hardware prefetchers, which stop at every 4 KiB page
// (16 x 4096 x 11008 kept: 4.1-5.3 -> 3.5-4.0 ms on one thread, 2.2-3.6 -> 2.0 on two; 128 rows
// unchanged; the f32 kernel gained nothing from it).
constexpr int64_t kFar = 512;
template <int kNVc = kNV>
__attribute__((always_inline)) inline void MicroKernelDp(int64_t kp, const Pair* a, const Pair* b,
                                                         float* c, int64_t ldc) {
  V acc[kMR][kNVc];
  StartBlock(acc, c, ldc);
  for (int64_t p = 0; p < kp; ++p) {
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) _mm_prefetch(b + (p + kAhead) * kNR + v * kL, _MM_HINT_T0);
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) _mm_prefetch(b + (p + kFar) * kNR + v * kL, _MM_HINT_T1);
    __m512bh bv[kNVc];
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + p * kNR + v * kL);
#pragma GCC unroll 16
    for (int r = 0; r < kMR; ++r) {
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[p * kMR + r]));
#pragma GCC unroll 4
      for (int v = 0; v < kNVc; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
    }
  }
  AddBlock(acc, c, ldc);
}

// 4 to 16 rows, B rows contiguous: B streams through once, read in place, eight rows (four k
// pairs) of 32 columns at a time interleaved into pairs in registers — unpacklo / unpackhi of
// 16-bit lanes, which leave the columns in the order 0-3, 8-11, 16-19, 24-27 / 4-7, 12-15, ...
// The products accumulate in an L1 scratch of the column block in that order (four dot products
// per vector load / store), and one permute per vector restores the order when the block is added
// to C. The range check runs on the loaded B vectors (and on A as it is packed); a block that fails
// is recomputed by the f32 path, exact about subnormals. Packing B would cost more than these
// few rows' dot products.
constexpr int64_t kStrip = 2 * kL;  // columns per pair of accumulator vectors
constexpr int kStreamRowsMax = 16;  // A packed as one panel of this many rows
// Pairs of k per pass over the scratch: 4 pairs (8 rows of B) take 8 dot products per row
// between its scratch load and store (2 pairs were store-bound: 16 x 2048 x 768 in L2 at 292
// GFLOP/s, now 382; 16 x 2048 x 5632 from L3 225 -> 305-329).
constexpr int kPairsPerPass = 4;

// Returns B's MinExponent: the caller decides whether the dot products were exact.
inline int StreamBlockDp(float* scratch, int64_t m, int64_t w, int64_t k, const Pair* ap,
                         const Unaligned<uint16_t>* b, int64_t ldb) {
  const int64_t strips = (w + kStrip - 1) / kStrip, kp = (k + 1) / 2;
  std::fill(scratch, scratch + m * strips * kStrip, 0.0f);
  __m512i lowest = NoneLower();
  auto load = [&](int64_t row, int64_t j, __mmask32 cols) {
    if (row >= k) return _mm512_setzero_si512();
    const __m512i x = _mm512_maskz_loadu_epi16(cols, b + row * ldb + j);
    lowest = Lower(lowest, x);
    return x;
  };
  for (int64_t p = 0; p < kp; p += kPairsPerPass) {
    for (int64_t s = 0; s < strips; ++s) {
      const int64_t j = s * kStrip, n = std::min<int64_t>(kStrip, w - j);
      const __mmask32 cols = n == kStrip ? ~__mmask32{0} : (__mmask32{1} << n) - 1;
      // The same columns of the next rows: the runs within a row are too short for the
      // hardware prefetchers (without this: 84 instead of 244 GFLOP/s at 16 x 2048 x 5632).
      for (int u = 2 * kPairsPerPass; u < 4 * kPairsPerPass; ++u)
        _mm_prefetch(b + (2 * p + u) * ldb + j, _MM_HINT_T0);
      __m512bh lo[kPairsPerPass], hi[kPairsPerPass];
      for (int q = 0; q < kPairsPerPass; ++q) {
        const __m512i x0 = load(2 * (p + q), j, cols), x1 = load(2 * (p + q) + 1, j, cols);
        lo[q] = (__m512bh)_mm512_unpacklo_epi16(x0, x1);
        hi[q] = (__m512bh)_mm512_unpackhi_epi16(x0, x1);
      }
      float* acc = scratch + j;
#pragma GCC unroll 2
      for (int64_t r = 0; r < m; ++r) {
        const Pair* ar = ap + p * kStreamRowsMax + r;  // pair rows past kp are zero
        float* c = acc + r * strips * kStrip;
        __m512 clo = _mm512_loadu_ps(c), chi = _mm512_loadu_ps(c + kL);
#pragma GCC unroll 4
        for (int q = 0; q < kPairsPerPass; ++q) {
          const __m512bh aq = (__m512bh)_mm512_set1_epi32(static_cast<int>(ar[q * kStreamRowsMax]));
          clo = _mm512_dpbf16_ps(clo, aq, lo[q]);
          chi = _mm512_dpbf16_ps(chi, aq, hi[q]);
        }
        _mm512_storeu_ps(c, clo);
        _mm512_storeu_ps(c + kL, chi);
      }
    }
  }
  return MinExponent(lowest);
}

inline void StreamRowsDp(float* c, int64_t ldc, int64_t m, int64_t n, int64_t k, Src<DT::kBF16> a,
                         Src<DT::kBF16> b) {
  const int64_t kp = (k + 1) / 2;
  const int64_t kpp = (kp + kPairsPerPass - 1) / kPairsPerPass * kPairsPerPass;
  auto* ap = reinterpret_cast<Pair*>(PackBuffer(3, kpp * kStreamRowsMax));
  const int ea = PackAPairs<kStreamRowsMax>(ap, a, m, k);
  std::fill(ap + kp * kStreamRowsMax, ap + kpp * kStreamRowsMax, Pair{0});
  // Column blocks whose scratch fills half the L1.
  const int64_t cols = std::max<int64_t>(PTOX_CPU_L1_BYTES / 2 / 4 / m / kStrip * kStrip, kStrip);
  float* scratch = PackBuffer(2, m * cols);
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int64_t j0 = 0; j0 < n; j0 += cols) {
    const int64_t w = std::min<int64_t>(cols, n - j0), strips = (w + kStrip - 1) / kStrip;
    if (ea < 1 || !DpExact(ea, StreamBlockDp(scratch, m, w, k, ap, b.p + j0, b.rs))) {
      StreamRows(c + j0, ldc, m, w, k, a, b.Offset(0, j0));
      continue;
    }
    for (int64_t r = 0; r < m; ++r)
      for (int64_t s = 0; s < strips; ++s) {
        const float* t = scratch + (r * strips + s) * kStrip;
        float* out = c + r * ldc + j0 + s * kStrip;
        const int64_t cnt = std::min<int64_t>(kStrip, w - s * kStrip);
        const __mmask32 live = cnt == kStrip ? ~__mmask32{0} : (__mmask32{1} << cnt) - 1;
        const __mmask16 m0 = static_cast<__mmask16>(live), m1 = static_cast<__mmask16>(live >> 16);
        const __m512 lo = _mm512_loadu_ps(t), hi = _mm512_loadu_ps(t + kL);
        _mm512_mask_storeu_ps(
            out, m0,
            _mm512_add_ps(_mm512_maskz_loadu_ps(m0, out), _mm512_permutex2var_ps(lo, first, hi)));
        _mm512_mask_storeu_ps(out + kL, m1,
                              _mm512_add_ps(_mm512_maskz_loadu_ps(m1, out + kL),
                                            _mm512_permutex2var_ps(lo, second, hi)));
      }
  }
}

}  // namespace ptox::cpu::mm

