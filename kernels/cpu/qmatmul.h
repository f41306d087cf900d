// tile.qmatmul_acc on CPU: f32 activations times GGUF weight blocks read where they lie, with the
// bits of kernels/quant.h's definition. The activations are quantized once per task row; the
// AVX-512 path then multiplies two blocks per 512-bit register with integer dot products
// (VNNI vpdpbusd where the build has it, else vpmaddubsw + vpmaddwd: the same exact lane sums,
// each lane the sum of 4 products), scales every lane by d_w * dx and adds it into the 16
// lanes the definition names. Other builds run the definition itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
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

// kCols weight rows (ldw bytes apart) times kRows activation rows (their pair blocks at x,
// `pairs` apart), added to out[r * ldo + c] (q4_1's offsets from the ActBlocks at xb, `blocks`
// apart). Each output's lanes and offset sum are a chain of dependent FMAs; the kRows x kCols
// chains run interleaved (one row's alone waited on its FMA latency: 8 cycles per block pair).
template <Format F, int kRows, int kCols>
inline void RowsTimesRows(const uint8_t* w, int64_t ldw, int64_t blocks, const PairAct* x,
                          int64_t pairs, const ActBlock* xb, float* out, int64_t ldo) {
  constexpr int kBytes = quant::BlockBytes(F);
  __m512 acc[kRows][kCols];
  float m[kRows][kCols];
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) acc[r][c] = _mm512_setzero_ps(), m[r][c] = 0.0f;
  for (int64_t p = 0; p < pairs; ++p) {
    const bool odd = 2 * p + 1 < blocks;
    for (int c = 0; c < kCols; ++c) {
      __m512i u;
      __m512 dw;
      __mmask64 neg;
      float m0 = 0, m1 = 0;
      LoadPair<F>(w + c * ldw + 2 * p * kBytes, odd, &u, &dw, &neg, &m0, &m1);
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
  }
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kCols; ++c) {  // quant::Tree's order
      const __m512 v16 = acc[r][c];
      const __m256 v8 =
          _mm256_add_ps(_mm512_castps512_ps256(v16), _mm512_extractf32x8_ps(v16, 1));
      const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
      const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
      const float t = _mm_cvtss_f32(_mm_add_ss(v2, _mm_movehdup_ps(v2)));
      out[r * ldo + c] = out[r * ldo + c] + (t + m[r][c]);
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

// out[i * ldo + j] += a's row i times w's row j, for i < m, j < n, over `blocks` blocks.
template <Format F>
void QGemm(float* out, int64_t ldo, int64_t m, int64_t n, int64_t blocks, const float* a,
           int64_t lda, const uint8_t* w, int64_t ldw) {
  if (m <= 0 || n <= 0) return;
  std::vector<ActBlock>& xb = ActBuffer();
  xb.resize(static_cast<size_t>(std::max<int64_t>(1, m * blocks)));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t b = 0; b < blocks; ++b)
      quant::QuantizeBlock(a + i * lda + b * quant::kBlock, &xb[i * blocks + b]);
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const int64_t pairs = (blocks + 1) / 2;
  std::vector<PairAct>& xp = PairBuffer();
  xp.resize(static_cast<size_t>(std::max<int64_t>(1, m * pairs)));
  MakePairs(xb.data(), m, blocks, xp.data());
  // Few rows (decode): 4 weight rows at once; else 4 activation rows per weight row.
  const PairAct* xr = xp.data();
  const ActBlock* br = xb.data();
  for (int64_t i = 0; i < m;) {
    const int64_t rows = m - i >= 4 ? 4 : 1;
    int64_t j = 0;
    if (rows == 4) {
      for (; j < n; ++j)
        RowsTimesRows<F, 4, 1>(w + j * ldw, ldw, blocks, xr + i * pairs, pairs, br + i * blocks,
                               out + i * ldo + j, ldo);
    } else {
      for (; j + 4 <= n; j += 4)
        RowsTimesRows<F, 1, 4>(w + j * ldw, ldw, blocks, xr + i * pairs, pairs, br + i * blocks,
                               out + i * ldo + j, ldo);
      for (; j < n; ++j)
        RowsTimesRows<F, 1, 1>(w + j * ldw, ldw, blocks, xr + i * pairs, pairs, br + i * blocks,
                               out + i * ldo + j, ldo);
    }
    i += rows;
  }
#else
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      out[i * ldo + j] = quant::RowDot(F, w + j * ldw, xb.data() + i * blocks, blocks, out[i * ldo + j]);
#endif
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

// o (R x C f32) = c + a (R x K f32) times w's rows (C x K/32 blocks) over the valid region.
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
  const char* wc = qmm::Contiguous(wp, wrs, wcs, n, blocks * bytes, 1, wbuf, &ldw);
  qmm::QGemm<F>(o.v, O::kCols, m, n, blocks, reinterpret_cast<const float*>(ac), lda,
                reinterpret_cast<const uint8_t*>(wc), ldw);
  o.vr = std::min<int64_t>(c.vr, a.vr);
  o.vc = std::min<int64_t>(c.vc, w.vr);
}

// o (R x K f32) = the values w's blocks store (kernels/quant.h Dequantize), valid blocks only.
template <quant::Format F, typename O, typename W>
void Dequantize(Ctx&, O& o, const W& w) {
  constexpr int64_t kBytes = quant::BlockBytes(F);
  o.vr = w.vr;
  o.vc = w.vc / kBytes * quant::kBlock;
  for (int64_t r = 0; r < w.vr; ++r) {
    const uint8_t* row = reinterpret_cast<const uint8_t*>(&w.at(r, 0));
    for (int64_t e = 0; e < o.vc; ++e)
      o.at(r, e) = quant::Dequantize(F, row + e / quant::kBlock * kBytes,
                                     static_cast<int>(e % quant::kBlock));
  }
}

// QMatmulAcc into a K loop's accumulator whose tile.full the emitter deferred (MatmulAccOnFull).
template <quant::Format F, typename O, typename A, typename W, typename X>
void QMatmulAccOnFull(Ctx& ctx, O& o, const A& a, const W& w, X value, int64_t& filled_rows,
                      int64_t& filled_cols, const char* where) {
  FillForProduct(ctx, o, a.vr, w.vr, value, filled_rows, filled_cols, where);
  QMatmulAcc<F>(ctx, o, o, a, w);
}

}  // namespace ptox::cpu
