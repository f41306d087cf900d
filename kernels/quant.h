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
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "kernels/scalar.h"

namespace ptox::quant {

enum class Format : int { kQ4_0 = 0, kQ4_1 = 1, kQ8_0 = 2 };

// The IR's spelling of a format (the ops' `format` attribute).
inline const char* FormatName(Format f) {
  return f == Format::kQ4_0 ? "q4_0" : f == Format::kQ4_1 ? "q4_1" : "q8_0";
}
inline bool ParseFormat(const char* name, Format* out) {
  for (Format f : {Format::kQ4_0, Format::kQ4_1, Format::kQ8_0}) {
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
  return f == Format::kQ4_0 ? 18 : f == Format::kQ4_1 ? 20 : 34;
}

// One quantized block of activations.
struct ActBlock {
  int8_t q[kBlock];
  float d;      // dx (NaN when the block holds a NaN or an infinity)
  float dsum;   // dx * f32(sum of q): q4_1's offset term
};

inline void QuantizeBlock(const float* x, ActBlock* out) {
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < kBlock; ++i) {
    const float a = std::fabs(x[i]);
    finite &= a <= 3.40282347e38f;  // false for NaN and infinity
    amax = a > amax ? a : amax;
  }
  const float inv = amax > 0.0f && finite ? 127.0f / amax : 0.0f;
  int32_t sum = 0;
  for (int i = 0; i < kBlock; ++i) {
    float v = x[i] * inv;  // NaN only for 0 * inf (amax so small that 127 / amax overflows)
    v = v != v ? 0.0f : v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v;
    out->q[i] = static_cast<int8_t>(std::nearbyint(v));  // the default mode: nearest even
    sum += out->q[i];
  }
  out->d = finite ? amax / 127.0f : NAN;
  out->dsum = out->d * static_cast<float>(sum);
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

// acc + one row of `blocks` weight blocks times the same count of activation blocks.
inline float RowDot(Format f, const uint8_t* w, const ActBlock* x, int64_t blocks, float acc) {
  float lanes[kLanes] = {};
  float m = 0.0f;
  for (int64_t b = 0; b < blocks; ++b)
    BlockStep(f, w + b * BlockBytes(f), x[b], lanes + 8 * (b % 2), &m);
  return acc + (Tree(lanes) + m);
}

// The values one row of blocks stores: `values` (a multiple of kBlock) floats; d * q is exact in
// f32 (an f16 times a small integer), q4_1's + m rounds once.
inline void DequantizeRow(Format f, const uint8_t* row, int64_t values, float* out) {
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
