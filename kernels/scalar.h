// Elementwise scalar math shared by the interpreter and every target (CPU SIMD, CUDA): one
// definition of each op, written without libm so that all targets produce identical bits.
//
// Rules (DESIGN.md, Numerics):
//  - f32 is IEEE binary32 with round-to-nearest-even; no contraction into FMA (host code is built
//    with -ffp-contract=off, CUDA code with --fmad=false), no reassociation. A fused multiply-add
//    is written out where a function wants one (Fma): IEEE fusedMultiplyAdd, one rounding, the
//    same bits on every target (an FMA instruction where the ISA has one, libm's correctly
//    rounded fmaf where it does not).
//  - Every function is straight-line code of +, -, *, /, Fma, comparisons, selects and bit casts,
//    so compilers can vectorize loops over it and CUDA can compile it (PTOX_HD).
//  - Error bounds are stated per function in ulps of the correctly rounded f32 result; they are
//    measured against double-precision references in tests/unit/interp/scalar_test.cc.
//  - Integer Div / Rem are floor division (Python semantics). Division by zero and overflow are
//    reported by the Checked* forms (every target raises them as runtime errors).
//  - kernels/scalar_fns.def lists every elementwise function here; the interpreter and the tile
//    libraries dispatch on that list, so a new function is one definition plus one row.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstdint>
#include <cstring>
#endif

#if defined(__CUDACC__)
#define PTOX_HD __host__ __device__
#else
#define PTOX_HD
#endif

namespace ptox::scalar {

// ---- Bit casts ---------------------------------------------------------------------------------

PTOX_HD inline uint32_t FloatBits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
PTOX_HD inline float BitsFloat(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
PTOX_HD inline bool IsNaN(float x) { return x != x; }
// `r`, except that a NaN `a` wins (made quiet, as arithmetic makes a signalling NaN). Written as
// a bitwise blend on a fully computed `r`: a select lets compilers turn `r` into a masked
// operation with a masked memory operand, which is twice as slow on some AVX-512 cores.
PTOX_HD inline float FirstNaN(float a, float r) {
  uint32_t nan = IsNaN(a) ? 0xFFFFFFFFu : 0u;
  return BitsFloat((FloatBits(r) & ~nan) | ((FloatBits(a) | 0x00400000u) & nan));
}
// a * b + c with one rounding (IEEE 754 fusedMultiplyAdd): never a contraction the compiler
// chose, so every target computes it. No NaN reaches it in the functions below (their NaN results
// are chosen at the end), so which NaN operand an FMA instruction returns never matters.
PTOX_HD inline float Fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}
// 2^k for k in [-126, 127], built from its bits.
PTOX_HD inline float Pow2(int32_t k) { return BitsFloat(static_cast<uint32_t>(k + 127) << 23); }

// ---- Storage conversions -----------------------------------------------------------------------

// bf16 -> f32: exact (bf16 is the upper half of an f32).
PTOX_HD inline float Bf16ToF32(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

// f32 -> bf16, round to nearest even. NaN stays NaN, made quiet, sign kept; values past the bf16
// range round to +-Inf; subnormals round like any other value. Tie examples: 0x3F818000 ->
// 0x3F82 (odd 0x3F81 rounds up), 0x3F828000 -> 0x3F82 (even 0x3F82 stays).
PTOX_HD inline uint16_t F32ToBf16NotNaN(float x) {  // F32ToBf16 of a value known not NaN
  uint32_t u = FloatBits(x);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
PTOX_HD inline uint16_t F32ToBf16(float x) {
  uint16_t nan = static_cast<uint16_t>((FloatBits(x) >> 16) | 0x0040u);
  return IsNaN(x) ? nan : F32ToBf16NotNaN(x);
}

// f16 -> f32: exact, including subnormals; NaN payloads are kept and made quiet.
PTOX_HD inline float F16ToF32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  uint32_t normal = sign | ((exp + 112u) << 23) | (man << 13);
  uint32_t special = sign | 0x7F800000u | (man << 13) | (man ? 0x400000u : 0u);
  // Subnormal (or zero): man * 2^-24, exact in f32.
  float sub = static_cast<float>(static_cast<int32_t>(man)) * 5.9604644775390625e-8f;
  uint32_t subnormal = sign | FloatBits(sub);
  return BitsFloat(exp == 0 ? subnormal : (exp == 31 ? special : normal));
}

// f32 -> f16 (IEEE binary16), round to nearest even. Results below 2^-14 become f16 subnormals
// (or +-0), magnitudes >= 65520 become +-Inf, NaN stays NaN (quiet, sign and top payload kept).
PTOX_HD inline uint16_t F32ToF16(float x) {
  uint32_t u = FloatBits(x);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7FFFFFFFu;
  // Normal range: rebias the exponent; the carry of rounding may reach the exponent (even Inf).
  uint32_t n = (a - 0x38000000u) >> 13;
  uint32_t rem = a & 0x1FFFu;
  n += (rem > 0x1000u || (rem == 0x1000u && (n & 1u))) ? 1u : 0u;
  // Subnormal range (a < 2^-14): value / 2^-24 rounded to nearest even.
  int32_t shift = 126 - static_cast<int32_t>(a >> 23);  // >= 14 here
  shift = shift > 31 ? 31 : (shift < 1 ? 1 : shift);    // only used when in range
  uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t q = m >> shift;
  uint32_t r = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  q += (r > half || (r == half && (q & 1u))) ? 1u : 0u;
  uint32_t sub = a < 0x33000001u ? 0u : q;  // at or below 2^-25 (a tie with 0) -> 0
  uint32_t mag = a > 0x7F800000u    ? (0x7E00u | ((a >> 13) & 0x3FFu))
                 : a >= 0x47800000u ? 0x7C00u
                 : a < 0x38800000u  ? sub
                                    : n;
  return static_cast<uint16_t>(sign | mag);
}

// ---- Arithmetic --------------------------------------------------------------------------------

// IEEE add / sub / mul / div for floats (correctly rounded). For integers: plain arithmetic; the
// caller checks overflow. Integer Div is floor division; b != 0 and no overflow required.
template <typename T>
PTOX_HD inline T Add(T a, T b) {
  return a + b;
}
template <typename T>
PTOX_HD inline T Sub(T a, T b) {
  return a - b;
}
template <typename T>
PTOX_HD inline T Mul(T a, T b) {
  return a * b;
}
template <typename T>
PTOX_HD inline T Div(T a, T b) {
  T q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <>
PTOX_HD inline float Div<float>(float a, float b) {
  return a / b;
}
// Add and Mul commute, so a compiler may swap their operands; when both are NaN that would change
// which payload comes out. Pinning it to the first NaN operand (quieted, as hardware does) keeps
// every target bit-identical to the interpreter. Sub and Div do not commute: hardware already
// returns the first NaN operand.
template <>
PTOX_HD inline float Add<float>(float a, float b) {
  return FirstNaN(a, a + b);
}
template <>
PTOX_HD inline float Mul<float>(float a, float b) {
  return FirstNaN(a, a * b);
}

// Floor remainder (sign of the divisor, Python semantics): Rem(-7, 2) = 1, Rem(7, -2) = -1.
// Integers only; b != 0 required; Rem(MIN, -1) = 0.
template <typename T>
PTOX_HD inline T Rem(T a, T b) {
  T r = b == -1 ? T(0) : a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Max / Min: NaN if either operand is NaN (unlike fmaxf), and -0 < +0: Max(-0, +0) = +0,
// Min(-0, +0) = -0 in either operand order. Exact.
template <typename T>
PTOX_HD inline T Max(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
PTOX_HD inline T Min(T a, T b) {
  return b < a ? b : a;
}
template <>
PTOX_HD inline float Max<float>(float a, float b) {
  float m = a < b ? b : (b < a ? a : (FloatBits(a) & 0x80000000u ? b : a));
  return IsNaN(a) ? a : (IsNaN(b) ? b : m);
}
template <>
PTOX_HD inline float Min<float>(float a, float b) {
  float m = a < b ? a : (b < a ? b : (FloatBits(a) & 0x80000000u ? a : b));
  return IsNaN(a) ? a : (IsNaN(b) ? b : m);
}

// Neg flips the sign (Neg(+0) = -0, Neg(NaN) = NaN with the sign flipped). Integers: the caller
// checks Neg(MIN). Exact.
template <typename T>
PTOX_HD inline T Neg(T a) {
  return -a;
}
// Floats flip the sign bit in the integer domain: g++ folds `y + -x` into `y - x` (and `y - -x`,
// `y / -x` likewise), which returns x's NaN with its own sign, so a fused add(y, neg(x)) gave
// the other NaN than the interpreter (tests/conformance/fused_pairs_test.cc).
template <>
PTOX_HD inline float Neg<float>(float a) {
  return BitsFloat(FloatBits(a) ^ 0x80000000u);
}
// Abs clears the sign bit of floats (Abs(-0) = +0, Abs(-Inf) = +Inf, NaN stays NaN). Exact.
template <typename T>
PTOX_HD inline T Abs(T a) {
  return a < 0 ? -a : a;
}
template <>
PTOX_HD inline float Abs<float>(float a) {
  return BitsFloat(FloatBits(a) & 0x7FFFFFFFu);
}

// Relu(x) = x <= 0 ? +0 : x, so Relu(-0) = +0, Relu(NaN) = NaN, Relu(-Inf) = 0. Exact.
template <typename T>
PTOX_HD inline T Relu(T a) {
  return a <= T(0) ? T(0) : a;
}

// Comparisons follow IEEE: any comparison with NaN is false except Ne; -0 == +0. Exact.
template <typename T>
PTOX_HD inline bool Eq(T a, T b) {
  return a == b;
}
template <typename T>
PTOX_HD inline bool Ne(T a, T b) {
  return a != b;
}
template <typename T>
PTOX_HD inline bool Lt(T a, T b) {
  return a < b;
}
template <typename T>
PTOX_HD inline bool Le(T a, T b) {
  return a <= b;
}
template <typename T>
PTOX_HD inline bool Gt(T a, T b) {
  return a > b;
}
template <typename T>
PTOX_HD inline bool Ge(T a, T b) {
  return a >= b;
}

// The order argmax ranks values in (tile.row_argmax, tensor.argmax): a NaN is above every
// non-NaN value but not above another NaN (so the first NaN wins), +0 is above -0, otherwise
// a > b; integers compare as integers. Exact.
template <typename T>
PTOX_HD inline bool ArgmaxGt(T a, T b) {
  return a > b;
}
PTOX_HD inline bool ArgmaxGt(float a, float b) {
  if (IsNaN(b)) return false;
  if (IsNaN(a)) return true;
  if (a == 0.0f && b == 0.0f) return (FloatBits(a) >> 31) == 0 && (FloatBits(b) >> 31) != 0;
  return a > b;
}

// ---- Checked integer arithmetic (int64) --------------------------------------------------------

// The integer forms of the ops above with their errors made explicit: false on overflow of int64
// or division by zero (the caller also checks the result against its dtype's range). Floor
// division and remainder as Div / Rem.
PTOX_HD inline bool CheckedAdd(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_add_overflow(a, b, r);
}
PTOX_HD inline bool CheckedSub(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_sub_overflow(a, b, r);
}
PTOX_HD inline bool CheckedMul(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_mul_overflow(a, b, r);
}
PTOX_HD inline bool CheckedDiv(int64_t a, int64_t b, int64_t* r) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return false;
  *r = Div<int64_t>(a, b);
  return true;
}
PTOX_HD inline bool CheckedRem(int64_t a, int64_t b, int64_t* r) {
  if (b == 0) return false;
  *r = Rem<int64_t>(a, b);
  return true;
}
PTOX_HD inline bool CheckedMax(int64_t a, int64_t b, int64_t* r) {
  *r = Max<int64_t>(a, b);
  return true;
}
PTOX_HD inline bool CheckedMin(int64_t a, int64_t b, int64_t* r) {
  *r = Min<int64_t>(a, b);
  return true;
}
PTOX_HD inline bool CheckedNeg(int64_t a, int64_t* r) {
  if (a == INT64_MIN) return false;
  *r = -a;
  return true;
}
PTOX_HD inline bool CheckedAbs(int64_t a, int64_t* r) {
  if (a == INT64_MIN) return false;
  *r = Abs<int64_t>(a);
  return true;
}
PTOX_HD inline bool CheckedRelu(int64_t a, int64_t* r) {
  *r = Relu<int64_t>(a);
  return true;
}

// ---- Roots and reciprocals ---------------------------------------------------------------------

// IEEE square root, correctly rounded (0 ulp). Sqrt(-0) = -0, Sqrt(x < 0) = NaN, Sqrt(Inf) = Inf.
PTOX_HD inline float Sqrt(float x) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}
// 1 / x, correctly rounded. Recip(+-0) = +-Inf, Recip(+-Inf) = +-0, subnormal x may give Inf.
PTOX_HD inline float Recip(float x) { return 1.0f / x; }
// 1 / Sqrt(x): two correctly rounded steps, error <= 1 ulp. Rsqrt(+0) = +Inf, Rsqrt(-0) = -Inf,
// Rsqrt(+Inf) = +0, Rsqrt(x < 0) = NaN.
PTOX_HD inline float Rsqrt(float x) { return 1.0f / Sqrt(x); }

// ---- Polynomials -------------------------------------------------------------------------------

// c_n x^n + ... + c_0 by Horner's rule with one rounding per step (Fma), coefficients highest
// first: Poly(x, c_n, ..., c_0).
PTOX_HD inline float Poly(float, float c0) { return c0; }
template <typename... C>
PTOX_HD inline float Poly(float x, float cn, float next, C... rest) {
  return Poly(x, Fma(cn, x, next), rest...);
}

// ---- Exponentials and logarithms ---------------------------------------------------------------

// e^x. Range reduction x = n ln2 + r (|r| <= ln2/2, two-part ln2 with FMAs), degree-7
// polynomial for e^r (Cephes expf coefficients, Horner with FMAs), then scaling by 2^n in two
// exact steps so that subnormal results round once. Exp(NaN) = NaN, Exp(+Inf) = +Inf,
// Exp(-Inf) = +0, Exp(+-0) = 1, Exp(x > 88.7228) = +Inf, results below 2^-149 / 2 flush to +0
// by rounding (x < -103.97). Error: <= 1 ulp of the correctly rounded result over every f32
// (1.013 ulp of the exact value, measured exhaustively); subnormal results <= 1 subnormal ulp.
PTOX_HD inline float Exp(float x) {
  // Clamped to where the result saturates; written so that a NaN becomes -104 (the selects map
  // to max / min instructions): no NaN reaches the arithmetic or the conversion to int.
  float xc = x > -104.0f ? x : -104.0f;
  xc = xc < 88.8f ? xc : 88.8f;
  // n = round-to-nearest-even(x / ln2) via the 1.5 * 2^23 trick (exact, no libm).
  float n = Fma(xc, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
  float r = Fma(n, -0.693145751953125f, xc);
  r = Fma(n, -1.428606765330187e-06f, r);
  float z = r * r;
  float p = Poly(r, 1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                 1.6666665459e-1f, 5.0000001201e-1f);
  p = Fma(p, z, r) + 1.0f;
  int32_t ni = static_cast<int32_t>(n);  // in [-150, 128]
  int32_t n1 = ni >> 1;
  float result = (p * Pow2(n1)) * Pow2(ni - n1);
  return IsNaN(x) ? x + x : result;
}

// Natural logarithm. x = m 2^e with m in [sqrt(1/2), sqrt(2)) taken from the bits (subnormals
// are scaled by 2^23 first), then a degree-9 polynomial in m - 1 (Cephes logf) and a two-part
// ln2. Log(NaN) = NaN, Log(x < 0) = NaN (also -Inf), Log(+-0) = -Inf, Log(+Inf) = +Inf,
// Log(1) = +0. Error: <= 1 ulp (measured), subnormal inputs included.
PTOX_HD inline float Log(float x) {
  bool sub = x < 1.17549435e-38f;
  float xs = sub ? x * 8388608.0f : x;  // 2^23: exact
  uint32_t u = FloatBits(xs);
  float e = static_cast<float>(static_cast<int32_t>((u >> 23) & 0xFFu) - 126 - (sub ? 23 : 0));
  float m = BitsFloat((u & 0x7FFFFFu) | 0x3F000000u);  // [0.5, 1)
  bool low = m < 0.707106781186547524f;
  e = low ? e - 1.0f : e;
  m = low ? (m + m) - 1.0f : m - 1.0f;
  float z = m * m;
  float y = Poly(m, 7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f,
                 1.4249322787e-1f, -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f,
                 3.3333331174e-1f);
  y = y * m * z;
  y = Fma(e, -2.12194440e-4f, y);
  y = Fma(-0.5f, z, y);
  float result = Fma(e, 0.693359375f, m + y);
  result = x == 0.0f ? -__builtin_huge_valf() : result;
  result = x == __builtin_huge_valf() ? x : result;
  return (x < 0.0f || IsNaN(x)) ? __builtin_nanf("") : result;
}

// ---- Activations -------------------------------------------------------------------------------

// Hyperbolic tangent. |x| < 0.625: odd polynomial x + x^3 P(x^2) (Cephes tanhf); otherwise
// 1 - 2 / (Exp(2|x|) + 1) with the sign restored. Tanh(+-0) = +-0, Tanh(+-Inf) = +-1,
// Tanh(NaN) = NaN, |x| > 9.1 rounds to +-1. Error: <= 2 ulp (1 measured).
PTOX_HD inline float Tanh(float x) {
  float z = Abs(x);
  float s = x * x;
  float p = Poly(s, -5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                 -3.33332819422e-1f);
  float small = Fma(x, p * s, x);
  float big = 1.0f - 2.0f / (Exp(z + z) + 1.0f);
  big = x < 0.0f ? -big : big;
  float result = z < 0.625f ? small : big;
  result = z == 0.0f ? x : result;  // keeps the sign of zero
  return IsNaN(x) ? x + x : result;
}

// The error function erf(x) = 2/sqrt(pi) * integral_0^x e^(-t^2) dt, odd, on |x| in three pieces
// fitted to erf in 40-digit arithmetic: |x| < 0.875: x + x P(x^2); |x| < 2: a polynomial in
// |x| - 1.4375; |x| < 4: 1 - e^(-x^2) Q(1 / |x|) (erfc times e^(x^2) is smooth in 1 / x); +-1
// beyond (erf(4) rounds to 1). Erf(+-0) = +-0, Erf(+-Inf) = +-1, Erf(NaN) = NaN.
// Error: <= 1 ulp of the correctly rounded result over every f32 (1.125 ulp of the exact value,
// measured exhaustively against double erf: tests/accuracy/ulp_sweep.cc).
PTOX_HD inline float Erf(float x) {
  const float a = Abs(x);
  const float t = a * a;
  const float small =
      a + a * Poly(t, 8.671101386e-05f, -8.210109081e-04f, 5.206660833e-03f, -2.686155029e-02f,
                   1.128373221e-01f, -3.761263490e-01f, 1.283791661e-01f);
  const float middle =
      Poly(a - 1.4375f, 4.305975745e-05f, -2.755123132e-04f, 1.074039683e-04f, 1.697288593e-03f,
           -3.331547370e-03f, -3.317612689e-03f, 2.110778354e-02f, -2.246728539e-02f,
           -3.878296167e-02f, 1.492242515e-01f, -2.054159045e-01f, 1.428980231e-01f,
           9.579405785e-01f);
  const float large =
      1.0f - Exp(-t) * Poly(1.0f / a, 2.338464260e-01f, -6.825398803e-01f, 6.091445088e-01f,
                            2.484406531e-01f, -9.624340534e-01f, 7.661396861e-01f,
                            -7.329656929e-02f, -2.726839483e-01f, -6.308699958e-04f,
                            5.641992092e-01f, 7.958749961e-07f);
  const float r = a < 0.875f ? small : (a < 2.0f ? middle : (a < 4.0f ? large : 1.0f));
  return IsNaN(x) ? x + x : BitsFloat(FloatBits(r) | (FloatBits(x) & 0x80000000u));
}

// Logistic sigmoid 1 / (1 + e^-x), evaluated as 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0
// with e = Exp(-|x|), so large negative x gives the tiny (subnormal) result rather than 0.
// Sigmoid(-Inf) = +0, Sigmoid(+Inf) = 1, Sigmoid(+-0) = 0.5, Sigmoid(NaN) = NaN.
// Error: <= 2 ulp for normal results (measured).
PTOX_HD inline float Sigmoid(float x) {
  float e = Exp(-Abs(x));
  float d = 1.0f + e;
  return x >= 0.0f ? 1.0f / d : (IsNaN(x) ? x + x : e / d);
}

// SiLU x * Sigmoid(x). Silu(+-0) = +-0, Silu(+Inf) = +Inf, Silu(-Inf) = -0, Silu(NaN) = NaN.
// Error: <= 3 ulp while the result is a normal f32 (x > -87); for smaller x the result is
// subnormal or zero and its absolute error is below 2^-126.
PTOX_HD inline float Silu(float x) {
  float s = Sigmoid(x);
  return x == -__builtin_huge_valf() ? -0.0f : x * s;
}

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated as
// x * Sigmoid(2u) with u = 0.7978845608 (x + 0.044715 x^3) (an identity that avoids the
// cancellation in 1 + tanh for negative x). Gelu(+-0) = +-0, Gelu(+Inf) = +Inf, Gelu(-Inf) = -0,
// Gelu(NaN) = NaN. Error (vs x / (1 + e^-2u) in double, u from the f32 x): <= 3 ulp for
// x >= 0; for x < 0 the function is ill-conditioned (the f32 rounding of u is amplified by about
// |2u|), and the error is <= 4 (1 + |2u|) ulp while the result is a normal f32 (x > -13).
PTOX_HD inline float Gelu(float x) {
  float v = 1.5957691216f * (x * (1.0f + 0.044715f * (x * x)));
  float g = x * Sigmoid(v);
  return x == -__builtin_huge_valf() ? -0.0f : g;
}

}  // namespace ptox::scalar
