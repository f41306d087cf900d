// Test-side tensors: owned, aligned host buffers with float access (integer and bool elements as
// floats), plus rounding helpers written independently of kernels/scalar.h (so references never
// share code with what they check).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ptox/tensor.h"
#include "tests/common/half.h"

namespace ptox::testing {

// Round-to-nearest-even f32 -> bf16 -> f32, independent of the library's conversion.
inline float RoundBf16(float x) {
  if (std::isnan(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint32_t lsb = (u >> 16) & 1u;
  u = (u + 0x7FFFu + lsb) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}
// f32 -> f16 -> f32 with the compiler's own binary16 conversion (IEEE, round to nearest even).
inline float RoundF16(float x) { return static_cast<float>(static_cast<ptox::test::Half>(x)); }

inline float RoundTo(DType t, float x) {
  if (t == DType::kBF16) return RoundBf16(x);
  if (t == DType::kF16) return RoundF16(x);
  return x;
}

class HostTensor {
 public:
  HostTensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    int64_t n = 1;
    for (int64_t d : shape_) n *= d;
    numel_ = n;
    storage_.assign((n * DTypeBytes(dtype) + 7) / 8 + 1, ~0ull);  // NaN pattern until written
  }
  Tensor view() { return Tensor::Contiguous(storage_.data(), dtype_, shape_); }
  int64_t numel() const { return numel_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  DType dtype() const { return dtype_; }

  float Get(int64_t i) const {
    const char* p = reinterpret_cast<const char*>(storage_.data());
    switch (dtype_) {
      case DType::kF32: { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
      case DType::kBF16: {
        uint16_t h; std::memcpy(&h, p + 2 * i, 2);
        uint32_t u = uint32_t(h) << 16; float f; std::memcpy(&f, &u, 4); return f;
      }
      case DType::kF16: { ptox::test::Half h; std::memcpy(&h, p + 2 * i, 2); return float(h); }
      case DType::kI32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        return float(v);
      }
      case DType::kI64: {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        return float(v);
      }
      case DType::kBool: return float(static_cast<unsigned char>(p[i]));
      default: return NAN;
    }
  }
  // Stores x (already representable in the dtype for bf16 / f16).
  void Set(int64_t i, float x) {
    char* p = reinterpret_cast<char*>(storage_.data());
    switch (dtype_) {
      case DType::kF32: std::memcpy(p + 4 * i, &x, 4); break;
      case DType::kBF16: {
        uint32_t u; float r = RoundBf16(x); std::memcpy(&u, &r, 4);
        uint16_t h = uint16_t(u >> 16); std::memcpy(p + 2 * i, &h, 2); break;
      }
      case DType::kF16: {
        ptox::test::Half h = static_cast<ptox::test::Half>(x);
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      case DType::kI32: {
        int32_t v = static_cast<int32_t>(x);
        std::memcpy(p + 4 * i, &v, 4);
        break;
      }
      case DType::kI64: {
        int64_t v = static_cast<int64_t>(x);
        std::memcpy(p + 8 * i, &v, 8);
        break;
      }
      case DType::kBool: p[i] = x != 0 ? 1 : 0; break;
      default: break;
    }
  }
  // Floats uniform in [lo, hi); i32 / i64 (gather ids) uniform in [0, 8); bool 0 / 1.
  void FillUniform(std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::uniform_int_distribution<int> ints(0, dtype_ == DType::kBool ? 1 : 7);
    for (int64_t i = 0; i < numel_; ++i)
      Set(i, IsFloat(dtype_) ? RoundTo(dtype_, dist(rng)) : static_cast<float>(ints(rng)));
  }
  uint64_t Hash() const {  // FNV-1a over the bytes, to prove inputs are untouched
    uint64_t h = 1469598103934665603ull;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(storage_.data());
    for (size_t i = 0; i < storage_.size() * 8; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
  }

 private:
  DType dtype_;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::vector<uint64_t> storage_;
};

}  // namespace ptox::testing
