// One functor per ScalarFn of ops.def, generated from kernels/scalar_fns.def: F for floats
// (kernels/scalar.h, bit-identical to the interpreter), I for checked int64 arithmetic (false on
// overflow or division by zero), C for comparisons. Generated code names them pc::Fn<ScalarFn>.
#pragma once

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

}  // namespace ptox::cpu
