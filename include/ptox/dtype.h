// Element types shared by the public API and the IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ptox {

// X(Enum, "text", bytes)
#define PTOX_DTYPES(X) \
  X(kF32, "f32", 4)    \
  X(kF16, "f16", 2)    \
  X(kBF16, "bf16", 2)  \
  X(kI8, "i8", 1)      \
  X(kI32, "i32", 4)    \
  X(kI64, "i64", 8)    \
  X(kBool, "bool", 1)  \
  X(kIndex, "index", 8)

enum class DType : uint8_t {
#define PTOX_X(e, s, b) e,
  PTOX_DTYPES(PTOX_X)
#undef PTOX_X
};

std::string_view DTypeName(DType t);
std::optional<DType> ParseDType(std::string_view text);
int DTypeBytes(DType t);
inline bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }
inline bool IsInteger(DType t) {
  return t == DType::kI8 || t == DType::kI32 || t == DType::kI64 || t == DType::kIndex;
}

// 16-bit floats as their bits, converted as every target converts them: to f16 / bf16 rounding to
// nearest even (NaN stays a quiet NaN), back to f32 exactly.
uint16_t F32ToF16Bits(float x);
uint16_t F32ToBf16Bits(float x);
float F16BitsToF32(uint16_t bits);
float Bf16BitsToF32(uint16_t bits);

}  // namespace ptox
