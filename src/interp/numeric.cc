// Element-level semantics: checked integer arithmetic, f32 math dispatch and casts.
#include "interp/numeric.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "kernels/scalar.h"
#include "support/error.h"

namespace ptox::interp {

Fn FnOf(ir::OpCode op) {
  switch (op) {
#define PTOX_OP(e, name, family, fn, ...) \
  case ir::OpCode::k##e:                  \
    return Fn::k##fn;
#include "ops/ops.def"
#undef PTOX_OP
  }
  return Fn::kNone;
}

std::string_view FnName(Fn fn) {
  static constexpr std::string_view kNames[] = {
      "none",
#define PTOX_SCALAR_FN(name, text) text,
#include "kernels/scalar_fns.def"
#undef PTOX_SCALAR_FN
  };
  return kNames[static_cast<int>(fn)];
}

int64_t IntMin(DType d) {
  switch (d) {
    case DType::kI8: return INT8_MIN;
    case DType::kI32: return INT32_MIN;
    case DType::kBool: return 0;
    default: return INT64_MIN;
  }
}

int64_t IntMax(DType d) {
  switch (d) {
    case DType::kI8: return INT8_MAX;
    case DType::kI32: return INT32_MAX;
    case DType::kBool: return 1;
    default: return INT64_MAX;
  }
}

float RoundTo(DType d, float v) {
  if (d == DType::kBF16) return scalar::Bf16ToF32(scalar::F32ToBf16(v));
  if (d == DType::kF16) return scalar::F16ToF32(scalar::F32ToF16(v));
  return v;
}

std::string_view IntStatusName(IntStatus s) {
  switch (s) {
    case IntStatus::kOk: return "ok";
    case IntStatus::kOverflow: return "integer overflow";
    case IntStatus::kDivByZero: return "integer division by zero";
  }
  return "?";
}

// Each dispatch below is a switch over the functions of the kinds it handles (scalar_fns.def).

IntStatus IntBinary(Fn fn, DType d, int64_t a, int64_t b, int64_t* out) {
  if ((fn == Fn::kDiv || fn == Fn::kRem) && b == 0) return IntStatus::kDivByZero;
  int64_t r = 0;
  bool ok = false;
  switch (fn) {
#define PTOX_SCALAR_BINARY(name, text) \
  case Fn::k##name: ok = scalar::Checked##name(a, b, &r); break;
#define PTOX_SCALAR_INT_BINARY(name, text) PTOX_SCALAR_BINARY(name, text)
#include "kernels/scalar_fns.def"
    default: PTOX_ICHECK(false) << "no integer op for " << FnName(fn);
  }
  if (!ok || !InRange(d, r)) return IntStatus::kOverflow;
  *out = r;
  return IntStatus::kOk;
}

IntStatus IntUnary(Fn fn, DType d, int64_t a, int64_t* out) {
  int64_t r = 0;
  bool ok = false;
  switch (fn) {
#define PTOX_SCALAR_INT_UNARY(name, text) \
  case Fn::k##name: ok = scalar::Checked##name(a, &r); break;
#include "kernels/scalar_fns.def"
    default: PTOX_ICHECK(false) << "no integer op for " << FnName(fn);
  }
  if (!ok || !InRange(d, r)) return IntStatus::kOverflow;
  *out = r;
  return IntStatus::kOk;
}

template <typename T>
static bool Compare(Fn fn, T a, T b) {
  switch (fn) {
#define PTOX_SCALAR_COMPARE(name, text) \
  case Fn::k##name: return scalar::name(a, b);
#include "kernels/scalar_fns.def"
    default: PTOX_ICHECK(false) << "no comparison " << FnName(fn);
  }
  return false;
}

bool IntCompare(Fn fn, int64_t a, int64_t b) { return Compare<int64_t>(fn, a, b); }
bool FloatCompare(Fn fn, float a, float b) { return Compare<float>(fn, a, b); }

float FloatBinary(Fn fn, float a, float b) {
  switch (fn) {
#define PTOX_SCALAR_BINARY(name, text) \
  case Fn::k##name: return scalar::name(a, b);
#include "kernels/scalar_fns.def"
    default: PTOX_ICHECK(false) << "no float binary op " << FnName(fn);
  }
  return 0.0f;
}

float FloatUnary(Fn fn, float a) {
  switch (fn) {
#define PTOX_SCALAR_UNARY(name, text) \
  case Fn::k##name: return scalar::name(a);
#define PTOX_SCALAR_INT_UNARY(name, text) PTOX_SCALAR_UNARY(name, text)
#include "kernels/scalar_fns.def"
    default: PTOX_ICHECK(false) << "no float unary op " << FnName(fn);
  }
  return 0.0f;
}

// Float -> integer: truncate toward zero, saturate, NaN -> 0.
static int64_t FloatToInt(float v, DType to) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(static_cast<double>(v));
  // 2^63 is exactly representable; anything at or beyond it saturates.
  if (t >= 9223372036854775808.0) return IntMax(to);
  if (t < -9223372036854775808.0) return IntMin(to);
  int64_t i = static_cast<int64_t>(t);
  return i < IntMin(to) ? IntMin(to) : (i > IntMax(to) ? IntMax(to) : i);
}

bool Cast(const Scalar& from, DType to, Scalar* out) {
  bool from_float = IsFloat(from.dtype);
  if (IsFloat(to)) {
    float v = from_float ? from.f : static_cast<float>(from.i);  // int64 -> f32: RNE
    *out = Scalar::Float(to, RoundTo(to, v));
    return true;
  }
  if (to == DType::kBool) {
    *out = Scalar::Int(to, from_float ? (from.f != 0.0f ? 1 : 0) : (from.i != 0 ? 1 : 0));
    return true;
  }
  if (from_float) {
    *out = Scalar::Int(to, FloatToInt(from.f, to));
    return true;
  }
  if (!InRange(to, from.i)) return false;
  *out = Scalar::Int(to, from.i);
  return true;
}

std::string ToString(const Scalar& s) {
  char buf[32];
  if (IsFloat(s.dtype))
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(s.f));
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(s.i));
  return std::string(DTypeName(s.dtype)) + " " + buf;
}

namespace {

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void StoreBytes(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace

float ReadFloat(DType d, const char* p) {
  switch (d) {
    case DType::kBF16: return scalar::Bf16ToF32(Load<uint16_t>(p));
    case DType::kF16: return scalar::F16ToF32(Load<uint16_t>(p));
    default: return Load<float>(p);
  }
}

int64_t ReadInt(DType d, const char* p) {
  switch (d) {
    case DType::kI8: return Load<int8_t>(p);
    case DType::kI32: return Load<int32_t>(p);
    case DType::kBool: return Load<uint8_t>(p) != 0 ? 1 : 0;
    default: return Load<int64_t>(p);
  }
}

void WriteFloat(DType d, char* p, float v) {
  switch (d) {
    case DType::kBF16: StoreBytes(p, scalar::F32ToBf16(v)); break;
    case DType::kF16: StoreBytes(p, scalar::F32ToF16(v)); break;
    default: StoreBytes(p, v); break;
  }
}

void WriteInt(DType d, char* p, int64_t v) {
  switch (d) {
    case DType::kI8: StoreBytes(p, static_cast<int8_t>(v)); break;
    case DType::kI32: StoreBytes(p, static_cast<int32_t>(v)); break;
    case DType::kBool: StoreBytes(p, static_cast<uint8_t>(v != 0)); break;
    default: StoreBytes(p, v); break;
  }
}

}  // namespace ptox::interp
