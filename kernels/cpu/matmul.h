// tile.matmul / tile.matmul_acc on CPU: a register-blocked FMA micro-kernel over B repacked into
// nr-wide panels (AVX-512 / AVX2 builds), and the interpreter's exact i-k-j loop (scalar build).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/core.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#define PTOX_CPU_MATMUL_SIMD 1
#endif

namespace ptox::cpu {

// The exact reference order: each element accumulates in increasing k, product rounded before
// the add (the build uses -ffp-contract=off), so results equal the interpreter's bit for bit.
// The i-k-j order vectorizes over j without changing any element's order.
template <bool kTransB, int M, int N, int K, int BR, int BC>
void MatmulIntoExact(float* o, const float* a, const float* b, int64_t k_valid) {
  for (int64_t i = 0; i < M; ++i) {
    float* orow = o + i * N;
    for (int64_t k = 0; k < k_valid; ++k) {
      const float aik = a[i * K + k];
      if constexpr (kTransB) {
        for (int64_t j = 0; j < N; ++j) orow[j] = orow[j] + aik * b[j * BC + k];
      } else {
        const float* brow = b + k * BC;
        for (int64_t j = 0; j < N; ++j) orow[j] = orow[j] + aik * brow[j];
      }
    }
  }
}

#ifdef PTOX_CPU_MATMUL_SIMD
namespace mm {

// One SIMD register of f32 and the handful of operations the micro-kernel needs. Masked
// loads / stores handle a last vector with fewer than kLanes columns.
#if defined(__AVX512F__)
struct Vec {
  using V = __m512;
  static constexpr int kLanes = 16;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static V Bcast(const float* p) { return _mm512_set1_ps(*p); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  template <int kN> static V LoadN(const float* p) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << kN) - 1), p);
  }
  template <int kN> static void StoreN(float* p, V v) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << kN) - 1), v);
  }
};
#else
struct Vec {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static V Bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  template <int kN> static __m256i Mask() {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(kN), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  template <int kN> static V LoadN(const float* p) { return _mm256_maskload_ps(p, Mask<kN>()); }
  template <int kN> static void StoreN(float* p, V v) { _mm256_maskstore_ps(p, Mask<kN>(), v); }
};
#endif

constexpr int kL = Vec::kLanes;
// Register block: kMR rows x kNV vectors of C stay in registers for a whole k block. AVX-512:
// 8 x 2 zmm = 16 accumulators (+2 B vectors + 1 broadcast of 32 registers); AVX2: 4 x 3 ymm = 12
// (+3 + 1 of 16). Either hides the 4-cycle FMA latency with >= 8 independent chains and needs
// fewer loads than FMAs per k, so the FMA pipes are the limit. (6 x 4, 12 x 2 and 14 x 2 zmm
// measured the same within noise on Zen; 8 rows divide the usual power-of-two tile heights.)
#if defined(__AVX512F__)
constexpr int kMR = 8, kNV = 2;
#else
constexpr int kMR = 4, kNV = 3;
#endif
constexpr int kNR = kNV * kL;  // panel width in columns
// k block: a packed kKC x kNR panel of B (32 KiB for AVX-512) plus the kMR x kKC slice of A
// (8 KiB) fit the 48 KiB L1, and the packed kKC x N block of B the L2 for N up to 512.
constexpr int kKC = 256;

// c[r][0 .. kNVc*kL - (kL - kTail)) += a[r][0 .. kc) * b[0 .. kc)[same columns] for r < kRows,
// with the sums in increasing k per element (FMA). b rows are ldb apart; kTail (1 .. kL - 1) is
// the lane count of the last vector when the block is narrower than kNVc full vectors (0: full).
// kMaskB masks that vector's B loads too (unpacked B, whose rows end at the tile's last column).
template <int kRows, int kNVc, int kTail, bool kMaskB>
__attribute__((always_inline)) inline void Kernel(int64_t kc, const float* a, int64_t lda,
                                                  const float* b, int64_t ldb, float* c,
                                                  int64_t ldc) {
  using V = Vec::V;
  constexpr bool kPart = kTail != 0;
  V acc[kRows][kNVc];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) {
      const float* p = c + r * ldc + v * kL;
      if constexpr (kPart) acc[r][v] = v == kNVc - 1 ? Vec::LoadN<kTail>(p) : Vec::Load(p);
      else acc[r][v] = Vec::Load(p);
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    V bv[kNVc];
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) {
      const float* p = b + k * ldb + v * kL;
      if constexpr (kPart && kMaskB) bv[v] = v == kNVc - 1 ? Vec::LoadN<kTail>(p) : Vec::Load(p);
      else bv[v] = Vec::Load(p);
    }
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const V ar = Vec::Bcast(a + r * lda + k);
#pragma GCC unroll 4
      for (int v = 0; v < kNVc; ++v) acc[r][v] = Vec::Fma(ar, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) {
      float* p = c + r * ldc + v * kL;
      if constexpr (kPart) {
        if (v == kNVc - 1) Vec::StoreN<kTail>(p, acc[r][v]);
        else Vec::Store(p, acc[r][v]);
      } else {
        Vec::Store(p, acc[r][v]);
      }
    }
  }
}

// Runs the micro-kernel over kRows rows and every column block of an N-wide C: full blocks of
// kNVw vectors, then one last block (fewer vectors and / or a partial last vector). b points at
// column 0 of either a packed block (panels of kPanel columns, ldb = kPanel, kPanel * kc apart)
// or the unpacked tile (ldb = its row length; panels are kNVw * kL columns apart).
template <int kRows, int N, int kNVw, bool kPacked>
inline void RowBlock(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb,
                     float* c, int64_t ldc) {
  constexpr int kW = kNVw * kL;
  constexpr int kFull = N / kW, kRest = N % kW;
  for (int p = 0; p < kFull; ++p) {
    const float* bp = kPacked ? b + static_cast<int64_t>(p) * kW * kc : b + p * kW;
    Kernel<kRows, kNVw, 0, false>(kc, a, lda, bp, ldb, c + p * kW, ldc);
  }
  if constexpr (kRest != 0) {
    const float* bp = kPacked ? b + static_cast<int64_t>(kFull) * kW * kc : b + kFull * kW;
    constexpr int kVecs = (kRest + kL - 1) / kL;
    Kernel<kRows, kVecs, kRest % kL, !kPacked>(kc, a, lda, bp, ldb, c + kFull * kW, ldc);
  }
}

// Copies rows [k0, k0 + kc) of B (K x N, or N x K when transposed) into kNR-wide panels, each
// kc x kNR row-major and zero-filled past column N: the micro-kernel then reads B contiguously
// from L1, whatever the tile's row length (a power-of-two stride would alias L1 sets).
template <bool kTransB, int N, int BC>
inline void PackB(float* dst, const float* b, int64_t k0, int64_t kc) {
  for (int j0 = 0; j0 < N; j0 += kNR) {
    const int w = std::min(kNR, N - j0);
    float* panel = dst + static_cast<int64_t>(j0) * kc;
    if constexpr (kTransB) {
      for (int j = 0; j < w; ++j) {
        const float* src = b + static_cast<int64_t>(j0 + j) * BC + k0;
        for (int64_t k = 0; k < kc; ++k) panel[k * kNR + j] = src[k];
      }
      for (int64_t k = 0; k < kc && w < kNR; ++k)
        std::fill(panel + k * kNR + w, panel + (k + 1) * kNR, 0.0f);
    } else {
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = b + (k0 + k) * BC + j0;
        std::copy(src, src + w, panel + k * kNR);
        std::fill(panel + k * kNR + w, panel + (k + 1) * kNR, 0.0f);
      }
    }
  }
}

// All M rows in kMR-row blocks plus one block of the M % kMR remaining rows.
template <int M, int N, int kNVw, bool kPacked>
inline void AllRows(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c, int64_t ldc) {
  constexpr int kMR0 = M < kMR ? M : kMR;
  constexpr int kFull = M / kMR0, kRest = M % kMR0;
  for (int i = 0; i < kFull; ++i)
    RowBlock<kMR0, N, kNVw, kPacked>(kc, a + i * kMR0 * lda, lda, b, ldb, c + i * kMR0 * ldc, ldc);
  if constexpr (kRest != 0)
    RowBlock<kRest, N, kNVw, kPacked>(kc, a + kFull * kMR0 * lda, lda, b, ldb,
                                      c + kFull * kMR0 * ldc, ldc);
}

// Fewer than this many rows (and B not transposed) read B in place: packing would cost as much
// as the product itself when each B element meets only a few rows.
constexpr int kPackMinRows = 3 * kMR;

// Columns [j0, j0 + kNc) of C through packed B: k blocks of kKC, each packed once and used by
// every row block. b / o point at column j0 (B transposed: at row j0, its column j0 in B^T).
template <bool kTransB, int M, int kNc, int N, int K, int BC>
inline void PackedColumns(float* o, const float* a, const float* b, int64_t k_valid) {
  constexpr int kPanels = (kNc + kNR - 1) / kNR;
  constexpr int kKB = K < kKC ? K : kKC;
  alignas(64) float packed[kPanels * kNR * kKB];
  for (int64_t k0 = 0; k0 < k_valid; k0 += kKB) {
    const int64_t kc = std::min<int64_t>(kKB, k_valid - k0);
    PackB<kTransB, kNc, BC>(packed, b, k0, kc);
    AllRows<M, kNc, kNV, true>(kc, a + k0, K, packed, kNR, o, N);
  }
}

// Column block of the packed path: the packed k block of B (kKC x kNC, 256 KiB) stays in L2
// (and on the task's stack) however wide the tile is.
constexpr int kNC = 256;

template <bool kTransB, int M, int N, int K, int BR, int BC>
void MatmulIntoSimd(float* o, const float* a, const float* b, int64_t k_valid) {
  if constexpr (!kTransB && M < kPackMinRows) {
    // Few rows: a wider block (4 vectors) gives each row more independent FMA chains.
    constexpr int kNVw = M <= 2 ? 4 : kNV;
    for (int64_t k0 = 0; k0 < k_valid; k0 += kKC) {
      const int64_t kc = std::min<int64_t>(kKC, k_valid - k0);
      AllRows<M, N, kNVw, false>(kc, a + k0, K, b + k0 * BC, BC, o, N);
    }
  } else {
    constexpr int kNc = N < kNC ? N : kNC;
    constexpr int kFull = N / kNc, kRest = N % kNc;
    // Where column j of C starts in B: column j of a K x N B, row j of an N x K one.
    constexpr int64_t kColStep = kTransB ? BC : 1;
    for (int jc = 0; jc < kFull; ++jc)
      PackedColumns<kTransB, M, kNc, N, K, BC>(o + jc * kNc, a, b + jc * kNc * kColStep,
                                               k_valid);
    if constexpr (kRest != 0)
      PackedColumns<kTransB, M, kRest, N, K, BC>(o + kFull * kNc, a,
                                                 b + kFull * kNc * kColStep, k_valid);
  }
}

}  // namespace mm
#endif  // PTOX_CPU_MATMUL_SIMD

// o (M x N, holding the starting values) += a * b over k < k_valid; every element computed
// (padding included). Vector builds use FMA and the blocked kernel: each element still sums in
// increasing k, so the error stays within docs/ops.md's bound K * eps * sum |a||b|.
template <bool kTransB, DT D, int M, int K, int BR, int BC>
void MatmulInto(Tile<DT::kF32, M, (kTransB ? BR : BC)>& o, const Tile<D, M, K>& a,
                const Tile<D, BR, BC>& b) {
  static_assert(IsFloatDT(D), "matmul takes float tiles (bf16 / f16 tiles hold f32 values)");
  constexpr int N = kTransB ? BR : BC;
  const int64_t k_valid = std::min<int64_t>(a.vc, kTransB ? b.vc : b.vr);
  if (k_valid <= 0) return;
#ifdef PTOX_CPU_MATMUL_SIMD
  mm::MatmulIntoSimd<kTransB, M, N, K, BR, BC>(o.v, a.v, b.v, k_valid);
#else
  MatmulIntoExact<kTransB, M, N, K, BR, BC>(o.v, a.v, b.v, k_valid);
#endif
}

template <bool kTransB, DT D, int M, int K, int BR, int BC>
void Matmul(Ctx&, Tile<DT::kF32, M, (kTransB ? BR : BC)>& o, const Tile<D, M, K>& a,
            const Tile<D, BR, BC>& b) {
  std::fill(o.v, o.v + M * (kTransB ? BR : BC), 0.0f);
  MatmulInto<kTransB>(o, a, b);
  o.vr = a.vr;
  o.vc = kTransB ? b.vr : b.vc;
}

template <bool kTransB, DT D, int M, int K, int BR, int BC>
void MatmulAcc(Ctx&, Tile<DT::kF32, M, (kTransB ? BR : BC)>& o,
               const Tile<DT::kF32, M, (kTransB ? BR : BC)>& c, const Tile<D, M, K>& a,
               const Tile<D, BR, BC>& b) {
  if (&o != &c) o = c;
  MatmulInto<kTransB>(o, a, b);
  o.vr = std::min<int64_t>(c.vr, a.vr);
  o.vc = std::min<int64_t>(c.vc, kTransB ? b.vr : b.vc);
}

}  // namespace ptox::cpu
