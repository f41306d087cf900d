// One functor per ScalarFn of ops.def, generated from kernels/scalar_fns.def: F for floats
// (kernels/scalar.h, bit-identical to the interpreter), I for checked int64 arithmetic (false on
// overflow or division by zero), C for comparisons. Generated code names them pc::Fn<ScalarFn>.
#pragma once

#include <type_traits>

#include "kernels/cpu/core.h"

namespace ptox::cpu {

#define PTOX_SCALAR_BINARY(Name, text)                                                          \
  struct Fn##Name {                                                                             \
    static float F(float a, float b) { return scalar::Name(a, b); }                             \
    static bool I(int64_t a, int64_t b, int64_t* r) { return scalar::Checked##Name(a, b, r); } \
    static constexpr const char* kName = #Name;                                                 \
  };
#define PTOX_SCALAR_INT_BINARY(Name, text)                                                      \
  struct Fn##Name {                                                                             \
    static bool I(int64_t a, int64_t b, int64_t* r) { return scalar::Checked##Name(a, b, r); } \
    static constexpr const char* kName = #Name;                                                 \
  };
#define PTOX_SCALAR_UNARY(Name, text)                   \
  struct Fn##Name {                                     \
    static float F(float a) { return scalar::Name(a); } \
    static constexpr const char* kName = #Name;         \
  };
#define PTOX_SCALAR_INT_UNARY(Name, text)                                             \
  struct Fn##Name {                                                                   \
    static float F(float a) { return scalar::Name(a); }                               \
    static bool I(int64_t a, int64_t* r) { return scalar::Checked##Name(a, r); }      \
    static constexpr const char* kName = #Name;                                       \
  };
#define PTOX_SCALAR_COMPARE(Name, text)                    \
  struct Fn##Name {                                        \
    template <typename T>                                  \
    static bool C(T a, T b) { return scalar::Name(a, b); } \
    static constexpr const char* kName = #Name;            \
  };
#include "kernels/scalar_fns.def"

// Fused loops run each chunk first in a fast mode (kExact false) and run it again exactly when
// one of its results is NaN (targets/cpu/fusion.cc). The fast mode drops only what picks which
// NaN comes out: Add and Mul without FirstNaN. Both modes give NaN at the same elements and the
// same bits everywhere else, so a chunk without a NaN result has the exact results.
template <bool kExact, typename Fn>
inline float Eval(float a, float b) {
  if constexpr (!kExact && std::is_same_v<Fn, FnAdd>) return a + b;
  else if constexpr (!kExact && std::is_same_v<Fn, FnMul>) return a * b;
  else return Fn::F(a, b);
}
// Whether a fused loop's result is NaN (never, for integer and bool values).
template <typename T>
inline bool IsNaN(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

}  // namespace ptox::cpu
