// tile.qmatmul_acc on CPU: f32 activations times GGUF weight blocks read where they lie, with the
// bits of kernels/quant.h's definition. The activations are quantized once per task row; then
// integer dot products (VNNI vpdpbusd where the build has it, else vpmaddubsw + vpmaddwd: the
// same exact sums of 4 products per 32-bit lane) give the definition's lane sums, each scaled
// by its block's d_w * dx into the lane the definition names. A 256-bit kernel (AVX2, and
// few-row products on AVX-512) interleaves 8 weight rows; a 512-bit one (AVX-512) 4 activation
// rows. Scalar builds run the definition itself.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/core.h"
#include "kernels/cpu/matmul.h"
#include "kernels/quant.h"

namespace ptox::cpu {
namespace qmm {

using quant::ActBlock;
using quant::Format;

// The activation rows of a task, quantized: blocks [row][block].
inline std::vector<ActBlock>& ActBuffer() {
  thread_local std::vector<ActBlock> buf;
  return buf;
}

#if defined(__AVX2__)
// quant::QuantizeBlock in 256-bit registers, the same operations per value: |x|'s max (vmaxps
// keeps the running max when |x| is NaN, as the definition's compare does), one product by
// 127 / amax, the clamp, and vcvtps2dq's round to nearest even (the default mode, as nearbyint).
// A block with a NaN or an infinity: q = 0 and dx = NaN, as the definition gives.
inline void QuantizeAct(const float* x, ActBlock* out) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4], amax8 = _mm256_setzero_ps();
  __m256 finite = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    const __m256 a = _mm256_andnot_ps(sign, v[i]);
    finite = _mm256_and_ps(finite, _mm256_cmp_ps(a, _mm256_set1_ps(3.40282347e38f), _CMP_LE_OQ));
    amax8 = _mm256_max_ps(a, amax8);
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax8), _mm256_extractf128_ps(amax8, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
  if (_mm256_movemask_ps(finite) != 0xFF) {
    std::memset(out->q, 0, sizeof out->q);
    out->d = out->dsum = NAN;
    return;
  }
  const __m256 inv = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
  __m256i q[4], sum = _mm256_setzero_si256();
  for (int i = 0; i < 4; ++i) {
    __m256 c = _mm256_mul_ps(v[i], inv);
    c = _mm256_and_ps(c, _mm256_cmp_ps(c, c, _CMP_ORD_Q));  // 0 * inf: 0
    c = _mm256_min_ps(_mm256_max_ps(c, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    q[i] = _mm256_cvtps_epi32(c);
    sum = _mm256_add_epi32(sum, q[i]);
  }
  // Packing interleaves 128-bit lanes: [0-3 8-11 | 4-7 12-15] per pack; put them back in order.
  const __m256i w =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out->q),
                      _mm256_permutevar8x32_epi32(w, _mm256_set_epi32(7, 3, 6, 2, 5, 1, 4, 0)));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
  out->d = amax / 127.0f;
  out->dsum = out->d * static_cast<float>(_mm_cvtsi128_si32(s4));
}
#else
inline void QuantizeAct(const float* x, ActBlock* out) { quant::QuantizeBlock(x, out); }
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)

// Per row and block pair (2p, 2p+1): the 64 int8 values, dx per lane (lanes 0-7 the even block's,
// 8-15 the odd one's) and q4_0's correction 8 * (sum of each lane's 4 values); a missing odd
// block is zeros (adding it changes no lane: the lanes are never -0).
struct alignas(64) PairAct {
  int8_t q[64];
  float dx[16];
  int32_t corr[16];
};

inline __m512i LaneDot(__m512i u, __m512i s) {  // sum of 4 u8 x s8 products per 32-bit lane
#if defined(__AVX512VNNI__)
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s);
#else
  return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1));
#endif
}

// The weights of blocks 2p and 2p+1 of a row as u8 (q4: the nibbles; q8_0: their magnitudes),
// the scale d_w per lane and q4_1's offsets m_w (F16C converts f16 exactly, as quant.h does).
template <Format F>
inline void LoadPair(const uint8_t* w, bool odd, __m512i* u, __m512* dw, __mmask64* neg,
                     float* m0, float* m1) {
  constexpr int kBytes = quant::BlockBytes(F);
  const uint8_t* w1 = w + kBytes;
  int32_t h0, h1 = 0;  // d (and m) of each block
  std::memcpy(&h0, w, 4);
  if (odd) std::memcpy(&h1, w1, 4);
  const __m512 dm = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_set_epi32(0, 0, h1, h0)));
  *dw = _mm512_permutexvar_ps(_mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0), dm);
  if constexpr (F == Format::kQ4_1) {
    alignas(16) float v[4];
    _mm_store_ps(v, _mm512_castps512_ps128(dm));
    *m0 = v[1], *m1 = v[3];
  }
  if constexpr (F == Format::kQ8_0) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2));
    const __m256i b = odd ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + 2))
                          : _mm256_setzero_si256();
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    *neg = _mm512_movepi8_mask(v);
    *u = _mm512_abs_epi8(v);
  } else {
    constexpr int kOff = F == Format::kQ4_0 ? 2 : 4;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + kOff));
    const __m128i b =
        odd ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(w1 + kOff)) : _mm_setzero_si128();
    // [a, a, b, b], the 2nd and 4th quarters shifted right by 4: low nibbles, then high ones.
    const __m512i v = _mm512_permutexvar_epi64(
        _mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0),
        _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1)));
    const __m512i shifts = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
    *u = _mm512_and_si512(_mm512_srlv_epi64(v, shifts), _mm512_set1_epi8(0x0F));
    *neg = 0;
  }
}

// kCols weight rows (wstride bytes apart) times kRows activation rows (their pair blocks at x,
// `pairs` apart), added to out[r * ldo + c * ostride] (q4_1's offsets from the ActBlocks at xb,
// `blocks` apart). Each output's lanes and offset sum are a chain of dependent FMAs; the
// kRows x kCols chains run interleaved (one row's alone waited on its FMA latency: 8 cycles per
// block pair). Each weight row is read with a software prefetch kPrefetchBytes ahead: rows of a
// few hundred bytes are too short for the hardware prefetcher to find them (a 49152 x 576 q8_0
// LM head: 4.4 -> 3.2 ms), and with a single row at a time (decode) the caller spreads the
// kCols rows over the product (matmul.h DotStreams).
template <Format F, int kRows, int kCols>
inline void RowsTimesRows(const uint8_t* w, int64_t wstride, int64_t blocks, const PairAct* x,
                          int64_t pairs, const ActBlock* xb, float* out, int64_t ldo,
                          int64_t ostride) {
  constexpr int kBytes = quant::BlockBytes(F);
  __m512 acc[kRows][kCols];
  float m[kRows][kCols];
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) acc[r][c] = _mm512_setzero_ps(), m[r][c] = 0.0f;
  // One pair of blocks; `odd` (the pair has its second block) a constant and the loops
  // unrolled, so that the accumulators stay in registers.
  auto pair = [&](int64_t p, auto odd_tag) __attribute__((always_inline)) {
    constexpr bool odd = decltype(odd_tag)::value;
#pragma GCC unroll 8
    for (int c = 0; c < kCols; ++c) {
      const uint8_t* wp = w + c * wstride + 2 * p * kBytes;
      _mm_prefetch(reinterpret_cast<const char*>(wp) + mm::kPrefetchBytes, _MM_HINT_T0);
      __m512i u;
      __m512 dw;
      __mmask64 neg;
      float m0 = 0, m1 = 0;
      LoadPair<F>(wp, odd, &u, &dw, &neg, &m0, &m1);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const PairAct& a = x[r * pairs + p];
        __m512i s = _mm512_load_si512(a.q);
        if constexpr (F == Format::kQ8_0)
          s = _mm512_mask_sub_epi8(s, neg, _mm512_setzero_si512(), s);
        __m512i lanes = LaneDot(u, s);
        if constexpr (F == Format::kQ4_0)
          lanes = _mm512_sub_epi32(lanes, _mm512_load_si512(a.corr));
        const __m512 scale = _mm512_mul_ps(dw, _mm512_load_ps(a.dx));
        acc[r][c] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(lanes), acc[r][c]);
        if constexpr (F == Format::kQ4_1) {  // the offsets in block order
          m[r][c] = std::fma(m0, xb[r * blocks + 2 * p].dsum, m[r][c]);
          if (odd) m[r][c] = std::fma(m1, xb[r * blocks + 2 * p + 1].dsum, m[r][c]);
        }
      }
    }
  };
  for (int64_t p = 0; p < blocks / 2; ++p) pair(p, std::true_type{});
  if (blocks % 2) pair(blocks / 2, std::false_type{});
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kCols; ++c) {  // quant::Tree's order
      const __m512 v16 = acc[r][c];
      const __m256 v8 =
          _mm256_add_ps(_mm512_castps512_ps256(v16), _mm512_extractf32x8_ps(v16, 1));
      const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
      const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
      const float t = _mm_cvtss_f32(_mm_add_ss(v2, _mm_movehdup_ps(v2)));
      out[r * ldo + c * ostride] = quant::Out(out[r * ldo + c * ostride], t + m[r][c]);
    }
  }
}

inline std::vector<PairAct>& PairBuffer() {
  thread_local std::vector<PairAct> buf;
  return buf;
}

// The ActBlocks of `rows` rows regrouped in pairs for the kernel above.
inline void MakePairs(const ActBlock* xb, int64_t rows, int64_t blocks, PairAct* out) {
  const int64_t pairs = (blocks + 1) / 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t p = 0; p < pairs; ++p) {
      PairAct& a = out[r * pairs + p];
      for (int h = 0; h < 2; ++h) {
        const int64_t b = 2 * p + h;
        if (b >= blocks) {
          std::fill(a.q + 32 * h, a.q + 32 * h + 32, int8_t{0});
          std::fill(a.dx + 8 * h, a.dx + 8 * h + 8, 0.0f);
          std::fill(a.corr + 8 * h, a.corr + 8 * h + 8, 0);
          continue;
        }
        const ActBlock& x = xb[r * blocks + b];
        std::copy(x.q, x.q + 32, a.q + 32 * h);
        for (int l = 0; l < 8; ++l) {
          a.dx[8 * h + l] = x.d;
          a.corr[8 * h + l] = 8 * (x.q[4 * l] + x.q[4 * l + 1] + x.q[4 * l + 2] + x.q[4 * l + 3]);
        }
      }
    }
  }
}

#endif  // AVX-512

#if defined(__AVX2__) && defined(__F16C__)

// The 256-bit kernel (AVX2 builds, and few-row products on AVX-512, where it ran 1.4x faster
// than the 512-bit one: no cross-lane shuffles). A pair of blocks (2p, 2p+1) is two registers of
// 32 bytes, `lo` = [block 2p's values 0-15 | block 2p+1's values 0-15] and `hi` = their values
// 16-31, so the q4 nibbles need no shuffle: lanes of lo are the definition's lanes 0-3 and 8-11,
// lanes of hi its lanes 4-7 and 12-15, each scaled by its block's d_w * dx.
struct alignas(32) HalfAct {
  int8_t lo[32], hi[32];
  float dx[8];            // dx of block 2p (lanes 0-3) and 2p+1 (4-7); 0 for a missing block
  int32_t clo[8], chi[8]; // q4_0 only: 8 * the sum of each lane's 4 values
};

template <Format F>
void MakeHalves(const ActBlock* xb, int64_t rows, int64_t blocks, HalfAct* out) {
  const int64_t pairs = (blocks + 1) / 2;
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t p = 0; p < pairs; ++p) {
      HalfAct& a = out[r * pairs + p];
      const ActBlock& x0 = xb[r * blocks + 2 * p];
      const ActBlock* x1 = 2 * p + 1 < blocks ? &x0 + 1 : nullptr;
      const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0.q));
      const __m256i q1 = x1 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1->q))
                            : _mm256_setzero_si256();
      const __m256i lo = _mm256_permute2x128_si256(q0, q1, 0x20);  // values 0-15 of each
      const __m256i hi = _mm256_permute2x128_si256(q0, q1, 0x31);  // values 16-31
      _mm256_store_si256(reinterpret_cast<__m256i*>(a.lo), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(a.hi), hi);
      _mm256_store_ps(a.dx, _mm256_insertf128_ps(_mm256_set1_ps(x0.d),
                                                 _mm_set1_ps(x1 ? x1->d : 0.0f), 1));
      if constexpr (F == Format::kQ4_0) {  // 8 * each lane's 4 values: exact (<= 4 * 127)
        auto corr = [&](__m256i v) {
          const __m256i pairs16 = _mm256_maddubs_epi16(ones, v);
          return _mm256_slli_epi32(_mm256_madd_epi16(pairs16, _mm256_set1_epi16(1)), 3);
        };
        _mm256_store_si256(reinterpret_cast<__m256i*>(a.clo), corr(lo));
        _mm256_store_si256(reinterpret_cast<__m256i*>(a.chi), corr(hi));
      }
    }
  }
}

inline __m256i LaneDot256(__m256i u, __m256i s) {  // 4 u8 x s8 products per 32-bit lane, exact
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#elif defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
#else  // pairs of products fit i16: q4 15 * 127 * 2, q8_0 magnitudes 128 * 127 * 2
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// kCols weight rows (wstride bytes apart) times one activation row, added to
// out[c * ostride]; each weight row read with a software prefetch ahead (see RowsTimesRows).
template <Format F, int kCols>
inline void RowsTimesRow(const uint8_t* w, int64_t wstride, int64_t blocks, const HalfAct* x,
                         const ActBlock* xb, float* out, int64_t ostride) {
  constexpr int kBytes = quant::BlockBytes(F);
  __m256 lo_acc[kCols], hi_acc[kCols];
  float m[kCols];
  for (int c = 0; c < kCols; ++c)
    lo_acc[c] = hi_acc[c] = _mm256_setzero_ps(), m[c] = 0.0f;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i spread = _mm256_set_epi32(2, 2, 2, 2, 0, 0, 0, 0);
  // One pair of blocks for the kCols rows; `odd` (the pair has its second block) a constant, and
  // the rows' loop unrolled, so that the accumulators stay in registers.
  auto pair = [&](int64_t p, auto odd_tag) __attribute__((always_inline)) {
    constexpr bool odd = decltype(odd_tag)::value;
    const HalfAct& a = x[p];
    const __m256i xlo = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.lo));
    const __m256i xhi = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.hi));
    const __m256 dx = _mm256_load_ps(a.dx);
#pragma GCC unroll 16
    for (int c = 0; c < kCols; ++c) {
      const uint8_t* w0 = w + c * wstride + 2 * p * kBytes;
      const uint8_t* w1 = w0 + kBytes;
      _mm_prefetch(reinterpret_cast<const char*>(w0) + mm::kPrefetchBytes, _MM_HINT_T0);
      int32_t h0, h1 = 0;  // d (and q4_1's m) of each block, converted exactly by F16C
      std::memcpy(&h0, w0, 4);
      if (odd) std::memcpy(&h1, w1, 4);
      const __m128 dm = _mm_cvtph_ps(_mm_set_epi32(0, 0, h1, h0));
      const __m256 scale =
          _mm256_mul_ps(_mm256_permutevar8x32_ps(_mm256_castps128_ps256(dm), spread), dx);
      __m256i dlo, dhi;
      if constexpr (F == Format::kQ8_0) {
        auto half = [&](int off) {
          const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w0 + 2 + off));
          const __m128i a1 = odd ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(w1 + 2 + off))
                                 : _mm_setzero_si128();
          return _mm256_inserti128_si256(_mm256_castsi128_si256(a0), a1, 1);
        };
        const __m256i wlo = half(0), whi = half(16);  // signs moved onto the activations
        dlo = LaneDot256(_mm256_abs_epi8(wlo), _mm256_sign_epi8(xlo, wlo));
        dhi = LaneDot256(_mm256_abs_epi8(whi), _mm256_sign_epi8(xhi, whi));
      } else {
        constexpr int kOff = F == Format::kQ4_0 ? 2 : 4;
        const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w0 + kOff));
        const __m128i q1 = odd ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(w1 + kOff))
                               : _mm_setzero_si128();
        const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
        dlo = LaneDot256(_mm256_and_si256(v, nibble), xlo);
        dhi = LaneDot256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), xhi);
        if constexpr (F == Format::kQ4_0) {
          dlo = _mm256_sub_epi32(dlo, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.clo)));
          dhi = _mm256_sub_epi32(dhi, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.chi)));
        }
      }
      lo_acc[c] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dlo), lo_acc[c]);
      hi_acc[c] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dhi), hi_acc[c]);
      if constexpr (F == Format::kQ4_1) {  // the offsets in block order
        m[c] = std::fma(_mm_cvtss_f32(_mm_movehdup_ps(dm)), xb[2 * p].dsum, m[c]);
        if (odd) m[c] = std::fma(_mm_cvtss_f32(_mm_shuffle_ps(dm, dm, 3)), xb[2 * p + 1].dsum, m[c]);
      }
    }
  };
  for (int64_t p = 0; p < blocks / 2; ++p) pair(p, std::true_type{});
  if (blocks % 2) pair(blocks / 2, std::false_type{});
  for (int c = 0; c < kCols; ++c) {
    // The lanes in the definition's order are [lo 0-3, hi 0-3, lo 4-7, hi 4-7]: quant::Tree
    // first adds lane i and i + 8, i.e. lo's halves and hi's halves.
    const __m128 v8lo = _mm_add_ps(_mm256_castps256_ps128(lo_acc[c]), _mm256_extractf128_ps(lo_acc[c], 1));
    const __m128 v8hi = _mm_add_ps(_mm256_castps256_ps128(hi_acc[c]), _mm256_extractf128_ps(hi_acc[c], 1));
    const __m128 v4 = _mm_add_ps(v8lo, v8hi);
    const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    const float t = _mm_cvtss_f32(_mm_add_ss(v2, _mm_movehdup_ps(v2)));
    out[c * ostride] = quant::Out(out[c * ostride], t + m[c]);
  }
}

inline std::vector<HalfAct>& HalfBuffer() {
  thread_local std::vector<HalfAct> buf;
  return buf;
}

#endif  // AVX2

#if defined(__AVX512F__) && defined(__AVX512BW__)
// w8a8: the task's activation rows quantized whole (kernels/quant.h QuantizeRow): K int8 per row,
// with the row's s_a and the exact sum of its q (the VNNI kernel's offset correction).
struct W8A8Act {
  std::vector<int8_t> q;
  std::vector<float> sa;
  std::vector<int32_t> qsum;
};

inline W8A8Act& W8A8Buffer() {
  thread_local W8A8Act buf;
  return buf;
}

// quant::QuantizeRow(kW8A8) in 512-bit registers, the same operations per value: |x|'s max over
// the row (vmaxps keeps the running max when |x| is NaN, as the definition's compare does; a max
// is exact in any order), one product by 127 / amax, NaN to 0, the clamp, and vcvtps2dq's round
// to nearest even (the default mode, as nearbyint). The scalar loop took ~1 us of a 10 us
// decode task at K = 1024, and every task of a GEMV quantizes the same row.
inline void QuantizeW8A8(const float* a, int64_t lda, int64_t m, int64_t blocks, W8A8Act& x) {
  const int64_t k = blocks * quant::kBlock;  // a multiple of 16
  x.q.resize(static_cast<size_t>(std::max<int64_t>(1, m * k)));
  x.sa.resize(static_cast<size_t>(m));
  x.qsum.resize(static_cast<size_t>(m));
  const __m512 big = _mm512_set1_ps(3.40282347e38f);
  for (int64_t i = 0; i < m; ++i) {
    const float* r = a + i * lda;
    __m512 amax16 = _mm512_setzero_ps();
    __mmask16 bad = 0;
    for (int64_t j = 0; j < k; j += 16) {
      const __m512 v = _mm512_abs_ps(_mm512_loadu_ps(r + j));
      bad |= _mm512_cmp_ps_mask(v, big, _CMP_NLE_UQ);  // NaN or infinity
      amax16 = _mm512_max_ps(v, amax16);
    }
    const float amax = _mm512_reduce_max_ps(amax16);
    const __m512 inv = _mm512_set1_ps(quant::InvScale(amax, bad == 0));
    __m512i sum = _mm512_setzero_si512();
    int8_t* q = x.q.data() + i * k;
    for (int64_t j = 0; j < k; j += 16) {
      __m512 c = _mm512_mul_ps(_mm512_loadu_ps(r + j), inv);
      c = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(c, c, _CMP_ORD_Q), c);  // 0 * inf: 0
      c = _mm512_min_ps(_mm512_max_ps(c, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
      const __m512i qi = _mm512_cvtps_epi32(c);
      sum = _mm512_add_epi32(sum, qi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + j), _mm512_cvtepi32_epi8(qi));
    }
    x.sa[i] = blocks == 0 ? 0.0f : bad == 0 ? amax / 127.0f : NAN;
    x.qsum[i] = _mm512_reduce_add_epi32(sum);
  }
}

// The exact int32 sum of products of 64 int8 pairs into 16 lanes. With VNNI, vpdpbusd takes
// unsigned bytes first: w + 128 (w ^ 0x80) times q sums to w.q + 128 * sum(q), and the caller
// subtracts 128 * sum(q) once per row; the lanes wrap mod 2^32, which leaves the final sum
// exact whenever it fits in int32 (K <= kW8A8MaxK). Without VNNI both widen to int16
// (vpmaddwd: exact pairs of products).
inline __m512i W8A8Dot(__m512i acc, __m512i w, __m512i q) {
#if defined(__AVX512VNNI__)
  return _mm512_dpbusd_epi32(acc, _mm512_xor_si512(w, _mm512_set1_epi8(-128)), q);
#else
  const __m512i lo = _mm512_madd_epi16(_mm512_cvtepi8_epi16(_mm512_castsi512_si256(w)),
                                       _mm512_cvtepi8_epi16(_mm512_castsi512_si256(q)));
  const __m512i hi = _mm512_madd_epi16(_mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(w, 1)),
                                       _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(q, 1)));
  return _mm512_add_epi32(acc, _mm512_add_epi32(lo, hi));
#endif
}
#if defined(__AVX512VNNI__)
constexpr int32_t kW8A8Offset = 128;
#else
constexpr int32_t kW8A8Offset = 0;
#endif

// R activation rows times C weight rows `wstride` bytes apart: out[r * ldo + c * ostride] gets
// the definition's epilogue. Each weight row is a stream read with a software prefetch ahead
// (matmul.h DotStreams: several streams far apart read near the bandwidth, one does not).
template <int R, int C>
inline void W8A8Tile(const uint8_t* w, int64_t wstride, int64_t blocks, const W8A8Act& x,
                     int64_t i, float* out, int64_t ldo, int64_t ostride) {
  const int64_t k = blocks * quant::kBlock;
  const int8_t* q = x.q.data() + i * k;
  __m512i acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_si512();
  for (int64_t kk = 0; kk < k; kk += 64) {
    const __mmask64 live = k - kk >= 64 ? ~__mmask64{0} : (__mmask64{1} << (k - kk)) - 1;
    __m512i wv[C];
    for (int c = 0; c < C; ++c) {
      _mm_prefetch(reinterpret_cast<const char*>(w + c * wstride + kk) + mm::kPrefetchBytes,
                   _MM_HINT_T0);
      wv[c] = _mm512_maskz_loadu_epi8(live, w + c * wstride + kk);
    }
    for (int r = 0; r < R; ++r) {
      const __m512i qv = _mm512_maskz_loadu_epi8(live, q + r * k + kk);
      for (int c = 0; c < C; ++c) acc[r][c] = W8A8Dot(acc[r][c], wv[c], qv);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const int32_t sum = static_cast<int32_t>(
          static_cast<uint32_t>(_mm512_reduce_add_epi32(acc[r][c])) -
          static_cast<uint32_t>(kW8A8Offset) * static_cast<uint32_t>(x.qsum[i + r]));
      float& o = out[r * ldo + c * ostride];
      o = quant::W8A8Out(sum, x.sa[i + r], quant::RowScale(w + c * wstride, blocks), o);
    }
}
#endif

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD) && !defined(PTOX_CPU_SCALAR)
// quant::RowDot on Arm's SDOT (FEAT_DotProd: built with +dotprod where the host has it): a lane of
// SDOT sums 4 int8 x int8 products into an int32, as a lane of the definition does, so one block
// is two SDOTs (values 0-15: lanes 0-3, 16-31: lanes 4-7) and each lane's FMA by the block's
// d_w * dx is the definition's fma; the lanes' tree and q4_1's offsets are its own code. w8a8
// sums the whole row's products in 4 int32 lanes (wrapping mod 2^32 as the VNNI kernel does:
// exact whenever the sum fits, K <= kW8A8MaxK).
inline float SdotRowDot(Format f, const uint8_t* w, const ActBlock* x, int64_t blocks,
                        float acc) {
  const int32x4_t zero = vdupq_n_s32(0);
  if (f == Format::kW8A8) {
    if (blocks == 0) return quant::Out(acc, 0.0f);
    int32x4_t sum = zero;
    for (int64_t b = 0; b < blocks; ++b)
      for (int h = 0; h < 2; ++h)
        sum = vdotq_s32(sum, vld1q_s8(reinterpret_cast<const int8_t*>(w) + b * 32 + 16 * h),
                        vld1q_s8(x[b].q + 16 * h));
    const auto total = static_cast<int32_t>(vaddvq_u32(vreinterpretq_u32_s32(sum)));
    return quant::W8A8Out(total, x[0].d, quant::RowScale(w, blocks), acc);
  }
  float32x4_t lanes[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                          vdupq_n_f32(0.0f)};  // the definition's lanes 0-3, ..., 12-15
  float m = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * quant::BlockBytes(f);
    int8x16_t lo, hi;  // the block's integer values 0-15 and 16-31 (quant::BlockInts)
    if (f == Format::kQ8_0) {
      lo = vld1q_s8(reinterpret_cast<const int8_t*>(wb + 2));
      hi = vld1q_s8(reinterpret_cast<const int8_t*>(wb + 18));
    } else {
      const uint8x16_t qs = vld1q_u8(wb + (f == Format::kQ4_0 ? 2 : 4));
      lo = vreinterpretq_s8_u8(vandq_u8(qs, vdupq_n_u8(0xF)));
      hi = vreinterpretq_s8_u8(vshrq_n_u8(qs, 4));
      if (f == Format::kQ4_0) {
        lo = vsubq_s8(lo, vdupq_n_s8(8));
        hi = vsubq_s8(hi, vdupq_n_s8(8));
      }
    }
    const float s = quant::BlockD(wb) * x[b].d;
    float32x4_t* half = lanes + 2 * (b % 2);
    half[0] = vfmaq_n_f32(half[0], vcvtq_f32_s32(vdotq_s32(zero, lo, vld1q_s8(x[b].q))), s);
    half[1] = vfmaq_n_f32(half[1], vcvtq_f32_s32(vdotq_s32(zero, hi, vld1q_s8(x[b].q + 16))), s);
    if (f == Format::kQ4_1) m = std::fma(quant::BlockM(wb), x[b].dsum, m);
  }
  float l[quant::kLanes];
  for (int i = 0; i < 4; ++i) vst1q_f32(l + 4 * i, lanes[i]);
  return quant::Out(acc, quant::Tree(l) + m);
}
constexpr auto* kRowDot = &SdotRowDot;
#else
constexpr auto* kRowDot = &quant::RowDot;
#endif

// out[i * ldo + j] += the definition's product (quant::RowDot) of activation row i's quantized
// blocks (xb, `blocks` per row) with w's row j: the kernels' fallback.
inline void RowDots(Format f, float* out, int64_t ldo, int64_t m, int64_t n, int64_t blocks,
                    const ActBlock* xb, const uint8_t* w, int64_t ldw) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      out[i * ldo + j] = kRowDot(f, w + j * ldw, xb + i * blocks, blocks, out[i * ldo + j]);
}

// out[i * ldo + j] += a's row i times w's row j (w8a8).
inline void W8A8Gemm(float* out, int64_t ldo, int64_t m, int64_t n, int64_t blocks,
                     const float* a, int64_t lda, const uint8_t* w, int64_t ldw) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if (blocks > 0) {
    W8A8Act& x = W8A8Buffer();
    QuantizeW8A8(a, lda, m, blocks, x);
    // 4 x 2 register blocks of adjacent rows (prefill), or per activation row four weight rows
    // a quarter of the product apart (decode: four streams).
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      float* o = out + i * ldo;
      int64_t j = 0;
      for (; j + 2 <= n; j += 2) W8A8Tile<4, 2>(w + j * ldw, ldw, blocks, x, i, o + j, ldo, 1);
      for (; j < n; ++j) W8A8Tile<4, 1>(w + j * ldw, ldw, blocks, x, i, o + j, ldo, 1);
    }
    const int64_t q = n / 4;
    for (; i < m; ++i) {
      float* o = out + i * ldo;
      for (int64_t j = 0; j < q; ++j)
        W8A8Tile<1, 4>(w + j * ldw, q * ldw, blocks, x, i, o + j, ldo, q);
      for (int64_t j = 4 * q; j < n; ++j)
        W8A8Tile<1, 1>(w + j * ldw, ldw, blocks, x, i, o + j, ldo, 1);
    }
    return;
  }
#endif
  // The definition itself (kernels/quant.h): K = 0, and builds without AVX-512.
  std::vector<ActBlock>& xb = ActBuffer();
  xb.resize(static_cast<size_t>(std::max<int64_t>(1, m * blocks)));
  for (int64_t i = 0; i < m; ++i)
    quant::QuantizeRow(Format::kW8A8, a + i * lda, blocks, xb.data() + i * blocks);
  RowDots(Format::kW8A8, out, ldo, m, n, blocks, xb.data(), w, ldw);
}

// out[i * ldo + j] += a's row i times w's row j, for i < m, j < n, over `blocks` blocks.
template <Format F>
void QGemm(float* out, int64_t ldo, int64_t m, int64_t n, int64_t blocks, const float* a,
           int64_t lda, const uint8_t* w, int64_t ldw) {
  if (m <= 0 || n <= 0) return;
  if constexpr (F == Format::kW8A8) {
    return W8A8Gemm(out, ldo, m, n, blocks, a, lda, w, ldw);
  } else {
  std::vector<ActBlock>& xb = ActBuffer();
  xb.resize(static_cast<size_t>(std::max<int64_t>(1, m * blocks)));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t b = 0; b < blocks; ++b)
      QuantizeAct(a + i * lda + b * quant::kBlock, &xb[i * blocks + b]);
#if defined(__AVX512F__) && defined(__AVX512BW__)
  // The 512-bit kernel: 8 (or 4) activation rows per weight row (prefill; 128 x 1536 x 576
  // q4_1: 2.6 ms with 4, 2.5 with 8), or q8_0's few rows 4 weight rows at a time (a 49152 x 576
  // LM head: 4.2 ms, the 256-bit kernel 4.9; q4 formats the other way round: 1536 x 576 q4_1
  // 34 vs 28 us).
  if (m >= 4 || F == Format::kQ8_0) {
    const int64_t pairs = (blocks + 1) / 2;
    std::vector<PairAct>& xp = PairBuffer();
    xp.resize(static_cast<size_t>(m * pairs));
    MakePairs(xb.data(), m, blocks, xp.data());
    for (int64_t i = 0; i < m;) {
      const int64_t rows = m - i >= 8 ? 8 : m - i >= 4 ? 4 : 1;
      const PairAct* xr = xp.data() + i * pairs;
      const ActBlock* br = xb.data() + i * blocks;
      float* o = out + i * ldo;
      int64_t j = 0;
      if (rows == 8) {
        for (; j < n; ++j)
          RowsTimesRows<F, 8, 1>(w + j * ldw, ldw, blocks, xr, pairs, br, o + j, ldo, 1);
      } else if (rows == 4) {
        for (; j < n; ++j)
          RowsTimesRows<F, 4, 1>(w + j * ldw, ldw, blocks, xr, pairs, br, o + j, ldo, 1);
      } else {  // four weight rows a quarter of the product apart: four streams
        const int64_t q = n / 4;
        for (; j < q; ++j)
          RowsTimesRows<F, 1, 4>(w + j * ldw, q * ldw, blocks, xr, pairs, br, o + j, ldo, q);
        for (j = 4 * q; j < n; ++j)
          RowsTimesRows<F, 1, 1>(w + j * ldw, ldw, blocks, xr, pairs, br, o + j, ldo, 1);
      }
      i += rows;
    }
    return;
  }
#endif
#if defined(__AVX2__) && defined(__F16C__)
  // Few rows (decode): 8 weight rows at a time per activation row (their FMA chains overlap).
  const int64_t pairs = (blocks + 1) / 2;
  std::vector<HalfAct>& xh = HalfBuffer();
  xh.resize(static_cast<size_t>(m * pairs));
  MakeHalves<F>(xb.data(), m, blocks, xh.data());
  for (int64_t i = 0; i < m; ++i) {
    const HalfAct* xr = xh.data() + i * pairs;
    const ActBlock* br = xb.data() + i * blocks;
    float* o = out + i * ldo;
    const int64_t q = n / 8;  // eight weight rows a q apart: eight streams
    for (int64_t j = 0; j < q; ++j) RowsTimesRow<F, 8>(w + j * ldw, q * ldw, blocks, xr, br, o + j, q);
    for (int64_t j = 8 * q; j < n; ++j) RowsTimesRow<F, 1>(w + j * ldw, ldw, blocks, xr, br, o + j, 1);
  }
#else
  RowDots(F, out, ldo, m, n, blocks, xb.data(), w, ldw);
#endif
  }
}

}  // namespace qmm

namespace qmm {

// An operand's memory: a tile's storage or a view's window (element strides).
template <DT D, int R, int C>
const void* DataOf(const Tile<D, R, C>& t, int64_t* rs, int64_t* cs) {
  *rs = C, *cs = 1;
  return t.v;
}
template <DT D, int R, int C>
const void* DataOf(const View<D, R, C>& v, int64_t* rs, int64_t* cs) {
  *rs = v.rs, *cs = v.cs;
  return v.base;
}

// rows x cols elements of `size` bytes at p (strides rs, cs) with contiguous rows: p itself, or
// a copy in `buf` when the columns are strided.
inline const char* Contiguous(const void* p, int64_t rs, int64_t cs, int64_t rows, int64_t cols,
                              int size, std::vector<char>& buf, int64_t* ld) {
  if (cs == 1) {
    *ld = rs;
    return static_cast<const char*>(p);
  }
  buf.resize(static_cast<size_t>(std::max<int64_t>(1, rows * cols * size)));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < cols; ++k)
      std::memcpy(buf.data() + (i * cols + k) * size,
                  static_cast<const char*>(p) + (i * rs + k * cs) * size, size);
  *ld = cols;
  return buf.data();
}

}  // namespace qmm

// o (R x C f32) = c + a (R x K f32) times w's rows (C x K/32 blocks, and w8a8's scale) over the
// valid region.
template <quant::Format F, typename O, typename A, typename W>
void QMatmulAcc(Ctx&, O& o, const O& c, const A& a, const W& w) {
  static_assert(A::kDType == DT::kF32 && W::kDType == DT::kI8, "f32 activations, i8 blocks");
  if (&o != &c) o = c;
  const int64_t bytes = quant::BlockBytes(F);
  const int64_t blocks = std::min<int64_t>(a.vc / quant::kBlock, w.vc / bytes);
  const int64_t m = std::min<int64_t>(a.vr, O::kRows), n = std::min<int64_t>(w.vr, O::kCols);
  int64_t ars, acs, wrs, wcs, lda, ldw;
  const void* ap = qmm::DataOf(a, &ars, &acs);
  const void* wp = qmm::DataOf(w, &wrs, &wcs);
  thread_local std::vector<char> abuf, wbuf;
  const char* ac = qmm::Contiguous(ap, ars, acs, m, blocks * quant::kBlock, 4, abuf, &lda);
  const char* wc = qmm::Contiguous(wp, wrs, wcs, n, quant::RowBytes(F, blocks), 1, wbuf, &ldw);
  qmm::QGemm<F>(o.v, O::kCols, m, n, blocks, reinterpret_cast<const float*>(ac), lda,
                reinterpret_cast<const uint8_t*>(wc), ldw);
  o.vr = std::min<int64_t>(c.vr, a.vr);
  o.vc = std::min<int64_t>(c.vc, w.vr);
}

// o (R x K f32) = the values w's blocks store (kernels/quant.h DequantizeRow), valid blocks only.
template <quant::Format F, typename O, typename W>
void Dequantize(Ctx&, O& o, const W& w) {
  constexpr int64_t kBytes = quant::BlockBytes(F);
  o.vr = w.vr;
  o.vc = w.vc / kBytes * quant::kBlock;
  for (int64_t r = 0; r < w.vr; ++r)
    quant::DequantizeRow(F, reinterpret_cast<const uint8_t*>(&w.at(r, 0)), o.vc, &o.at(r, 0));
}

// QMatmulAcc into a K loop's accumulator whose tile.full the emitter deferred (MatmulAccOnFull).
template <quant::Format F, typename O, typename A, typename W, typename X>
void QMatmulAccOnFull(Ctx& ctx, O& o, const A& a, const W& w, X value, int64_t& filled_rows,
                      int64_t& filled_cols, const char* where) {
  FillForProduct(ctx, o, a.vr, w.vr, value, filled_rows, filled_cols, where);
  QMatmulAcc<F>(ctx, o, o, a, w);
}

}  // namespace ptox::cpu
