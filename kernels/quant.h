// Block-quantized matmul (tensor.qmatmul / tile.qmatmul_acc): the definition every target
// reproduces bit for bit. The interpreter runs these functions; the CPU tile library runs them
// as its scalar path and checks its SIMD paths against them.
//
// Weights are GGUF blocks of 32 values, stored as they lie in the file (one row of an [N, K]
// weight is K / 32 consecutive blocks):
//   q4_0: f16 d, 16 bytes of nibbles      value = d * (q - 8)    q = nibble, 0..15
//   q4_1: f16 d, f16 m, 16 bytes          value = d * q + m
//   q8_0: f16 d, 32 int8                  value = d * q
// (nibble j of a block is the low half of byte j for j < 16, the high half of byte j - 16 else.)
//
// Activations are quantized per row and block of 32, as llama.cpp does: amax = max |x|,
// dx = amax / 127, q = round-to-nearest-even(x * (127 / amax)) clamped to [-127, 127] (0 when
// amax = 0; and for x = 0 when 127 / amax overflows). A block with a NaN or an infinity has
// dx = NaN, so its row's outputs are NaN.
//
// One product a[m, :] . w[n, :] then sums, exactly as a 512-bit VNNI kernel does, in 16 f32 lanes
// L (from +0): block b's 32 products form 8 partial sums p_l (values 4l .. 4l+3, exact in int32),
// and p_l goes to lane h + l with h = 8 * (b mod 2):
//   L[h + l] = fma(d_w * dx, f32(p_l), L[h + l])       d_w * dx rounds once
// q4_1 adds its offsets in one more accumulator, over the blocks in order:
//   M = fma(m_w, dx * f32(sum of the block's q), M)
// and the result is acc + (Tree(L) + M), Tree the pairwise sum L[0:8] + L[8:16], then halves
// (4, 2, 1). Here qw is q - 8 (q4_0), q (q4_1) or the int8 (q8_0). The sum spans one tile's K:
// a K loop of several tiles adds per tile, so the tensor op's lowering keeps K whole.
//
// w8a8 (PyPTO-X's W8A8 scheme) is not a GGUF format: a weight row is K int8 values q_w
// (symmetric per output channel: s_w = absmax / 127, q_w = round-to-nearest-even(w / s_w) in
// [-127, 127], written by `ptox quantize`) in blocks of 32 bytes, then s_w as 4 bytes of f32.
// The activations are quantized per row (per token) as above with one amax over the whole K, so
// their dx = s_a is the row's. The product sums q_a * q_w over K in int32, exactly for
// K <= kW8A8MaxK, and the epilogue rounds twice in f32, once for the scales and once for the
// product: acc + f32(sum) * (s_a * s_w) (f32(sum) is exact while |sum| <= 2^24, e.g. K <= 1040).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "kernels/scalar.h"

namespace ptox::quant {

enum class Format : int { kQ4_0 = 0, kQ4_1 = 1, kQ8_0 = 2, kW8A8 = 3 };
// Every format, in enum order: the `format` attribute's values (src/ops/op_attrs.def).
inline constexpr Format kFormats[] = {Format::kQ4_0, Format::kQ4_1, Format::kQ8_0, Format::kW8A8};

// The IR's spelling of a format (the ops' `format` attribute).
inline const char* FormatName(Format f) {
  return f == Format::kQ4_0 ? "q4_0" : f == Format::kQ4_1 ? "q4_1" : f == Format::kQ8_0 ? "q8_0"
                                                                                        : "w8a8";
}
inline bool ParseFormat(const char* name, Format* out) {
  for (Format f : kFormats) {
    if (std::strcmp(name, FormatName(f)) == 0) {
      *out = f;
      return true;
    }
  }
  return false;
}

inline constexpr int kBlock = 32;  // values per block, weights and activations alike

// Bytes of one block of the format.
constexpr int BlockBytes(Format f) {
  return f == Format::kQ4_0 ? 18 : f == Format::kQ4_1 ? 20 : f == Format::kQ8_0 ? 34 : 32;
}

// Bytes after a row's blocks: w8a8's per-row (output channel) scale s_w.
constexpr int RowTrailer(Format f) { return f == Format::kW8A8 ? 4 : 0; }

// Bytes of a row of `blocks` blocks.
constexpr int64_t RowBytes(Format f, int64_t blocks) {
  return blocks * BlockBytes(f) + RowTrailer(f);
}

// The blocks of a row of `bytes` bytes, -1 when no row has that size. (A trailer is shorter than
// a block, so bytes / BlockBytes is the count for any valid row.)
constexpr int64_t RowBlocks(Format f, int64_t bytes) {
  const int64_t blocks = (bytes - RowTrailer(f)) / BlockBytes(f);
  return bytes >= RowTrailer(f) && RowBytes(f, blocks) == bytes ? blocks : -1;
}

// The largest K (a multiple of kBlock) whose w8a8 sum of K products of magnitude <= 127 * 128
// (activations are within +-127; a weight byte may be -128) fits in int32: every partial sum
// is exact.
inline constexpr int64_t kW8A8MaxK = (int64_t{2147483647} / (127 * 128)) / 32 * 32;

inline float RowScale(const uint8_t* w, int64_t blocks) {  // w8a8's s_w
  float s;
  std::memcpy(&s, w + blocks * kBlock, 4);
  return s;
}

// One quantized block of activations.
struct ActBlock {
  int8_t q[kBlock];
  float d;      // dx (NaN when the block holds a NaN or an infinity)
  float dsum;   // dx * f32(sum of q): q4_1's offset term
};

// max |x| over n values; `finite` is cleared by a NaN or an infinity.
inline float AbsMax(const float* x, int64_t n, bool* finite) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    *finite &= a <= 3.40282347e38f;  // false for NaN and infinity
    amax = a > amax ? a : amax;
  }
  return amax;
}

// A block's q = round(x * inv) clamped to [-127, 127]; returns their sum.
inline int32_t RoundBlock(const float* x, float inv, int8_t* q) {
  int32_t sum = 0;
  for (int i = 0; i < kBlock; ++i) {
    float v = x[i] * inv;  // NaN only for 0 * inf (amax so small that 127 / amax overflows)
    v = v != v ? 0.0f : v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v;
    q[i] = static_cast<int8_t>(std::nearbyint(v));  // the default mode: nearest even
    sum += q[i];
  }
  return sum;
}

inline float InvScale(float amax, bool finite) {
  return amax > 0.0f && finite ? 127.0f / amax : 0.0f;
}

inline void QuantizeBlock(const float* x, ActBlock* out) {
  bool finite = true;
  const float amax = AbsMax(x, kBlock, &finite);
  const int32_t sum = RoundBlock(x, InvScale(amax, finite), out->q);
  out->d = finite ? amax / 127.0f : NAN;
  out->dsum = out->d * static_cast<float>(sum);
}

// One row of `blocks` activation blocks as format f reads them: per block (the GGUF formats) or
// with one amax for the whole row (w8a8: every block gets the row's d; dsum is unused).
inline void QuantizeRow(Format f, const float* x, int64_t blocks, ActBlock* out) {
  if (f != Format::kW8A8) {
    for (int64_t b = 0; b < blocks; ++b) QuantizeBlock(x + b * kBlock, out + b);
    return;
  }
  bool finite = true;
  const float amax = AbsMax(x, blocks * kBlock, &finite), inv = InvScale(amax, finite);
  for (int64_t b = 0; b < blocks; ++b) {
    RoundBlock(x + b * kBlock, inv, out[b].q);
    out[b].d = finite ? amax / 127.0f : NAN;
    out[b].dsum = 0.0f;
  }
}

inline float BlockD(const uint8_t* w) {
  uint16_t h;
  std::memcpy(&h, w, 2);
  return scalar::F16ToF32(h);
}

inline float BlockM(const uint8_t* w) {  // q4_1
  uint16_t h;
  std::memcpy(&h, w + 2, 2);
  return scalar::F16ToF32(h);
}

// The weight block's integer values, as qw above.
inline void BlockInts(Format f, const uint8_t* w, int8_t* out) {
  if (f == Format::kQ8_0) {
    std::memcpy(out, w + 2, kBlock);
    return;
  }
  const uint8_t* qs = w + (f == Format::kQ4_0 ? 2 : 4);
  const int bias = f == Format::kQ4_0 ? 8 : 0;
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<int8_t>((qs[j] & 0xF) - bias);
    out[j + 16] = static_cast<int8_t>((qs[j] >> 4) - bias);
  }
}

inline constexpr int kLanes = 16;  // the accumulator lanes of the definition

// One block's step: lanes L[h .. h+8) (h = 8 * (b mod 2)) and q4_1's M.
inline void BlockStep(Format f, const uint8_t* w, const ActBlock& x, float* lanes, float* m) {
  int8_t qw[kBlock];
  BlockInts(f, w, qw);
  const float s = BlockD(w) * x.d;
  for (int l = 0; l < 8; ++l) {
    int32_t p = 0;
    for (int j = 4 * l; j < 4 * l + 4; ++j) p += static_cast<int32_t>(qw[j]) * x.q[j];
    lanes[l] = std::fma(s, static_cast<float>(p), lanes[l]);
  }
  if (f == Format::kQ4_1) *m = std::fma(BlockM(w), x.dsum, *m);
}

// The fixed order of the lanes' sum.
inline float Tree(const float* lanes) {
  float v[8];
  for (int i = 0; i < 8; ++i) v[i] = lanes[i] + lanes[i + 8];
  for (int i = 0; i < 4; ++i) v[i] = v[i] + v[i + 4];
  for (int i = 0; i < 2; ++i) v[i] = v[i] + v[i + 2];
  return v[0] + v[1];
}

// A row's result: acc + its value, a NaN as the quiet NaN 0x7fc00000. Whether a result is NaN
// is fixed by the definition's order, but which NaN's payload and sign survive is not: vector
// kernels add the same operands in other operand positions (found by the conformance suite).
inline float Out(float acc, float value) {
  const float r = acc + value;
  return r != r ? __builtin_nanf("") : r;
}

// w8a8's epilogue: acc + f32(sum) * (s_a * s_w).
inline float W8A8Out(int32_t sum, float s_a, float s_w, float acc) {
  return Out(acc, static_cast<float>(sum) * (s_a * s_w));
}

// acc + one row of `blocks` weight blocks times the same count of activation blocks.
inline float RowDot(Format f, const uint8_t* w, const ActBlock* x, int64_t blocks, float acc) {
  if (f == Format::kW8A8) {
    if (blocks == 0) return Out(acc, 0.0f);
    int32_t sum = 0;
    for (int64_t b = 0; b < blocks; ++b)
      for (int j = 0; j < kBlock; ++j)
        sum += static_cast<int32_t>(static_cast<int8_t>(w[b * kBlock + j])) * x[b].q[j];
    return W8A8Out(sum, x[0].d, RowScale(w, blocks), acc);
  }
  float lanes[kLanes] = {};
  float m = 0.0f;
  for (int64_t b = 0; b < blocks; ++b)
    BlockStep(f, w + b * BlockBytes(f), x[b], lanes + 8 * (b % 2), &m);
  return Out(acc, Tree(lanes) + m);
}

// The values one row of blocks stores: `values` (a multiple of kBlock) floats; d * q is exact in
// f32 (an f16 times a small integer), q4_1's + m rounds once, w8a8's s_w * q rounds once.
inline void DequantizeRow(Format f, const uint8_t* row, int64_t values, float* out) {
  if (f == Format::kW8A8) {
    const float s = RowScale(row, values / kBlock);
    for (int64_t i = 0; i < values; ++i) out[i] = s * static_cast<float>(static_cast<int8_t>(row[i]));
    return;
  }
  for (int64_t b = 0; b < values / kBlock; ++b) {
    const uint8_t* w = row + b * BlockBytes(f);
    int8_t qw[kBlock];
    BlockInts(f, w, qw);
    const float d = BlockD(w), m = f == Format::kQ4_1 ? BlockM(w) : 0.0f;
    for (int i = 0; i < kBlock; ++i) {
      const float v = d * static_cast<float>(qw[i]);
      out[b * kBlock + i] = f == Format::kQ4_1 ? v + m : v;
    }
  }
}

}  // namespace ptox::quant
