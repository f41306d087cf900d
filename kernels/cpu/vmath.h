// Vector forms of kernels/scalar.h functions that the compiler cannot vectorize well on its own,
// each computing the same IEEE operations as its scalar definition, so the bits stay identical
// to the interpreter on every input (tests/unit/kernels/vmath_test.cc compares all 2^32 f32
// inputs). Highway with static dispatch: generated code is compiled once per ISA, and the scalar
// target (no SIMD) falls back to the scalar definition.
//
// Fused loops call the array forms on chunks of a row (targets/cpu/fusion.cc): the element code
// around them stays plain C++ that the compiler vectorizes.
#pragma once

#include <cstdint>

#ifndef HWY_DISABLE_PCLMUL_AES  // see kernels/cpu/reduce.h
#define HWY_DISABLE_PCLMUL_AES
#endif
#include <hwy/highway.h>

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
inline V Exp(V x) {
  const D d;
  V xc = hn::Max(x, hn::Set(d, -104.0f));
  xc = hn::Min(xc, hn::Set(d, 88.8f));
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
  return hn::IfThenElse(hn::IsNaN(x), hn::Add(x, x), result);
}
#endif

// out[k] = scalar::Exp(in[k]) for k in [0, n); in and out may be the same array.
inline void Exp(const float* in, float* out, int64_t n) {
  int64_t k = 0;
#ifdef PTOX_VMATH
  const D d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (; k + N <= n; k += N) hn::StoreU(Exp(hn::LoadU(d, in + k)), d, out + k);
#endif
  for (; k < n; ++k) out[k] = scalar::Exp(in[k]);
}

}  // namespace ptox::cpu::vmath
