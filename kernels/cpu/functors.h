// One functor per ScalarFn of ops.def: F for floats (kernels/scalar.h, bit-identical to the
// interpreter), I for checked int64 arithmetic (false on overflow or division by zero), C for
// comparisons. Generated code names them pc::Fn<ScalarFn>.
#pragma once

#include "kernels/cpu/core.h"

namespace ptox::cpu {

#define PTOX_CPU_BINARY(Name, checked)                                              \
  struct Fn##Name {                                                                 \
    static float F(float a, float b) { return scalar::Name(a, b); }                 \
    static bool I(int64_t a, int64_t b, int64_t* r) { checked; }                    \
    static constexpr const char* kName = #Name;                                     \
  };

PTOX_CPU_BINARY(Add, return !__builtin_add_overflow(a, b, r))
PTOX_CPU_BINARY(Sub, return !__builtin_sub_overflow(a, b, r))
PTOX_CPU_BINARY(Mul, return !__builtin_mul_overflow(a, b, r))
PTOX_CPU_BINARY(Div, if (b == 0 || (a == INT64_MIN && b == -1)) return false;
                *r = scalar::Div<int64_t>(a, b); return true)
PTOX_CPU_BINARY(Max, *r = scalar::Max<int64_t>(a, b); return true)
PTOX_CPU_BINARY(Min, *r = scalar::Min<int64_t>(a, b); return true)
#undef PTOX_CPU_BINARY

struct FnRem {
  static bool I(int64_t a, int64_t b, int64_t* r) {
    if (b == 0) return false;
    *r = scalar::Rem<int64_t>(a, b);
    return true;
  }
  static constexpr const char* kName = "Rem";
};

#define PTOX_CPU_UNARY(Name)                                       \
  struct Fn##Name {                                                \
    static float F(float a) { return scalar::Name(a); }            \
    static constexpr const char* kName = #Name;                    \
  };
PTOX_CPU_UNARY(Exp)
PTOX_CPU_UNARY(Log)
PTOX_CPU_UNARY(Sqrt)
PTOX_CPU_UNARY(Rsqrt)
PTOX_CPU_UNARY(Recip)
PTOX_CPU_UNARY(Tanh)
PTOX_CPU_UNARY(Sigmoid)
PTOX_CPU_UNARY(Silu)
PTOX_CPU_UNARY(Gelu)
#undef PTOX_CPU_UNARY

// Unary ops that also take integers.
struct FnNeg {
  static float F(float a) { return scalar::Neg(a); }
  static bool I(int64_t a, int64_t* r) {
    if (a == INT64_MIN) return false;
    *r = -a;
    return true;
  }
  static constexpr const char* kName = "Neg";
};
struct FnAbs {
  static float F(float a) { return scalar::Abs(a); }
  static bool I(int64_t a, int64_t* r) {
    if (a == INT64_MIN) return false;
    *r = scalar::Abs<int64_t>(a);
    return true;
  }
  static constexpr const char* kName = "Abs";
};
struct FnRelu {
  static float F(float a) { return scalar::Relu(a); }
  static bool I(int64_t a, int64_t* r) {
    *r = scalar::Relu<int64_t>(a);
    return true;
  }
  static constexpr const char* kName = "Relu";
};

#define PTOX_CPU_COMPARE(Name)                                          \
  struct Fn##Name {                                                     \
    template <typename T>                                               \
    static bool C(T a, T b) { return scalar::Name(a, b); }              \
    static constexpr const char* kName = #Name;                         \
  };
PTOX_CPU_COMPARE(Eq)
PTOX_CPU_COMPARE(Ne)
PTOX_CPU_COMPARE(Lt)
PTOX_CPU_COMPARE(Le)
PTOX_CPU_COMPARE(Gt)
PTOX_CPU_COMPARE(Ge)
#undef PTOX_CPU_COMPARE

}  // namespace ptox::cpu
