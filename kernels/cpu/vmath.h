// Vector forms of kernels/scalar.h functions that the compiler does not vectorize well on its own:
// exp, and tanh, sigmoid, silu and gelu, which are built on it. Each computes the same IEEE
// operations as its scalar definition, so the bits stay identical to the interpreter on every
// input (tests/accuracy/vmath_check.cc compares all 2^32 f32 inputs per ISA). Highway with static
// dispatch: generated code is compiled once per ISA, and the scalar target (no SIMD) uses the
// scalar definitions.
//
// Fused loops call the array forms on chunks of a row (targets/cpu/fusion.cc): the element code
// around them stays plain C++ that the compiler vectorizes.
#pragma once

#include <cstdint>

#include "kernels/cpu/hwy.h"

#include "kernels/scalar.h"

namespace ptox::cpu::vmath {

namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
#define PTOX_VMATH 1

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// scalar::Exp, lane by lane. Differences in form, not in value:
//  - the clamps are max / min instructions, which return their second operand (the bound) for a
//    NaN first operand, as the scalar selects `x > lo ? x : lo` do;
//  - n's integer value is read from the bits of the rounded sum (x log2 e + 1.5 * 2^23 lies in
//    [2^23, 2^24), where the last bits are 2^22 + n), not converted back from n;
//  - on AVX-512, vscalefps multiplies by 2^n with one rounding, the rounding of the scalar form's
//    two exact-then-rounded steps (p 2^(n>>1) is exact for every n here).
// kNonPositive: the caller knows x <= 0 (-Inf included) and not NaN, where the upper clamp and
// the NaN case change nothing, so they are left out (3 of 19 instructions on AVX-512).
template <bool kNonPositive = false>
inline V Exp(V x) {
  const D d;
  V xc = hn::Max(x, hn::Set(d, -104.0f));
  if constexpr (!kNonPositive) xc = hn::Min(xc, hn::Set(d, 88.8f));
  const V magic = hn::Set(d, 12582912.0f);
  const V t = hn::MulAdd(xc, hn::Set(d, 1.44269504088896341f), magic);
  const V n = hn::Sub(t, magic);
  V r = hn::MulAdd(n, hn::Set(d, -0.693145751953125f), xc);
  r = hn::MulAdd(n, hn::Set(d, -1.428606765330187e-06f), r);
  const V z = hn::Mul(r, r);
  V p = hn::MulAdd(hn::Set(d, 1.9875691500e-4f), r, hn::Set(d, 1.3981999507e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 8.3334519073e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 4.1665795894e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.6666665459e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 5.0000001201e-1f));
  p = hn::Add(hn::MulAdd(p, z, r), hn::Set(d, 1.0f));
#if HWY_TARGET <= HWY_AVX3
  const V result{_mm512_scalef_ps(p.raw, n.raw)};
#else
  const hn::RebindToSigned<D> di;
  const auto ni = hn::Sub(hn::BitCast(di, t), hn::BitCast(di, magic));
  const auto n1 = hn::ShiftRight<1>(ni);
  const auto bias = hn::Set(di, 127);
  const V s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n1, bias)));
  const V s2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::Sub(ni, n1), bias)));
  const V result = hn::Mul(hn::Mul(p, s1), s2);
#endif
  if constexpr (kNonPositive) return result;
  return hn::IfThenElse(hn::IsNaN(x), hn::Add(x, x), result);
}

// c_n x^n + ... + c_0 by Horner's rule with fused multiply-adds (scalar::Poly).
inline V Poly(V, float c0) { return hn::Set(D(), c0); }
template <typename... C>
inline V Poly(V x, float cn, float next, C... rest) {
  V p = hn::Set(D(), cn);
  for (float c : {next, rest...}) p = hn::MulAdd(p, x, hn::Set(D(), c));
  return p;
}

// scalar::Tanh, lane by lane.
inline V Tanh(V x) {
  const D d;
  const V z = hn::Abs(x), s = hn::Mul(x, x), one = hn::Set(d, 1.0f);
  const V p = Poly(s, -5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f,
                   1.33314422036e-1f, -3.33332819422e-1f);
  const V small = hn::MulAdd(x, hn::Mul(p, s), x);
  V big = hn::Sub(one, hn::Div(hn::Set(d, 2.0f), hn::Add(Exp(hn::Add(z, z)), one)));
  big = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Neg(big), big);
  V r = hn::IfThenElse(hn::Lt(z, hn::Set(d, 0.625f)), small, big);
  r = hn::IfThenElse(hn::Eq(z, hn::Zero(d)), x, r);
  return hn::IfThenElse(hn::IsNaN(x), hn::Add(x, x), r);
}

// scalar::Sigmoid, lane by lane.
inline V Sigmoid(V x) {
  const D d;
  const V e = Exp(hn::Neg(hn::Abs(x)));
  const V den = hn::Add(hn::Set(d, 1.0f), e);
  const V neg = hn::IfThenElse(hn::IsNaN(x), hn::Add(x, x), hn::Div(e, den));
  return hn::IfThenElse(hn::Ge(x, hn::Zero(d)), hn::Div(hn::Set(d, 1.0f), den), neg);
}

// scalar::Silu, lane by lane.
inline V Silu(V x) {
  const D d;
  const V r = hn::Mul(x, Sigmoid(x));
  return hn::IfThenElse(hn::Eq(x, hn::Set(d, -__builtin_huge_valf())), hn::Set(d, -0.0f), r);
}

// scalar::Gelu, lane by lane.
inline V Gelu(V x) {
  const D d;
  const V inner = hn::Add(hn::Set(d, 1.0f), hn::Mul(hn::Set(d, 0.044715f), hn::Mul(x, x)));
  const V v = hn::Mul(hn::Set(d, 1.5957691216f), hn::Mul(x, inner));
  const V g = hn::Mul(x, Sigmoid(v));
  return hn::IfThenElse(hn::Eq(x, hn::Set(d, -__builtin_huge_valf())), hn::Set(d, -0.0f), g);
}
#endif

// The array forms: out[k] = scalar::F(in[k]) for k in [0, n); in and out may be the same array.
#ifdef PTOX_VMATH
#define PTOX_VMATH_ARRAY(F)                                                    \
  inline void F(const float* in, float* out, int64_t n) {                      \
    const D d;                                                                 \
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));                      \
    int64_t k = 0;                                                             \
    for (; k + N <= n; k += N) hn::StoreU(F(hn::LoadU(d, in + k)), d, out + k); \
    for (; k < n; ++k) out[k] = scalar::F(in[k]);                              \
  }
#else
#define PTOX_VMATH_ARRAY(F)                                               \
  inline void F(const float* in, float* out, int64_t n) {                 \
    for (int64_t k = 0; k < n; ++k) out[k] = scalar::F(in[k]);            \
  }
#endif
#define PTOX_VMATH_FN(F) PTOX_VMATH_ARRAY(F)
#include "kernels/cpu/vmath_fns.def"
#undef PTOX_VMATH_ARRAY

// out[k] = scalar::Exp(in[k] - m) for k in [0, n) (in and out may be the same array), the f32
// difference rounded first: a fused loop's exp of a row minus a per-row value, which needs no
// buffer for the differences and, read in place, no copy of the row. `max_of_in`: m is the
// maximum of in[0, n) (softmax); when it is finite, every difference is <= 0 or -Inf and none is
// NaN, so Exp's upper clamp and NaN case are left out. (A row with a NaN, or an infinite maximum,
// takes the general form.)
inline void ExpSub(const float* in, float m, float* out, int64_t n, bool max_of_in) {
#ifdef PTOX_VMATH
  const D d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const V vm = hn::Set(d, m);
  int64_t k = 0;
  if (max_of_in && __builtin_isfinite(m)) {
    for (; k + N <= n; k += N) hn::StoreU(Exp<true>(hn::Sub(hn::LoadU(d, in + k), vm)), d, out + k);
  } else {
    for (; k + N <= n; k += N) hn::StoreU(Exp(hn::Sub(hn::LoadU(d, in + k), vm)), d, out + k);
  }
#else
  (void)max_of_in;
  int64_t k = 0;
#endif
  for (; k < n; ++k) out[k] = scalar::Exp(in[k] - m);
}

}  // namespace ptox::cpu::vmath
