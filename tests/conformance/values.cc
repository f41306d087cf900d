// Input values for the conformance suite: random data per dtype with the edge cases of
// docs/ops.md mixed in. Conversions are written here, independently of kernels/scalar.h.
#include <cmath>

#include "tests/common/half.h"
#include <cstring>
#include <limits>

#include "harness.h"

namespace ptox::conformance {
namespace {

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// f32 specials (as bits): NaNs with payloads and signs (one signaling), infinities, zeros,
// subnormals, huge values, f16 overflow / subnormal / tie cases, bf16 ties, math thresholds.
constexpr uint32_t kF32Specials[] = {
    0x7FC00000, 0xFFC00000, 0x7FC12345, 0x7F800001, 0x7F800000, 0xFF800000, 0x80000000,
    0x00000000, 0x000116C2 /* 1e-40 */, 0x800116C2, 0x00000001, 0x7F61B1E6 /* 3e38 */,
    0xFF61B1E6, 0x477FE000 /* 65504 */, 0x477FF000 /* 65520 */, 0x4788B800 /* 70000 */,
    0xC788B800, 0x358637BD /* 1e-6 */, 0x33800000 /* 2^-24 */, 0x33000000 /* 2^-25 */,
    0x33000001, 0x3F818000 /* bf16 tie, odd */, 0x3F828000 /* bf16 tie, even */, 0x3F818001,
    0x42B17218 /* 88.72 */, 0x42B20000 /* 89 */, 0xC2D00000 /* -104 */, 0x3F800000,
    0xBF800000, 0x41133333 /* 9.2 */, 0xC1133333, 0x00800000 /* FLT_MIN */, 0x387FC000,
};
// Raw bf16 / f16 patterns that no f32 value rounds to the same way: signaling NaNs, subnormals,
// the largest finite values.
constexpr uint16_t kBf16Specials[] = {0x7F81, 0xFFC1, 0x0001, 0x8001, 0x7F7F, 0xFF7F, 0x8000};
constexpr uint16_t kF16Specials[] = {0x7C01, 0xFE00, 0x0001, 0x03FF, 0x7BFF, 0xFBFF, 0x8000,
                                     0x7C00, 0xFC00};

// Round-to-nearest-even f32 -> bf16 bits; NaN keeps its sign and top payload, made quiet.
uint16_t ToBf16(float x) {
  uint32_t u = Bits(x);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
uint16_t ToF16(float x) {
  ptox::test::Half h = static_cast<ptox::test::Half>(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

void PutFloat(DType dtype, float x, char* out) {
  if (dtype == DType::kF32) {
    std::memcpy(out, &x, 4);
    return;
  }
  uint16_t h = dtype == DType::kBF16 ? ToBf16(x) : ToF16(x);
  std::memcpy(out, &h, 2);
}

template <typename T>
T Pick(std::mt19937& rng, const T* list, size_t n) {
  return list[std::uniform_int_distribution<size_t>(0, n - 1)(rng)];
}

// `nan_ok`: whether this element may be a NaN (other specials stay; a NaN becomes -0).
void GeneralFloat(DType dtype, bool nan_ok, std::mt19937& rng, char* out) {
  std::uniform_int_distribution<int> dice(0, 15);
  int d = dice(rng);
  if (d == 0 && dtype != DType::kF32) {  // a raw 16-bit pattern
    uint16_t h = dtype == DType::kBF16 ? Pick(rng, kBf16Specials, std::size(kBf16Specials))
                                       : Pick(rng, kF16Specials, std::size(kF16Specials));
    const bool nan = dtype == DType::kBF16 ? (h & 0x7FFF) > 0x7F80 : (h & 0x7FFF) > 0x7C00;
    if (nan && !nan_ok) h = 0x8000;
    std::memcpy(out, &h, 2);
    return;
  }
  if (d <= 3) {
    float v = FromBits(Pick(rng, kF32Specials, std::size(kF32Specials)));
    PutFloat(dtype, std::isnan(v) && !nan_ok ? -0.0f : v, out);
    return;
  }
  PutFloat(dtype, std::normal_distribution<float>(0.0f, 2.0f)(rng), out);
}

// Reduction inputs: all-negative rows (r % 4 == 1) and columns (c % 4 == 1), integer ties
// (r % 5 == 4), rows / columns of signed zeros (% 6 == 2), one NaN in rows r % 7 == 3 and columns
// c % 7 == 3, one +Inf in rows r % 7 == 5, one -Inf in columns c % 7 == 5, some subnormals.
// No Inf of both signs meets in one line and nothing can overflow, so every order of summation
// gives the same class of result.
void ReduceFloat(DType dtype, int64_t r, int64_t c, bool subnormals, std::mt19937& rng,
                 char* out) {
  float v = std::normal_distribution<float>(0.0f, 2.0f)(rng);
  if (subnormals && std::uniform_int_distribution<int>(0, 15)(rng) == 0)
    v = v < 0 ? -1e-40f : 1e-40f;
  if (r % 5 == 4) v = std::nearbyint(v);
  if (r % 4 == 1 || c % 4 == 1) v = -(std::fabs(v) + 0.5f);
  if (r % 6 == 2 || c % 6 == 2) v = (rng() & 1) ? 0.0f : -0.0f;
  if ((r % 7 == 3 && c == 2) || (c % 7 == 3 && r == 2)) v = FromBits(0x7FC00000 | (r & 0xFF));
  if (r % 7 == 5 && c == 1) v = INFINITY;
  if (c % 7 == 5 && r == 1) v = -INFINITY;
  PutFloat(dtype, v, out);
}

int64_t SmallLimit(DType dtype) {
  switch (dtype) {
    case DType::kI8: return 11;
    case DType::kI32: return 40000;
    default: return int64_t{1} << 31;
  }
}

int64_t IntValue(DType dtype, Values kind, int64_t r, int64_t c, std::mt19937& rng) {
  const int64_t lo = dtype == DType::kI8 ? INT8_MIN : dtype == DType::kI32 ? INT32_MIN : INT64_MIN;
  const int64_t hi = dtype == DType::kI8 ? INT8_MAX : dtype == DType::kI32 ? INT32_MAX : INT64_MAX;
  std::uniform_int_distribution<int> dice(0, 7);
  switch (kind) {
    case Values::kGeneral:
    case Values::kNaNEven:
    case Values::kNaNOdd:
    case Values::kNoNaN: {
      const int64_t edges[] = {lo, hi, lo + 1, hi - 1, 0, -1, 1};
      if (dice(rng) <= 2) return Pick(rng, edges, std::size(edges));
      return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    }
    case Values::kReduce:
    case Values::kReduceNormal: {
      const int64_t lim = dtype == DType::kI8 ? 1 : 1000;
      int64_t v = std::uniform_int_distribution<int64_t>(-lim, lim)(rng);
      if (r % 4 == 1 || c % 4 == 1) v = -(v < 0 ? -v : v) - 1;
      if (r % 6 == 2) v = 0;
      return v;
    }
    case Values::kTiny: {
      const int64_t edges[] = {-128, 127, 0, -1, 1};
      if (dice(rng) == 0) return Pick(rng, edges, std::size(edges));
      return std::uniform_int_distribution<int64_t>(-128, 127)(rng);
    }
    case Values::kIds: return std::uniform_int_distribution<int64_t>(0, 6)(rng);
    case Values::kSmall:
    case Values::kNonZero: {
      const int64_t lim = SmallLimit(dtype);
      const int64_t edges[] = {0, 1, -1, lim, -lim};
      int64_t v = dice(rng) == 0 ? Pick(rng, edges, std::size(edges))
                                 : std::uniform_int_distribution<int64_t>(-lim, lim)(rng);
      return (kind == Values::kNonZero && v == 0) ? 7 : v;
    }
  }
  return 0;
}

}  // namespace

void GenerateValue(DType dtype, Values kind, int64_t r, int64_t c, std::mt19937& rng, char* out) {
  if (IsFloat(dtype)) {
    if (kind == Values::kReduce || kind == Values::kReduceNormal)
      ReduceFloat(dtype, r, c, kind == Values::kReduce, rng, out);
    else
      GeneralFloat(dtype,
                   kind == Values::kNaNEven   ? (r + c) % 2 == 0
                   : kind == Values::kNaNOdd ? (r + c) % 2 == 1
                                             : kind != Values::kNoNaN,
                   rng, out);
    return;
  }
  if (dtype == DType::kBool) {
    const uint8_t bytes[] = {0, 1, 0, 1, 0, 1, 2, 255};
    uint8_t b = Pick(rng, bytes, std::size(bytes));
    std::memcpy(out, &b, 1);
    return;
  }
  int64_t v = IntValue(dtype, kind, r, c, rng);
  if (dtype == DType::kI8) {
    int8_t x = static_cast<int8_t>(v);
    std::memcpy(out, &x, 1);
  } else if (dtype == DType::kI32) {
    int32_t x = static_cast<int32_t>(v);
    std::memcpy(out, &x, 4);
  } else {
    std::memcpy(out, &v, 8);
  }
}

}  // namespace ptox::conformance
