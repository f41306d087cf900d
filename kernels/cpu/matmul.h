// tile.matmul / tile.matmul_acc on CPU. Operands are tiles or views (a tile.load whose only uses
// are matmul operands reads the tensor in place: packing copies it once anyway, and a tile copy
// first would move every element twice). Vector builds run a BLIS-style GEMM: A and B packed into
// register-block panels, cache blocks sized from the L1 / L2 the target reports
// (PTOX_CPU_L1_BYTES / PTOX_CPU_L2_BYTES), an FMA micro-kernel; few-row products (GEMV, decode)
// stream B in place instead. The scalar build runs the interpreter's exact loop.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <type_traits>

#include "kernels/cpu/core.h"
#include "kernels/cpu/memory.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>
#define PTOX_CPU_MATMUL_SIMD 1
#elif defined(__aarch64__) && !defined(PTOX_CPU_SCALAR)  // Advanced SIMD: every AArch64 target
#include <arm_neon.h>
#define PTOX_CPU_MATMUL_SIMD 1
#if defined(__ARM_FEATURE_SVE_BITS) && __ARM_FEATURE_SVE_BITS > 0  // cpu-sve128 / 256 / 512
#include <arm_sve.h>
#endif
#endif

namespace ptox::cpu {

// A tile.load read in place: the window of the tensor an R x C tile of dtype D would hold.
template <DT D, int R, int C>
struct View {
  static constexpr DT kDType = D;
  static constexpr int kRows = R, kCols = C;
  const char* base = nullptr;
  int64_t rs = 0, cs = 0;  // element strides
  int64_t vr = 0, vc = 0;  // valid rows / cols (the rest would be padding, which matmul ignores)
  const PackCache* packed = nullptr;  // a constant tensor's kept blocks (TensorArg::packed)
};

template <DT D, int R, int C>
void LoadView(Ctx& ctx, View<D, R, C>& out, const TensorArg& t, std::initializer_list<int64_t> offs,
              const char* where) {
  Window w;
  if (!Locate(ctx, t, offs, sizeof(Memory<D>), where, &w)) return;
  out.base = w.base;
  out.rs = w.row_stride;
  out.cs = w.col_stride;
  out.vr = std::min<int64_t>(R, w.rows);
  out.vc = std::min<int64_t>(C, w.cols);
  out.packed = t.packed;
}

namespace mm {

// Element (i, j) of an operand is p[i * rs + j * cs] in dtype D's memory format (tiles: f32).
// `packed`: the operand is part of a constant tensor whose packed blocks the host keeps.
template <DT D>
struct Src {
  const Unaligned<Memory<D>>* p;
  int64_t rs, cs;
  const PackCache* packed = nullptr;
  float At(int64_t i, int64_t j) const { return FromMemory<D>(p[i * rs + j * cs]); }
  Src Offset(int64_t i, int64_t j) const { return {p + i * rs + j * cs, rs, cs, packed}; }
  Src Transposed() const { return {p, cs, rs, packed}; }
};

template <DT D, int R, int C>
Src<DT::kF32> SrcOf(const Tile<D, R, C>& t) {
  return {t.v, C, 1};  // float tiles hold f32 values
}
template <DT D, int R, int C>
Src<D> SrcOf(const View<D, R, C>& v) {
  return {reinterpret_cast<const Unaligned<Memory<D>>*>(v.base), v.rs, v.cs, v.packed};
}

// The exact reference order: each element accumulates in increasing k, product rounded before
// the add (the build uses -ffp-contract=off), so results equal the interpreter's bit for bit.
template <DT DA, DT DB>
void GemmExact(float* c, int64_t ldc, int64_t m, int64_t n, int64_t k, Src<DA> a, Src<DB> b) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) {
      const float aik = a.At(i, kk);
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = c[i * ldc + j] + aik * b.At(kk, j);
    }
}

#ifdef PTOX_CPU_MATMUL_SIMD

// One SIMD register of f32 and what the kernels need; Widen loads kLanes elements of any float
// memory format as f32 (bf16: shift into the high half; f16: the exact F16C conversion).
#if defined(__AVX512F__)
struct Vec {
  using V = __m512;
  static constexpr int kLanes = 16;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static V Set1(float x) { return _mm512_set1_ps(x); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static float Sum(V v) { return _mm512_reduce_add_ps(v); }
  template <DT D>
  static V Widen(const void* p) {
    if constexpr (D == DT::kF32) {
      return _mm512_loadu_ps(p);
    } else {
      const __m256i h = _mm256_loadu_si256(static_cast<const __m256i*>(p));
      if constexpr (D == DT::kBF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
      else
        return _mm512_cvtph_ps(h);
    }
  }
};
#elif defined(__ARM_FEATURE_SVE_BITS) && __ARM_FEATURE_SVE_BITS > 0
// SVE at the one length the target was built for (-msve-vector-bits): the vector type has a size,
// so it can be the register block's array elements. Predicated FMLA under an all-true predicate;
// bf16 widens by a zero-extending halfword load and a shift, f16 by FCVT of the low halves.
struct Vec {
  using V = svfloat32_t __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
  static constexpr int kLanes = __ARM_FEATURE_SVE_BITS / 32;
  static svbool_t All() { return svptrue_b32(); }
  static V Zero() { return svdup_n_f32(0.0f); }
  static V Load(const float* p) { return svld1_f32(All(), p); }
  static V Set1(float x) { return svdup_n_f32(x); }
  static V Fma(V a, V b, V c) { return svmla_f32_x(All(), c, a, b); }
  static V Add(V a, V b) { return svadd_f32_x(All(), a, b); }
  static void Store(float* p, V v) { svst1_f32(All(), p, v); }
  static float Sum(V v) { return svaddv_f32(All(), v); }
  template <DT D>
  static V Widen(const void* p) {
    if constexpr (D == DT::kF32) {
      return svld1_f32(All(), static_cast<const float*>(p));
    } else {
      const svuint32_t h = svld1uh_u32(All(), static_cast<const uint16_t*>(p));
      if constexpr (D == DT::kBF16)
        return svreinterpret_f32_u32(svlsl_n_u32_x(All(), h, 16));
      else
        return svcvt_f32_f16_x(All(), svreinterpret_f16_u32(h));
    }
  }
};
#elif defined(__aarch64__)
// Advanced SIMD (NEON), on cpu-neon and on the length-agnostic cpu-sve (SVE's vectors are sizeless
// there, so they cannot be the register block's array elements): 4 lanes, FMLA; a broadcast A
// value times B vectors is FMLA by element once the compiler sees the broadcast. bf16 widens by a
// long shift, f16 by FCVTL (exact, as the F16C conversion).
struct Vec {
  using V = float32x4_t;
  static constexpr int kLanes = 4;
  static V Zero() { return vdupq_n_f32(0.0f); }
  static V Load(const float* p) { return vld1q_f32(p); }
  static V Set1(float x) { return vdupq_n_f32(x); }
  static V Fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V Add(V a, V b) { return vaddq_f32(a, b); }
  static void Store(float* p, V v) { vst1q_f32(p, v); }
  static float Sum(V v) { return vaddvq_f32(v); }
  template <DT D>
  static V Widen(const void* p) {
    if constexpr (D == DT::kF32) {
      return vld1q_f32(static_cast<const float*>(p));
    } else {
      const uint16x4_t h = vld1_u16(static_cast<const uint16_t*>(p));
      if constexpr (D == DT::kBF16)
        return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
      else
        return vcvt_f32_f16(vreinterpret_f16_u16(h));
    }
  }
};
#else
struct Vec {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static V Set1(float x) { return _mm256_set1_ps(x); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static float Sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  template <DT D>
  static V Widen(const void* p) {
    if constexpr (D == DT::kF32) {
      return _mm256_loadu_ps(static_cast<const float*>(p));
    } else {
      const __m128i h = _mm_loadu_si128(static_cast<const __m128i*>(p));
      if constexpr (D == DT::kBF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
      else
        return _mm256_cvtph_ps(h);
    }
  }
};
#endif

constexpr int kL = Vec::kLanes;
using V = Vec::V;

// Register block of the packed path: kMR rows x kNV vectors of C in registers for a whole k
// block. AVX-512: 8 x 3 zmm = 24 accumulators (+3 B vectors + broadcasts of 32 registers): 11
// loads per 24 FMAs, and 24 independent chains hide the FMA latency on two pipes. AVX2: 6 x 2
// ymm = 12 of 16 registers (BLIS's Haswell shape).
#if defined(__AVX512F__) || defined(__aarch64__)  // AArch64: 24 of 32 registers as well
constexpr int kMR = 8, kNV = 3;
#else
constexpr int kMR = 6, kNV = 2;
#endif
constexpr int kNR = kNV * kL;

// Cache blocks (BLIS): a kKC x kNR panel of B streams through the L1 (the size of the L1; a
// smaller kKC, half the L1, measured 10-25% slower on Zen 5 from the per-call cost of C) while
// the kMR x kKC micro-panel of A stays there; a kMC x kKC block of A fills half the L2.
#ifndef PTOX_CPU_L1_BYTES
#define PTOX_CPU_L1_BYTES 32768
#endif
#ifndef PTOX_CPU_L2_BYTES
#define PTOX_CPU_L2_BYTES 1048576
#endif
constexpr int64_t kKC = std::clamp<int64_t>(PTOX_CPU_L1_BYTES / (kNR * 4) / 64 * 64, 128, 512);
constexpr int64_t kMC =
    std::clamp<int64_t>(PTOX_CPU_L2_BYTES / 2 / (kKC * 4) / kMR * kMR, kMR, 4096 / kMR * kMR);
constexpr int64_t kNC = 4096;  // B blocks beyond this width are packed in pieces

// Packing buffers (B and A blocks, and the bf16 path's pair blocks), one set per worker
// thread, grown to the largest block it has packed.
inline float* PackBuffer(int which, int64_t floats) {
  struct Buf {
    float* p = nullptr;
    int64_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[4];
  Buf& b = bufs[which];
  if (floats > b.n) {
    std::free(b.p);
    b.n = (floats + 15) / 16 * 16;
    b.p = static_cast<float*>(std::aligned_alloc(64, b.n * sizeof(float)));
    if (b.p == nullptr) std::abort();  // tens of KiB to a few MiB; no way to go on without it
  }
  return b.p;
}

// Blocks of a constant B (Src::packed) are packed once and kept by the host across runs. A kept
// block is a 64-byte header (what the packing returned: the bf16 range check), a spot check of
// the block as it was in memory (to notice a constant changed without
// Program::ForgetConstants): its first row, or its first column where that is what lies
// contiguous (a transposed B, as weights are stored; its first row, one element per cache line,
// cost 9 % of a 16-token SmolLM2 prefill), then the panels.
enum PackKind : int64_t { kF32Panels = 1, kPairPanels = 2 };

struct Packed {
  const void* panels = nullptr;  // nullptr only when a kept block's spot check failed (ctx failed)
  int64_t check = 0;             // what the packing returned
};

// The kc x nc block at b packed by pack(dst) (returning its check) into `bytes` bytes: the kept
// copy of a constant B, else (B not constant, or the host could not keep it) packed into buf.
template <DT D, typename Pack>
Packed PackedBlock(Ctx& ctx, Src<D> b, PackKind kind, int64_t kc, int64_t nc, int64_t bytes,
                   void* buf, Pack pack) {
  if (b.packed == nullptr) return {buf, pack(buf)};
  using M = Memory<D>;
  constexpr int64_t kSize = sizeof(M);
  const bool column = b.cs != 1 && b.rs == 1;
  const int64_t spots = column ? kc : nc, stride = column ? b.rs : b.cs;
  const int64_t head = 64 + (spots * kSize + 63) / 64 * 64;
  auto fill = [&](void* dst) {
    char* d = static_cast<char*>(dst);
    const int64_t check = pack(d + head);
    std::memcpy(d, &check, sizeof check);
    for (int64_t j = 0; j < spots; ++j) {
      const M x = b.p[j * stride];
      std::memcpy(d + 64 + j * kSize, &x, kSize);
    }
  };
  using Fill = decltype(fill);
  // The layout depends on the kind, the source format and the panel width (the ISA).
  const PackKey key{b.p, b.rs, b.cs, kc, nc, (kind * 16 + static_cast<int64_t>(D)) * 1024 + kNR};
  const auto* blk = static_cast<const char*>(b.packed->get(
      b.packed->ctx, &key, head + bytes, [](void* dst, void* f) { (*static_cast<Fill*>(f))(dst); },
      &fill));
  if (blk == nullptr) return {buf, pack(buf)};
  for (int64_t j = 0; j < spots; ++j) {
    const M x = b.p[j * stride];
    if (std::memcmp(blk + 64 + j * kSize, &x, kSize) != 0) {
      ctx.Error(
          "tile.matmul: a constant input changed after its packed copy was made (element %lld "
          "of the block at %p); call Program::ForgetConstants() after changing a constant",
          static_cast<long long>(j), static_cast<const void*>(b.p));
      return {};
    }
  }
  int64_t check = 0;
  std::memcpy(&check, blk, sizeof check);
  return {blk + head, check};
}

#if defined(__AVX512F__)
constexpr int kTransposeCols = 16;

// dst[c * ld + i] = lane c of r[i], for 8 rows of 16 32-bit lanes, in register shuffles.
template <typename T>
inline void StoreTransposed8x16(const __m512 (&r)[8], T* dst, int64_t ld) {
  static_assert(sizeof(T) == 4);
  __m512 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {  // per 128-bit lane L: rows i, i+1 at columns 4L .. 4L+3
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int h = 0; h < 2; ++h)  // u[4h + j], lane L: rows 4h .. 4h+3 at column 4L + j
    for (int j = 0; j < 2; ++j) {
      u[4 * h + 2 * j] = _mm512_shuffle_ps(t[4 * h + j], t[4 * h + 2 + j], 0x44);
      u[4 * h + 2 * j + 1] = _mm512_shuffle_ps(t[4 * h + j], t[4 * h + 2 + j], 0xEE);
    }
  const __m512i lanes01 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i lanes23 =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int j = 0; j < 4; ++j) {  // columns j and 4 + j, then 8 + j and 12 + j: 8 rows each
    const __m512 x = _mm512_permutex2var_ps(u[j], lanes01, u[4 + j]);
    const __m512 y = _mm512_permutex2var_ps(u[j], lanes23, u[4 + j]);
    auto* d = reinterpret_cast<float*>(dst);
    _mm256_storeu_ps(d + j * ld, _mm512_castps512_ps256(x));
    _mm256_storeu_ps(d + (4 + j) * ld, _mm512_extractf32x8_ps(x, 1));
    _mm256_storeu_ps(d + (8 + j) * ld, _mm512_castps512_ps256(y));
    _mm256_storeu_ps(d + (12 + j) * ld, _mm512_extractf32x8_ps(y, 1));
  }
}

// dst[c * ld + r] = row r's element c for 8 rows of 32-bit elements (row r at src + r *
// row_bytes) and 16 columns, moved as bits: packing A panels k-major 8 rows at a time (scalar
// element-by-element packing cost 5 % of a 256 x 512 x 1024 product), and pairs of bf16.
template <typename T>
inline void Transpose8x16(const void* src, int64_t row_bytes, T* dst, int64_t ld) {
  const char* s = static_cast<const char*>(src);
  __m512 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_ps(s + i * row_bytes);
  StoreTransposed8x16(r, dst, ld);
}

// The same for 8 rows of any float format D, rs elements apart, widened to f32.
template <DT D>
inline void Transpose8x16(const Unaligned<Memory<D>>* src, int64_t rs, float* dst, int64_t ld) {
  __m512 r[8];
  for (int i = 0; i < 8; ++i) r[i] = Vec::Widen<D>(src + i * rs);
  StoreTransposed8x16(r, dst, ld);
}
#endif

// One row of n elements as f32 (n <= kNR), zero-filled to kNR.
template <DT D>
inline void WidenRow(float* dst, const Unaligned<Memory<D>>* src, int64_t n) {
  int64_t j = 0;
  for (; j + kL <= n; j += kL) Vec::Store(dst + j, Vec::Widen<D>(src + j));
  for (; j < n; ++j) dst[j] = FromMemory<D>(src[j]);
  for (; j < kNR; ++j) dst[j] = 0.0f;
}

// B rows [0, kc) x cols [0, nc) into kNR-wide panels, each kc x kNR row-major, zero-padded.
template <DT D>
__attribute__((noinline)) void PackB(float* dst, Src<D> b, int64_t kc, int64_t nc) {
  if (b.cs == 1) {  // row by row in groups of 4 panels: runs of 768 bytes the prefetchers
    // follow, written to 4 panels at a time (all panels of a 1024-column block at once: 16 GB/s
    // from memory; a panel at a time: 17; 4 panels: 17-30), the same columns 8 rows ahead
    // prefetched (17 -> 19 GB/s)
    constexpr int64_t kGroup = 4 * kNR;
    const int64_t full = nc / kNR * kNR;
    for (int64_t g = 0; g < full; g += kGroup)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t j0 = g; j0 < std::min(full, g + kGroup); j0 += kNR)
#pragma GCC unroll 4
          for (int v = 0; v < kNV; ++v) {
            __builtin_prefetch(b.p + (k + 8) * b.rs + j0 + v * kL, 0, 3);
            Vec::Store(dst + j0 * kc + k * kNR + v * kL,
                       Vec::Widen<D>(b.p + k * b.rs + j0 + v * kL));
          }
    if (full < nc)
      for (int64_t k = 0; k < kc; ++k)
        WidenRow<D>(dst + full * kc + k * kNR, b.p + k * b.rs + full, nc - full);
    return;
  }
  for (int64_t j0 = 0; j0 < nc; j0 += kNR) {  // column-contiguous (a transposed B): down columns
    const int64_t w = std::min<int64_t>(kNR, nc - j0);
    float* panel = dst + j0 * kc;
    int64_t k0 = 0;
#if defined(__AVX512F__)
    if (b.rs == 1)  // whole groups of 8 columns, 16 k at a time (128 x 2048 x 6144: 20 -> 16 ms)
      for (; k0 + kTransposeCols <= kc; k0 += kTransposeCols)
        for (int64_t g = 0; g + 8 <= w; g += 8)
          Transpose8x16<D>(b.p + (j0 + g) * b.cs + k0, b.cs, panel + k0 * kNR + g, kNR);
    const int64_t done = b.rs == 1 ? w / 8 * 8 : 0;  // columns [0, done) of rows [0, k0)
#else
    const int64_t done = 0;
#endif
    for (int64_t k = 0; k < kc; ++k) std::fill(panel + k * kNR + w, panel + (k + 1) * kNR, 0.f);
    for (int64_t j = 0; j < w; ++j) {
      const Unaligned<Memory<D>>* col = b.p + (j0 + j) * b.cs;
      for (int64_t k = j < done ? k0 : 0; k < kc; ++k)
        panel[k * kNR + j] = FromMemory<D>(col[k * b.rs]);
    }
  }
}


// A rows [0, mc) x cols [0, kc) into kMR-row panels, each kc x kMR (k-major), zero-padded.
template <DT D>
__attribute__((noinline)) void PackA(float* dst, Src<D> a, int64_t mc, int64_t kc) {
  for (int64_t i0 = 0; i0 < mc; i0 += kMR) {
    const int64_t h = std::min<int64_t>(kMR, mc - i0);
    float* panel = dst + i0 * kc;
    if (h < kMR) std::fill(panel, panel + kc * kMR, 0.0f);
    int64_t k0 = 0;
#if defined(__AVX512F__)
    if constexpr (kMR == 8)
      if (h == kMR && a.cs == 1)
        for (; k0 + kTransposeCols <= kc; k0 += kTransposeCols)
          Transpose8x16<D>(a.p + i0 * a.rs + k0, a.rs, panel + k0 * kMR, kMR);
#endif
    for (int64_t r = 0; r < h; ++r) {
      const Unaligned<Memory<D>>* row = a.p + (i0 + r) * a.rs;
      for (int64_t k = k0; k < kc; ++k) panel[k * kMR + r] = FromMemory<D>(row[k * a.cs]);
    }
  }
}

// The start and end of every micro-kernel (f32 and bf16): the products of a kMR x kNVc-vector
// block of C sum in registers from zero and C is added once at the end (a reordering within the
// documented bound): C's lines, which come from L3 or memory, are prefetched at the start and
// have arrived by then.
template <int kNVc>
__attribute__((always_inline)) inline void StartBlock(V (&acc)[kMR][kNVc], const float* c,
                                                      int64_t ldc) {
#pragma GCC unroll 16
  for (int r = 0; r < kMR; ++r) {
#pragma GCC unroll 8
    for (int64_t off = 0; off < kNVc * kL; off += 16) __builtin_prefetch(c + r * ldc + off, 0, 3);
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) acc[r][v] = Vec::Zero();
  }
}
template <int kNVc>
__attribute__((always_inline)) inline void AddBlock(const V (&acc)[kMR][kNVc], float* c,
                                                    int64_t ldc) {
#pragma GCC unroll 16
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) {
      float* p = c + r * ldc + v * kL;
      Vec::Store(p, Vec::Add(Vec::Load(p), acc[r][v]));
    }
}

// Calls f(std::integral_constant<int, nv>{}) for the vectors of columns nv (1 .. kNV) a panel
// needs: the narrower last panel that power-of-two tiles leave with 48-column panels takes a
// narrower kernel.
template <typename F>
__attribute__((always_inline)) inline void WithVectors(int nv, F f) {
  if constexpr (kNV == 3)
    if (nv == 2) return f(std::integral_constant<int, 2>{});
  if (nv == 1) return f(std::integral_constant<int, 1>{});
  f(std::integral_constant<int, kNV>{});
}

// c[kMR x kNR] (ldc apart) += a_panel * b_panel over kc, as StartBlock / AddBlock describe.
// B is a packed panel (DB = f32, ldb = kNR) or, for few-row products, B itself read in place
// (any float format, ldb = its row stride).
// kNVc < kNV: a narrower last panel (kNVc vectors of its columns).
// kNextPanel (B in place): prefetch the next panel's columns 16 rows ahead — each row of a
// panel is a 192-byte run the hardware prefetchers do not follow across rows (16 x 4096 x 11008:
// 92 -> 125 GFLOP/s on one thread). A packed panel: its rows kAhead ahead (past its end: the next
// panel's) — a kept constant block comes from L3 or memory, where the hardware prefetchers alone
// left bandwidth unused (kept B, one thread: 16 x 4096 x 11008 11.0 -> 8.7 ms, 128 x 2048 x 6144
// 14.4 -> 14.2 ms; other products unchanged).
// A is a packed panel, or (RowsOfA) its kMR rows read in place; kNoPrefetch: small operands
// already in L1 / L2.
constexpr int64_t kAhead = 64;
enum Prefetch { kAheadInPanel, kNextPanel, kNoPrefetch };

struct RowsOfA {
  const float* row[kMR];
};
inline float AAt(const float* panel, int64_t k, int r) { return panel[k * kMR + r]; }
inline float AAt(const RowsOfA& a, int64_t k, int r) { return a.row[r][k]; }

template <DT DB = DT::kF32, int kNVc = kNV, Prefetch kPf = kAheadInPanel,
          typename PA = const float*>
__attribute__((always_inline)) inline void MicroKernel(int64_t kc, const PA& a,
                                                       const Unaligned<Memory<DB>>* b, int64_t ldb,
                                                       float* c, int64_t ldc) {
  V acc[kMR][kNVc];
  StartBlock(acc, c, ldc);
  for (int64_t k = 0; k < kc; ++k) {
    V bv[kNVc];
#pragma GCC unroll 4
    for (int v = 0; v < kNVc; ++v) bv[v] = Vec::Widen<DB>(b + k * ldb + v * kL);
    if constexpr (kPf == kNextPanel)
#pragma GCC unroll 4
      for (int v = 0; v < kNVc; ++v) __builtin_prefetch(b + (k + 16) * ldb + kNR + v * kL, 0, 3);
    else if constexpr (kPf == kAheadInPanel)
#pragma GCC unroll 4
      for (int v = 0; v < kNVc; ++v) __builtin_prefetch(b + (k + kAhead) * ldb + v * kL, 0, 3);
#pragma GCC unroll 16
    for (int r = 0; r < kMR; ++r) {
      const V ar = Vec::Set1(AAt(a, k, r));
#pragma GCC unroll 4
      for (int v = 0; v < kNVc; ++v) acc[r][v] = Vec::Fma(ar, bv[v], acc[r][v]);
    }
  }
  AddBlock(acc, c, ldc);
}

// MicroKernel over the first nv (1 .. kNV) vectors of the panel's columns.
template <DT DB = DT::kF32>
inline void MicroKernelN(int nv, int64_t kc, const float* a, const Unaligned<Memory<DB>>* b,
                         int64_t ldb, float* c, int64_t ldc) {
  WithVectors(nv, [&](auto n) { MicroKernel<DB, n>(kc, a, b, ldb, c, ldc); });
}

// kernel(c, ldc) on the h x w block of C at c, a kernel that writes kMR rows of nv vectors:
// in place when that is the block, else (fewer rows, or a partial vector of columns) on a
// scratch block holding C's h x w values, which are copied back.
template <typename Kernel>
inline void OnBlock(float* c, int64_t ldc, int64_t h, int64_t w, int nv, Kernel kernel) {
  if (h == kMR && w == nv * kL) return kernel(c, ldc);
  alignas(64) float t[kMR * kNR] = {};
  for (int64_t r = 0; r < h; ++r) std::copy(c + r * ldc, c + r * ldc + w, t + r * kNR);
  kernel(t, kNR);
  for (int64_t r = 0; r < h; ++r) std::copy(t + r * kNR, t + r * kNR + w, c + r * ldc);
}

// MicroKernel over the first nv vectors of a panel of B read in place (prefetch kPf), or of its
// packed copy bp when there is one (a partial vector of columns: reading it in place could pass
// the tensor's end).
template <Prefetch kPf, DT DB, typename PA>
inline void PanelKernel(int nv, int64_t kc, const PA& a, const float* bp, Src<DB> b, float* c,
                        int64_t ldc) {
  constexpr Prefetch kPackedPf = kPf == kNoPrefetch ? kNoPrefetch : kAheadInPanel;
  WithVectors(nv, [&](auto v) {
    if (bp)
      MicroKernel<DT::kF32, v, kPackedPf>(kc, a, bp, kNR, c, ldc);
    else
      MicroKernel<DB, v, kPf>(kc, a, b.p, b.rs, c, ldc);
  });
}

// Runs kernel(a_panel, b_panel, c_block, ldc, nv) over the kMR x kNR blocks of an mc x nc
// block of C from packed panels `depth` deep (loops jr, ir: a panel of B stays in L1 while A's
// panels stream from L2); nv = the vectors of columns a block needs (the narrower last panel
// that power-of-two tiles leave with 48-column panels takes a narrower kernel); blocks with
// fewer rows or a partial vector go through scratch.
template <typename T, typename Kernel>
inline void ForEachBlock(int64_t depth, int64_t mc, int64_t nc, const T* ap, const T* bp, float* c,
                         int64_t ldc, Kernel kernel) {
  for (int64_t jr = 0; jr < nc; jr += kNR) {
    const int64_t w = std::min<int64_t>(kNR, nc - jr);
    const int nv = static_cast<int>((w + kL - 1) / kL);
    for (int64_t ir = 0; ir < mc; ir += kMR) {
      const int64_t h = std::min<int64_t>(kMR, mc - ir);
      const T *a = ap + ir * depth, *b = bp + jr * depth;
      OnBlock(c + ir * ldc + jr, ldc, h, w, nv,
              [&](float* cb, int64_t ld) { kernel(a, b, cb, ld, nv); });
    }
  }
}

// One packed mc x kc block of A times one packed kc x nc block of B into C.
inline void MacroKernel(int64_t kc, int64_t mc, int64_t nc, const float* ap, const float* bp,
                        float* c, int64_t ldc) {
  ForEachBlock(kc, mc, nc, ap, bp, c, ldc,
               [&](const float* a, const float* b, float* cb, int64_t ld, int nv) {
                 MicroKernelN(nv, kc, a, b, kNR, cb, ld);
               });
}

// The block of B at (pc, jc) as f32 panels (PackedBlock); nullptr when ctx failed.
template <DT DB>
const float* PanelsOfB(Ctx& ctx, float* buf, Src<DB> b, int64_t kc, int64_t nc) {
  const int64_t ncp = (nc + kNR - 1) / kNR * kNR;
  auto pack = [&](void* dst) {
    PackB<DB>(static_cast<float*>(dst), b, kc, nc);
    return 0;
  };
  return static_cast<const float*>(
      PackedBlock(ctx, b, kF32Panels, kc, nc, kc * ncp * 4, buf, pack).panels);
}

// The packed path (BLIS loop order jc, pc, ic, then the macro-kernel): each element sums its k
// blocks in order.
template <DT DA, DT DB>
void GemmPacked(Ctx& ctx, float* c, int64_t ldc, int64_t m, int64_t n, int64_t k, Src<DA> a,
                Src<DB> b) {
  const int64_t nc_max = (std::min<int64_t>(kNC, n) + kNR - 1) / kNR * kNR;
  const int64_t mc_max = std::min<int64_t>(kMC, (m + kMR - 1) / kMR * kMR);
  float* buf = PackBuffer(0, kKC * nc_max);
  float* ap = PackBuffer(1, kKC * mc_max);
  for (int64_t jc = 0; jc < n; jc += kNC) {
    const int64_t nc = std::min<int64_t>(kNC, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKC) {
      const int64_t kc = std::min<int64_t>(kKC, k - pc);
      const float* bp = PanelsOfB(ctx, buf, b.Offset(pc, jc), kc, nc);
      if (bp == nullptr) return;
      for (int64_t ic = 0; ic < m; ic += kMC) {
        const int64_t mc = std::min<int64_t>(kMC, m - ic);
        PackA<DA>(ap, a.Offset(ic, pc), mc, kc);
        MacroKernel(kc, mc, nc, ap, bp, c + ic * ldc + jc, ldc);
      }
    }
  }
}

// 4 to 16 rows, B rows contiguous: A is packed (it is small), B is read in place by the
// micro-kernel, each k block of a panel once per row panel (the second time from L1); only a
// last panel with a partial vector of columns is packed (reading it in place could pass the
// tensor's end; the 32 columns 512-column stripes end with are read in place: 16 x 1024 x 3072
// 3-5 % faster). k blocks of half kKC keep the panel in L1.
template <DT DA, DT DB>
void GemmDirectB(float* c, int64_t ldc, int64_t m, int64_t n, int64_t k, Src<DA> a, Src<DB> b) {
  constexpr int64_t kKB = kKC / 2;
  const int64_t mp = (m + kMR - 1) / kMR * kMR;
  float* ap = PackBuffer(1, kKB * mp);
  float* bp = PackBuffer(0, kKB * kNR);
  for (int64_t pc = 0; pc < k; pc += kKB) {
    const int64_t kc = std::min<int64_t>(kKB, k - pc);
    PackA<DA>(ap, a.Offset(0, pc), m, kc);
    for (int64_t jr = 0; jr < n; jr += kNR) {
      const int64_t w = std::min<int64_t>(kNR, n - jr);
      const int nv = static_cast<int>((w + kL - 1) / kL);
      const Src<DB> bj = b.Offset(pc, jr);
      const bool packed = w % kL != 0;
      if (packed) PackB<DB>(bp, bj, kc, w);
      for (int64_t ir = 0; ir < m; ir += kMR) {
        const float* a_panel = ap + ir * kc;
        OnBlock(c + ir * ldc + jr, ldc, std::min<int64_t>(kMR, m - ir), w, nv,
                [&](float* cb, int64_t ld) {
                  PanelKernel<kNextPanel>(nv, kc, a_panel, packed ? bp : nullptr, bj, cb, ld);
                });
      }
    }
  }
}

// Small products whose f32 A and B fit in half the L2 (tile-level programs' tiles, mostly in
// cache already): packing costs more than it saves (64 x 64 x 64 tiles of a 1000-column
// tensor: 167 -> 198 GFLOP/s on one thread; 128^3: 204 -> 232; power-of-two row strides, whose
// rows share L1 sets, gain 0-8 %). The micro-kernel broadcasts A from its rows and reads B's
// rows in place, in the k blocks of the packed path (the same sums, bit for bit); a panel with a
// partial vector of columns is packed (reading it in place could pass the tensor's end), and a
// short last row panel repeats its last row (those results go to scratch).
constexpr int64_t kSmallBytes = PTOX_CPU_L2_BYTES / 2;

template <DT DB>
void GemmSmall(float* c, int64_t ldc, int64_t m, int64_t n, int64_t k, Src<DT::kF32> a, Src<DB> b) {
  for (int64_t pc = 0; pc < k; pc += kKC) {
    const int64_t kc = std::min<int64_t>(kKC, k - pc);
    for (int64_t jr = 0, w = 0; jr < n; jr += w) {
      // The last 4 vectors of columns as 2 + 2, not 3 + 1: a one-vector panel is bound by its
      // 8 broadcasts per 8 FMAs (64 x 64 x 64: 3-8 % faster).
      w = std::min<int64_t>(n - jr == 4 * kL ? 2 * kL : kNR, n - jr);
      const int nv = static_cast<int>((w + kL - 1) / kL);
      const Src<DB> bj = b.Offset(pc, jr);
      float* bp = nullptr;
      if (w % kL != 0) {
        bp = PackBuffer(0, kc * kNR);
        PackB<DB>(bp, bj, kc, w);
      }
      for (int64_t ir = 0; ir < m; ir += kMR) {
        const int64_t h = std::min<int64_t>(kMR, m - ir);
        RowsOfA rows;
        for (int r = 0; r < kMR; ++r)
          rows.row[r] = a.p + (ir + std::min<int64_t>(r, h - 1)) * a.rs + pc;
        OnBlock(c + ir * ldc + jr, ldc, h, w, nv, [&](float* cb, int64_t ld) {
          PanelKernel<kNoPrefetch>(nv, kc, rows, bp, bj, cb, ld);
        });
      }
    }
  }
}

// Few rows, B rows contiguous: B streams through once, read in place (widened in registers),
// in column blocks whose m C rows fill half the L1 (whole B rows where they fit: long
// contiguous runs are what the prefetchers stream at full bandwidth); each C load / store takes
// kKU products of a kRows x kKU register block of A broadcasts.
constexpr int kKU = 4;

template <int kRows, DT DA, DT DB>
inline void StreamBlock(float* c, int64_t ldc, int64_t n, Src<DA> a, Src<DB> b, int64_t ahead) {
  V av[kRows][kKU];
  for (int r = 0; r < kRows; ++r)
    for (int u = 0; u < kKU; ++u) av[r][u] = Vec::Set1(a.At(r, u));
  int64_t j = 0;
  for (; j + kL <= n; j += kL) {
    V bv[kKU];
    for (int u = 0; u < kKU; ++u) bv[u] = Vec::Widen<DB>(b.p + u * b.rs + j);
    // The same columns of the next row group: each task streams many rows in stripes of a few
    // KiB and the hardware prefetchers restart on every row (GEMV 1 x 4096 x 11008 in
    // 1376-column stripes, 2 threads: 3.4 ms without, 3.0 ms with).
    for (int u = 0; u < kKU; ++u) __builtin_prefetch(b.p + (u + ahead) * b.rs + j, 0, 3);
    for (int r = 0; r < kRows; ++r) {
      V acc = Vec::Load(c + r * ldc + j);
      for (int u = 0; u < kKU; ++u) acc = Vec::Fma(av[r][u], bv[u], acc);
      Vec::Store(c + r * ldc + j, acc);
    }
  }
  for (; j < n; ++j)
    for (int r = 0; r < kRows; ++r)
      for (int u = 0; u < kKU; ++u)
        c[r * ldc + j] = __builtin_fmaf(a.At(r, u), b.At(u, j), c[r * ldc + j]);
}

// Few rows times a B of few columns (attention's value tiles: 2-3 probability rows times
// [128 positions, head dim 64-128]): C stays in registers over the whole k, where StreamBlock
// loads and stores it every kKU rows of B, a chain through memory per C vector (in cache, a
// 2 x 128 x 128 f16 product took ~40 % of a decode attention task). The same FMAs in the same
// order per element: the same bits.
constexpr int kRegAccs = kL >= 16 ? 16 : 8;

template <int kRows, int kNV, DT DA, DT DB>
inline void StreamRegs(float* c, int64_t ldc, int64_t k, Src<DA> a, Src<DB> b) {
  V acc[kRows][kNV];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kNV; ++v) acc[r][v] = Vec::Load(c + r * ldc + v * kL);
  constexpr int kRowBytes = kNV * kL * static_cast<int>(sizeof(Memory<DB>));
  // ~4 KiB ahead, past the tile's end into the next one, as StreamRows does.
  constexpr int64_t kAhead = 4096 / kRowBytes > kKU ? 4096 / kRowBytes : kKU;
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int off = 0; off < kRowBytes; off += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(b.p + (kk + kAhead) * b.rs) + off, 0, 3);
    V bv[kNV];
    for (int v = 0; v < kNV; ++v) bv[v] = Vec::Widen<DB>(b.p + kk * b.rs + v * kL);
    for (int r = 0; r < kRows; ++r) {
      const V av = Vec::Set1(a.At(r, kk));
      for (int v = 0; v < kNV; ++v) acc[r][v] = Vec::Fma(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kNV; ++v) Vec::Store(c + r * ldc + v * kL, acc[r][v]);
}

template <DT DA, DT DB>
void StreamRows(float* c, int64_t ldc, int64_t m, int64_t n, int64_t k, Src<DA> a, Src<DB> b) {
  if (n == 4 * kL && m * 4 <= kRegAccs) {
    if (m == 1) return StreamRegs<1, 4>(c, ldc, k, a, b);
    if (m == 2) return StreamRegs<2, 4>(c, ldc, k, a, b);
    if (m == 3) return StreamRegs<3, 4>(c, ldc, k, a, b);
  }
  if (n == 8 * kL && m * 8 <= kRegAccs) {
    if (m == 1) return StreamRegs<1, 8>(c, ldc, k, a, b);
    if (m == 2) return StreamRegs<2, 8>(c, ldc, k, a, b);
  }
  const int64_t cols = std::max<int64_t>(PTOX_CPU_L1_BYTES / 2 / 4 / m / kL * kL, 256);
  for (int64_t j0 = 0; j0 < n; j0 += cols) {
    const int64_t nj = std::min<int64_t>(cols, n - j0);
    float* cj = c + j0;
    // Rows of B prefetched ahead: the next row group, or ~4 KiB ahead on short rows (attention's
    // value tiles, 128-byte rows, past the tile's end into the next one: a few rows ahead hid
    // too little of the memory's latency; 1 x 3 x 2048 f16 positions: 31 -> 23-25 us).
    const int64_t row_bytes = nj * static_cast<int64_t>(sizeof(Memory<DB>));
    const int64_t ahead = std::max<int64_t>(kKU, 4096 / row_bytes);
    int64_t kk = 0;
    for (; kk + kKU <= k; kk += kKU) {
      const Src<DB> bk = b.Offset(kk, j0);
      int64_t i = 0;
      for (; i + 4 <= m; i += 4) StreamBlock<4>(cj + i * ldc, ldc, nj, a.Offset(i, kk), bk, ahead);
      switch (m - i) {
        case 3: StreamBlock<3>(cj + i * ldc, ldc, nj, a.Offset(i, kk), bk, ahead); break;
        case 2: StreamBlock<2>(cj + i * ldc, ldc, nj, a.Offset(i, kk), bk, ahead); break;
        case 1: StreamBlock<1>(cj + i * ldc, ldc, nj, a.Offset(i, kk), bk, ahead); break;
        default: break;
      }
    }
    for (; kk < k; ++kk)
      for (int64_t i = 0; i < m; ++i) {
        const float aik = a.At(i, kk);
        for (int64_t j = 0; j < nj; ++j)
          cj[i * ldc + j] = __builtin_fmaf(aik, b.At(kk, j0 + j), cj[i * ldc + j]);
      }
  }
}

// Few rows, B columns contiguous (a transposed B, as LLM weights are usually stored): each
// output is a dot product along k. B's rows are read once for all the rows of A (in groups of up
// to 3), kS rows at a time a quarter of the product apart: kS forward streams, each with a
// software prefetch kPrefetchBytes ahead. One stream reads at ~60 % of the read bandwidth on
// one thread here (the prefetchers keep too few lines in flight); four with the prefetch at
// ~95 % (bf16 1 x 1024 x 3072 from memory: 9.5 -> 15.7 GB/s, the 4-stream read probe 16.5).
// Each dot keeps 2 x kL partial sums (reordering within the documented bound), reduced at the
// end. A rows must be contiguous too (tiles and row-major views).
constexpr int kDotStreams = kL >= 16 ? 4 : 2;  // AVX2's 16 registers hold two
constexpr int kPrefetchBytes = 2048;

template <int kRows, int kS, DT DA, DT DB>
inline void DotStreams(float* c, int64_t ldc, int64_t k, Src<DA> a,
                       const Unaligned<Memory<DB>>* b, int64_t b_stride, int64_t c_stride) {
  V acc[kS][kRows][2];
  for (int s = 0; s < kS; ++s)
    for (int r = 0; r < kRows; ++r) acc[s][r][0] = acc[s][r][1] = Vec::Zero();
  constexpr int kStepBytes = 2 * kL * static_cast<int>(sizeof(Memory<DB>));
  int64_t kk = 0;
  for (; kk + 2 * kL <= k; kk += 2 * kL) {
    V av[kRows][2];
    for (int r = 0; r < kRows; ++r)
      for (int u = 0; u < 2; ++u) av[r][u] = Vec::Widen<DA>(a.p + r * a.rs + kk + u * kL);
    for (int s = 0; s < kS; ++s) {
      const Unaligned<Memory<DB>>* p = b + s * b_stride + kk;
      for (int off = 0; off < kStepBytes; off += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(p) + kPrefetchBytes + off, 0, 3);
      for (int u = 0; u < 2; ++u) {
        const V bv = Vec::Widen<DB>(p + u * kL);
        for (int r = 0; r < kRows; ++r) acc[s][r][u] = Vec::Fma(av[r][u], bv, acc[s][r][u]);
      }
    }
  }
  for (int s = 0; s < kS; ++s)
    for (int r = 0; r < kRows; ++r) {
      float v = Vec::Sum(Vec::Add(acc[s][r][0], acc[s][r][1]));
      for (int64_t t = kk; t < k; ++t)
        v = __builtin_fmaf(FromMemory<DA>(a.p[r * a.rs + t]),
                           FromMemory<DB>(b[s * b_stride + t]), v);
      c[r * ldc + s * c_stride] += v;
    }
}

#if defined(__AVX512F__)
// Short dot products (attention's query rows times a tile of keys: k = the head dim, 64-256):
// DotStreams' four streams and one horizontal sum per output cost more than the products there
// (a 128-key f16 tile of 3 rows: ~60 % of a decode attention task). Here the keys go in order,
// 8 at a time, each row's 8 partial-sum vectors reduced together by a transpose tree (24
// shuffles and adds for 8 sums, where eight horizontal sums take ~64). Sums in another order
// than the interpreter's, within the documented bound. Each group prefetches the rows
// kShortDotAhead columns ahead (past the tile's end: the next tile's keys, which a loop over the
// cache reads next): the hardware prefetchers alone left a decode attention task over a cache
// in memory at half its speed in the cache (1 x 3 x 2048 f16 positions: 51 -> 31 us).
constexpr int64_t kShortDotMaxK = 256;
constexpr int64_t kShortDotAhead = 32;

// [sum of v[0]'s lanes, ..., sum of v[7]'s lanes].
inline __m256 Sum8(const __m512 (&v)[8]) {
  // Per 128-bit lane, pairs: [a0 + a2, b0 + b2, a1 + a3, b1 + b3].
  __m512 t[4];
  for (int i = 0; i < 4; ++i)
    t[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                         _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  // Per 128-bit lane, quads: that lane's partial sum of four vectors.
  __m512 u[2];
  for (int i = 0; i < 2; ++i) {
    const __m512d x = _mm512_castps_pd(t[2 * i]), y = _mm512_castps_pd(t[2 * i + 1]);
    u[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  // The four 128-bit lanes' partial sums added: [u0 L0+L1, u0 L2+L3, u1 L0+L1, u1 L2+L3], then
  // [u0, u0, u1, u1] whole, and lanes 0 and 2 are the result.
  const __m512 w = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 z = _mm512_add_ps(w, _mm512_shuffle_f32x4(w, w, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_castps512_ps256(_mm512_shuffle_f32x4(z, z, _MM_SHUFFLE(0, 0, 2, 0)));
}

// c[r][j] += a_r . b_j for kRows rows, n columns of B (b_j = b.p + j * b.cs, k-contiguous),
// k a multiple of kL.
template <int kRows, DT DA, DT DB>
void DotShort(float* c, int64_t ldc, int64_t n, int64_t k, Src<DA> a, Src<DB> b) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    V acc[kRows][8];
    for (int r = 0; r < kRows; ++r)
      for (int s = 0; s < 8; ++s) acc[r][s] = Vec::Zero();
    for (int s = 0; s < 8; ++s)
      for (int64_t o = 0; o < k * static_cast<int64_t>(sizeof(Memory<DB>)); o += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(b.p + (j + s + kShortDotAhead) * b.cs) + o,
                           0, 3);
    for (int64_t kk = 0; kk < k; kk += kL) {
      V av[kRows];
      for (int r = 0; r < kRows; ++r) av[r] = Vec::Widen<DA>(a.p + r * a.rs + kk);
      for (int s = 0; s < 8; ++s) {
        const V bv = Vec::Widen<DB>(b.p + (j + s) * b.cs + kk);
        for (int r = 0; r < kRows; ++r) acc[r][s] = Vec::Fma(av[r], bv, acc[r][s]);
      }
    }
    for (int r = 0; r < kRows; ++r) {
      float* cr = c + r * ldc + j;
      _mm256_storeu_ps(cr, _mm256_add_ps(_mm256_loadu_ps(cr), Sum8(acc[r])));
    }
  }
  for (; j < n; ++j) DotStreams<kRows, 1, DA, DB>(c + j, ldc, k, a, b.p + j * b.cs, 0, 0);
}
#endif

template <int kRows, DT DA, DT DB>
void DotRowGroup(float* c, int64_t ldc, int64_t n, int64_t k, Src<DA> a, Src<DB> b) {
#if defined(__AVX512F__)
  if (k <= kShortDotMaxK && k % kL == 0) return DotShort<kRows, DA, DB>(c, ldc, n, k, a, b);
#endif
  const int64_t q = n / kDotStreams;
  for (int64_t j = 0; j < q; ++j)
    DotStreams<kRows, kDotStreams, DA, DB>(c + j, ldc, k, a, b.p + j * b.cs, q * b.cs, q);
  for (int64_t j = q * kDotStreams; j < n; ++j)
    DotStreams<kRows, 1, DA, DB>(c + j, ldc, k, a, b.p + j * b.cs, 0, 0);
}

template <DT DA, DT DB>
void DotRows(float* c, int64_t ldc, int64_t m, int64_t n, int64_t k, Src<DA> a, Src<DB> b) {
  for (int64_t i = 0; i < m; i += 3) {
    switch (std::min<int64_t>(3, m - i)) {
      case 3: DotRowGroup<3, DA, DB>(c + i * ldc, ldc, n, k, a.Offset(i, 0), b); break;
      case 2: DotRowGroup<2, DA, DB>(c + i * ldc, ldc, n, k, a.Offset(i, 0), b); break;
      default: DotRowGroup<1, DA, DB>(c + i * ldc, ldc, n, k, a.Offset(i, 0), b); break;
    }
  }
}

}  // namespace mm
}  // namespace ptox::cpu

#include "kernels/cpu/matmul_bf16.h"

namespace ptox::cpu {
namespace mm {

// Products with fewer rows than this stream B in place: packing B would cost about as much as
// the product when each element of B meets only a few rows of A.
constexpr int64_t kStreamMaxRows = 16;

// Few rows read B in place: packing it would cost about as much as their product. A constant B
// is packed once, not per run, so products of 4 rows or more take the packed kernels then
// (a GEMV reads B once either way). So does a transposed B (B^T's rows contiguous, as LLM
// weights are stored) of 4 rows or more: its in-place kernel, dot products along k, reads B once
// per row of A (16 x 2048 x 6144 f32: 10.5 ms in place, 5.0 packed; a register-blocked version
// reading it once ran no faster than packing).
template <DT DA, DT DB>
void Gemm(Ctx& ctx, float* c, int64_t ldc, int64_t m, int64_t n, int64_t k, Src<DA> a, Src<DB> b) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  const bool in_place = m < 4 || (m <= kStreamMaxRows && b.packed == nullptr && b.cs == 1);
#ifdef PTOX_CPU_MATMUL_BF16
  if constexpr (DA == DT::kBF16 && DB == DT::kBF16) {
#ifdef PTOX_CPU_MATMUL_BF16_STREAM
    if (in_place && m >= 4) return StreamRowsDp(c, ldc, m, n, k, a, b);
#endif
    if (!in_place) return GemmPackedDp(ctx, c, ldc, m, n, k, a, b);
  }
#endif
  if (in_place && b.cs == 1) {
    if (m < 4)
      StreamRows<DA, DB>(c, ldc, m, n, k, a, b);
    else
      GemmDirectB<DA, DB>(c, ldc, m, n, k, a, b);
  } else if (in_place && b.rs == 1 && a.cs == 1) {
    DotRows<DA, DB>(c, ldc, m, n, k, a, b);
  } else if (DA == DT::kF32 && a.cs == 1 && b.cs == 1 && b.packed == nullptr &&
             (m + n) * k * 4 <= kSmallBytes) {
    if constexpr (DA == DT::kF32) GemmSmall<DB>(c, ldc, m, n, k, a, b);
  } else {
    GemmPacked<DA, DB>(ctx, c, ldc, m, n, k, a, b);
  }
}

#endif  // PTOX_CPU_MATMUL_SIMD

}  // namespace mm

// o (f32, holding the starting values) += a * b (B transposed: a * b^T) over the valid region:
// rows < a.vr, columns < B's valid columns, k < K_valid. Operands are tiles or views.
template <bool kTransB, typename O, typename A, typename B>
void MatmulInto(Ctx& ctx, O& o, const A& a, const B& b) {
  static_assert(IsFloatDT(A::kDType) && IsFloatDT(B::kDType), "matmul takes float operands");
  const int64_t k = std::min<int64_t>(a.vc, kTransB ? b.vc : b.vr);
  const int64_t m = std::min<int64_t>(a.vr, O::kRows);
  const int64_t n = std::min<int64_t>(kTransB ? b.vr : b.vc, O::kCols);
  auto bs = kTransB ? mm::SrcOf(b).Transposed() : mm::SrcOf(b);
#ifdef PTOX_CPU_MATMUL_SIMD
  mm::Gemm(ctx, o.v, O::kCols, m, n, k, mm::SrcOf(a), bs);
#else
  mm::GemmExact(o.v, O::kCols, m, n, k, mm::SrcOf(a), bs);
#endif
}

template <bool kTransB, typename O, typename A, typename B>
void Matmul(Ctx& ctx, O& o, const A& a, const B& b) {
  std::fill(o.v, o.v + O::kRows * O::kCols, 0.0f);
  MatmulInto<kTransB>(ctx, o, a, b);
  o.vr = a.vr;
  o.vc = kTransB ? b.vr : b.vc;
}

template <bool kTransB, typename O, typename A, typename B>
void MatmulAcc(Ctx& ctx, O& o, const O& c, const A& a, const B& b) {
  if (&o != &c) o = c;
  MatmulInto<kTransB>(ctx, o, a, b);
  o.vr = std::min<int64_t>(c.vr, a.vr);
  o.vc = std::min<int64_t>(c.vc, kTransB ? b.vr : b.vc);
}

// matmul_acc into a K loop's accumulator whose tile.full the CPU emitter deferred to here: a
// tensor-level matmul of symbolic shape gets tiles sized for large problems (512 x 1024, 2 MiB)
// while its products may cover a few rows, and filling all of it cost 13x the product (16 heads
// of 16 x 16 x 128). Before each product, the part of the tile's top-left rows x cols rectangle
// that now bounds every product so far, beyond what was set (filled_rows x filled_cols; -1
// before the first product), is set to the full's value. The rest is padding, which no op
// carries into a valid result (docs/ops.md); the emitter fills the whole tile after a loop that
// ran no product.
template <typename O, typename X>
void FillForProduct(Ctx& ctx, O& o, int64_t product_rows, int64_t product_cols, X value,
                    int64_t& filled_rows, int64_t& filled_cols, const char* where) {
  if (filled_rows < 0) filled_rows = filled_cols = 0, o.vr = O::kRows, o.vc = O::kCols;
  const int64_t rows = std::max<int64_t>(filled_rows, std::min<int64_t>(product_rows, O::kRows));
  const int64_t cols = std::max<int64_t>(filled_cols, std::min<int64_t>(product_cols, O::kCols));
  const auto s = ScalarAs<O::kDType>(ctx, value, where);
  for (int64_t r = 0; r < rows; ++r)
    std::fill(o.v + r * O::kCols + (r < filled_rows ? filled_cols : 0), o.v + r * O::kCols + cols,
              s);
  filled_rows = rows, filled_cols = cols;
}

template <bool kTransB, typename O, typename A, typename B, typename X>
void MatmulAccOnFull(Ctx& ctx, O& o, const A& a, const B& b, X value, int64_t& filled_rows,
                     int64_t& filled_cols, const char* where) {
  FillForProduct(ctx, o, a.vr, kTransB ? b.vr : b.vc, value, filled_rows, filled_cols, where);
  MatmulAcc<kTransB>(ctx, o, o, a, b);
}

}  // namespace ptox::cpu
