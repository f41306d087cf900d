// kernels/scalar.h: edge cases by hand, storage conversions bit by bit, and measured accuracy of
// the transcendental functions against double-precision references (the documented bounds).
#include <cmath>
#include <random>

#include "tests/unit/interp/helpers.h"

namespace ptox::interp::testing {
namespace {

using namespace ::ptox::scalar;  // NOLINT(build/namespaces)

bool SameBits(float a, float b) { return Bits(a) == Bits(b); }

// Distance in ulps between two floats (0 for two NaNs).
int64_t UlpDiff(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  auto ord = [](float f) -> int64_t {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : i;
  };
  int64_t d = ord(a) - ord(b);
  return d < 0 ? -d : d;
}

// Max ulp error of f against the correctly rounded ref over n uniform points in [lo, hi]
// (points whose reference is below the normal range are skipped).
template <typename F, typename R>
int64_t MaxUlp(F f, R ref, float lo, float hi, int n = 100000) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(lo, hi);
  int64_t worst = 0;
  for (int k = 0; k < n; ++k) {
    float x = dist(rng);
    float want = static_cast<float>(ref(static_cast<double>(x)));
    if (std::fabs(want) < 1.17549435e-38f) continue;
    worst = std::max(worst, UlpDiff(f(x), want));
  }
  return worst;
}

TEST(ScalarAccuracy, ExpWithinOneUlp) {
  auto ref = [](double x) { return std::exp(x); };
  EXPECT_LE(MaxUlp(Exp, ref, -87.3f, 88.7f), 1);
  EXPECT_LE(MaxUlp(Exp, ref, -1.0f, 1.0f), 1);
}

TEST(ScalarAccuracy, ExpSubnormalResultsWithinOneUlp) {
  int64_t worst = 0;
  for (float x = -103.9f; x < -87.4f; x += 0.0007f)
    worst = std::max(worst, UlpDiff(Exp(x), static_cast<float>(std::exp(double{x}))));
  EXPECT_LE(worst, 1);
}

TEST(ScalarAccuracy, LogWithinOneUlp) {
  auto ref = [](double x) { return std::log(x); };
  EXPECT_LE(MaxUlp(Log, ref, 0.5f, 2.0f), 1);
  EXPECT_LE(MaxUlp(Log, ref, 1e-6f, 100.0f), 1);
  EXPECT_LE(MaxUlp(Log, ref, 1.0f, 3e38f), 1);
}

TEST(ScalarAccuracy, LogOfSubnormalsWithinOneUlp) {
  int64_t worst = 0;
  for (uint32_t u = 1; u < 0x800000u; u += 97) {
    float x = FromBits(u);
    worst = std::max(worst, UlpDiff(Log(x), static_cast<float>(std::log(double{x}))));
  }
  EXPECT_LE(worst, 1);
}

TEST(ScalarAccuracy, TanhWithinTwoUlp) {
  auto ref = [](double x) { return std::tanh(x); };
  EXPECT_LE(MaxUlp(Tanh, ref, -1.0f, 1.0f), 2);
  EXPECT_LE(MaxUlp(Tanh, ref, -10.0f, 10.0f), 2);
  EXPECT_LE(MaxUlp(Tanh, ref, -1e-3f, 1e-3f), 2);
}

TEST(ScalarAccuracy, SigmoidWithinTwoUlp) {
  auto ref = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  EXPECT_LE(MaxUlp(Sigmoid, ref, -87.0f, 30.0f), 2);
  EXPECT_LE(MaxUlp(Sigmoid, ref, -5.0f, 5.0f), 2);
}

TEST(ScalarAccuracy, SiluWithinThreeUlp) {
  auto ref = [](double x) { return x / (1.0 + std::exp(-x)); };
  EXPECT_LE(MaxUlp(Silu, ref, -80.0f, 30.0f), 3);
  EXPECT_LE(MaxUlp(Silu, ref, -5.0f, 5.0f), 3);
}

TEST(ScalarAccuracy, GeluWithinDocumentedBound) {
  auto ref = [](double x) {
    double u = 0.7978845608 * (x + 0.044715 * x * x * x);
    return x / (1.0 + std::exp(-2.0 * u));
  };
  EXPECT_LE(MaxUlp(Gelu, ref, 0.0f, 20.0f), 3);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-12.0f, 0.0f);
  for (int k = 0; k < 100000; ++k) {
    float x = dist(rng);
    double u = 0.7978845608 * (x + 0.044715 * double{x} * x * x);
    float want = static_cast<float>(ref(x));
    if (std::fabs(want) < 1.17549435e-38f) continue;
    ASSERT_LE(static_cast<double>(UlpDiff(Gelu(x), want)), 4.0 * (1.0 + std::fabs(2.0 * u)))
        << "x = " << x;
  }
}

TEST(ScalarAccuracy, RsqrtWithinOneUlpSqrtExact) {
  EXPECT_LE(MaxUlp(
                Rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, 1e-30f, 1e30f),
            1);
  EXPECT_EQ(MaxUlp(
                Sqrt, [](double x) { return std::sqrt(x); }, 0.0f, 1e30f),
            0);
}

TEST(ScalarEdges, Exp) {
  EXPECT_EQ(Exp(0.0f), 1.0f);
  EXPECT_EQ(Exp(-0.0f), 1.0f);
  EXPECT_EQ(Exp(kInf), kInf);
  EXPECT_TRUE(SameBits(Exp(-kInf), 0.0f));
  EXPECT_EQ(Exp(88.8f), kInf);
  EXPECT_EQ(Exp(89.0f), kInf);
  EXPECT_TRUE(std::isnan(Exp(kNaN)));
  EXPECT_EQ(Exp(-110.0f), 0.0f);
  EXPECT_EQ(Exp(-103.0f), FromBits(0x00000001));  // e^-103 = 1.32 * 2^-149
  EXPECT_EQ(Exp(-104.0f), 0.0f);                  // e^-104 = 0.49 * 2^-149
  EXPECT_TRUE(std::isfinite(Exp(88.72f)));
  EXPECT_EQ(Exp(88.7229f), kInf);  // e^x > FLT_MAX + ulp/2
  EXPECT_EQ(Exp(1.0f), 2.71828182f);
}

TEST(ScalarEdges, Log) {
  EXPECT_EQ(Log(0.0f), -kInf);
  EXPECT_EQ(Log(-0.0f), -kInf);
  EXPECT_TRUE(std::isnan(Log(-1.0f)));
  EXPECT_TRUE(std::isnan(Log(-kInf)));
  EXPECT_TRUE(std::isnan(Log(kNaN)));
  EXPECT_EQ(Log(kInf), kInf);
  EXPECT_TRUE(SameBits(Log(1.0f), 0.0f));
  EXPECT_EQ(Log(FromBits(1)), static_cast<float>(std::log(0x1p-149)));  // -103.2789
  EXPECT_EQ(Log(2.0f), 0.693147182f);
}

TEST(ScalarEdges, TanhSigmoidSiluGelu) {
  EXPECT_EQ(Tanh(kInf), 1.0f);
  EXPECT_EQ(Tanh(-kInf), -1.0f);
  EXPECT_TRUE(SameBits(Tanh(-0.0f), -0.0f));
  EXPECT_TRUE(SameBits(Tanh(0.0f), 0.0f));
  EXPECT_TRUE(std::isnan(Tanh(kNaN)));
  EXPECT_EQ(Tanh(20.0f), 1.0f);
  EXPECT_EQ(Tanh(FromBits(1)), FromBits(1));  // tanh(x) = x for tiny x
  EXPECT_TRUE(SameBits(Sigmoid(-kInf), 0.0f));
  EXPECT_EQ(Sigmoid(kInf), 1.0f);
  EXPECT_EQ(Sigmoid(0.0f), 0.5f);
  EXPECT_EQ(Sigmoid(-0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(Sigmoid(kNaN)));
  EXPECT_GT(Sigmoid(-100.0f), 0.0f);  // e^-100: subnormal, not flushed
  EXPECT_EQ(Silu(kInf), kInf);
  EXPECT_TRUE(SameBits(Silu(-kInf), -0.0f));
  EXPECT_TRUE(SameBits(Silu(-0.0f), -0.0f));
  EXPECT_TRUE(std::isnan(Silu(kNaN)));
  EXPECT_EQ(Gelu(kInf), kInf);
  EXPECT_TRUE(SameBits(Gelu(-kInf), -0.0f));
  EXPECT_TRUE(SameBits(Gelu(0.0f), 0.0f));
  EXPECT_TRUE(SameBits(Gelu(-0.0f), -0.0f));
  EXPECT_TRUE(std::isnan(Gelu(kNaN)));
  EXPECT_EQ(Gelu(1e20f), 1e20f);
  EXPECT_NEAR(Gelu(1.0f), 0.841191990, 1e-6);  // 0.5 (1 + tanh(0.7978845608 * 1.044715))
}

// Erf: within 1.125 ulp of the exact value everywhere (an exhaustive sweep of every f32,
// docs/ops.md), so within 1 ulp of the correctly rounded one; odd; saturating at +-1.
TEST(ScalarAccuracy, ErfWithinOneUlpOfTheRoundedValue) {
  auto ref = [](double x) { return std::erf(x); };
  EXPECT_LE(MaxUlp(Erf, ref, -5.0f, 5.0f, 400000), 1);
  EXPECT_LE(MaxUlp(Erf, ref, 0.8f, 0.95f), 1);  // around the first seam
  EXPECT_LE(MaxUlp(Erf, ref, 1.9f, 2.1f), 1);   // the second
  EXPECT_LE(MaxUlp(Erf, ref, 1e-30f, 1e-3f), 1);
}

TEST(ScalarEdges, Erf) {
  EXPECT_TRUE(SameBits(Erf(0.0f), 0.0f));
  EXPECT_TRUE(SameBits(Erf(-0.0f), -0.0f));
  EXPECT_EQ(Erf(kInf), 1.0f);
  EXPECT_EQ(Erf(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(Erf(kNaN)));
  EXPECT_EQ(Erf(4.0f), 1.0f);
  EXPECT_EQ(Erf(-3.95f), -static_cast<float>(std::erf(3.95)));
  EXPECT_EQ(Erf(FromBits(1)), FromBits(1));  // 2/sqrt(pi) x rounds to the smallest subnormal
  for (float x : {0.1f, 0.5f, 1.0f, 1.5f, 2.5f}) EXPECT_TRUE(SameBits(Erf(-x), -Erf(x))) << x;
}

TEST(ScalarEdges, MaxMinPropagateNaNAndOrderZeros) {
  EXPECT_TRUE(std::isnan(Max(kNaN, 1.0f)));
  EXPECT_TRUE(std::isnan(Max(1.0f, kNaN)));
  EXPECT_TRUE(std::isnan(Min(kNaN, 1.0f)));
  EXPECT_TRUE(std::isnan(Min(-kInf, kNaN)));
  EXPECT_TRUE(SameBits(Max(-0.0f, 0.0f), 0.0f));
  EXPECT_TRUE(SameBits(Max(0.0f, -0.0f), 0.0f));
  EXPECT_TRUE(SameBits(Min(-0.0f, 0.0f), -0.0f));
  EXPECT_TRUE(SameBits(Min(0.0f, -0.0f), -0.0f));
  EXPECT_EQ(Max(-kInf, -3.0f), -3.0f);
  EXPECT_EQ(Min(-kInf, -3.0f), -kInf);
  EXPECT_EQ(Max<int32_t>(-5, 3), 3);
  EXPECT_EQ(Min<int8_t>(-5, 3), -5);
}

TEST(ScalarEdges, ReluNegAbsRecipRsqrt) {
  EXPECT_TRUE(SameBits(Relu(-0.0f), 0.0f));
  EXPECT_TRUE(std::isnan(Relu(kNaN)));
  EXPECT_TRUE(SameBits(Relu(-kInf), 0.0f));
  EXPECT_EQ(Relu(2.5f), 2.5f);
  EXPECT_EQ(Relu<int32_t>(-7), 0);
  EXPECT_TRUE(SameBits(Neg(0.0f), -0.0f));
  EXPECT_TRUE(SameBits(Abs(-0.0f), 0.0f));
  EXPECT_EQ(Abs(-kInf), kInf);
  EXPECT_EQ(Recip(0.0f), kInf);
  EXPECT_EQ(Recip(-0.0f), -kInf);
  EXPECT_TRUE(SameBits(Recip(-kInf), -0.0f));
  EXPECT_EQ(Rsqrt(0.0f), kInf);
  EXPECT_EQ(Rsqrt(-0.0f), -kInf);
  EXPECT_TRUE(SameBits(Rsqrt(kInf), 0.0f));
  EXPECT_TRUE(std::isnan(Rsqrt(-1.0f)));
  EXPECT_EQ(Rsqrt(4.0f), 0.5f);
  EXPECT_TRUE(SameBits(Sqrt(-0.0f), -0.0f));
  EXPECT_TRUE(std::isnan(Sqrt(-1.0f)));
}

TEST(ScalarEdges, IntegerFloorDivisionAndRemainder) {
  EXPECT_EQ(Div<int64_t>(7, 2), 3);
  EXPECT_EQ(Div<int64_t>(-7, 2), -4);
  EXPECT_EQ(Div<int64_t>(7, -2), -4);
  EXPECT_EQ(Div<int64_t>(-7, -2), 3);
  EXPECT_EQ(Div<int32_t>(-6, 3), -2);
  EXPECT_EQ(Rem<int64_t>(-7, 2), 1);
  EXPECT_EQ(Rem<int64_t>(7, -2), -1);
  EXPECT_EQ(Rem<int64_t>(-7, -2), -1);
  EXPECT_EQ(Rem<int64_t>(6, 3), 0);
  EXPECT_EQ(Rem<int64_t>(INT64_MIN, -1), 0);
  EXPECT_EQ(Div(1.0f, 0.0f), kInf);
}

TEST(ScalarEdges, ComparisonsWithNaNAndZeros) {
  EXPECT_FALSE(Eq(kNaN, kNaN));
  EXPECT_TRUE(Ne(kNaN, kNaN));
  EXPECT_FALSE(Lt(kNaN, 1.0f));
  EXPECT_FALSE(Ge(kNaN, 1.0f));
  EXPECT_TRUE(Eq(-0.0f, 0.0f));
  EXPECT_FALSE(Lt(-0.0f, 0.0f));
  EXPECT_TRUE(Le(-kInf, -kInf));
}

TEST(Bf16, RoundsToNearestEvenBothWays) {
  EXPECT_EQ(F32ToBf16(FromBits(0x3F818000)), 0x3F82);  // tie, odd below -> up
  EXPECT_EQ(F32ToBf16(FromBits(0x3F828000)), 0x3F82);  // tie, even below -> stays
  EXPECT_EQ(F32ToBf16(FromBits(0x3F828001)), 0x3F83);  // just above the tie
  EXPECT_EQ(F32ToBf16(FromBits(0x3F817FFF)), 0x3F81);  // just below the tie
  EXPECT_EQ(F32ToBf16(FromBits(0xBF818000)), 0xBF82);  // negative tie
  EXPECT_EQ(F32ToBf16(1.0f), 0x3F80);
}

TEST(Bf16, SpecialValues) {
  EXPECT_EQ(F32ToBf16(FromBits(0x7F7FFFFF)), 0x7F80);  // FLT_MAX rounds to +Inf
  EXPECT_EQ(F32ToBf16(FromBits(0xFF7FFFFF)), 0xFF80);
  EXPECT_EQ(F32ToBf16(kInf), 0x7F80);
  EXPECT_EQ(F32ToBf16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToBf16(FromBits(0x7F800001)), 0x7FC0);  // signalling NaN -> quiet, not Inf
  EXPECT_EQ(F32ToBf16(FromBits(0xFFC00000)), 0xFFC0);  // sign kept
  EXPECT_EQ(F32ToBf16(FromBits(0x00018000)), 0x0002);  // subnormal tie -> even
  EXPECT_EQ(Bf16ToF32(0x3F82), FromBits(0x3F820000));
  EXPECT_EQ(Bf16ToF32(0x0001), FromBits(0x00010000));
}

TEST(F16, RoundingOverflowSubnormals) {
  EXPECT_EQ(F32ToF16(1.0f), 0x3C00);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(F32ToF16(65519.0f), 0x7BFF);  // below the rounding boundary
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);  // tie with 65536 -> even -> Inf
  EXPECT_EQ(F32ToF16(-1e6f), 0xFC00);
  EXPECT_EQ(F32ToF16(kInf), 0x7C00);
  EXPECT_EQ(F32ToF16(1.0f + 0x1p-11f), 0x3C00);      // tie -> even (down)
  EXPECT_EQ(F32ToF16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(F32ToF16(0x1p-24f), 0x0001);             // smallest subnormal
  EXPECT_EQ(F32ToF16(0x1p-25f), 0x0000);             // tie with 0 -> even
  EXPECT_EQ(F32ToF16(0x1.8p-24f), 0x0002);           // 1.5 ulp tie -> 2
  EXPECT_EQ(F32ToF16(0x1.000002p-25f), 0x0001);      // just above the tie
  EXPECT_EQ(F32ToF16(-0x1p-14f), 0x8400);            // smallest normal
  EXPECT_EQ(F32ToF16(0x1.ff8p-15f), 0x03FF);         // largest subnormal
  EXPECT_EQ(F32ToF16(0x1.ffcp-15f), 0x0400);         // tie -> even, into normal
  EXPECT_EQ(F32ToF16(0x1.ffap-15f), 0x03FF);         // below the tie
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(FromBits(0x7F800001)) & 0x7E00, 0x7E00);  // quiet NaN
  EXPECT_EQ(F32ToF16(FromBits(0xFFC00000)), 0xFE00);
  EXPECT_EQ(F16ToF32(0x0001), 0x1p-24f);
  EXPECT_TRUE(SameBits(F16ToF32(0x8000), -0.0f));
  EXPECT_EQ(F16ToF32(0xFC00), -kInf);
  EXPECT_TRUE(std::isnan(F16ToF32(0x7C01)));
  EXPECT_EQ(F16ToF32(0x7BFF), 65504.0f);
}

TEST(F16, EveryFiniteHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaN
    ASSERT_EQ(F32ToF16(F16ToF32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(F16, MatchesDoubleRoundingOnRandomFloats) {
  // Reference: round |x| / 2^e to an integer with nearbyint (RNE) in double.
  std::mt19937 rng(99);
  for (int k = 0; k < 100000; ++k) {
    float x = FromBits(static_cast<uint32_t>(rng()) & 0x47FFFFFFu);  // |x| < 131072, positive
    double ax = x;
    int e = std::max(std::ilogb(ax), -14);
    double q = std::nearbyint(std::ldexp(ax, 10 - e));
    double want = std::ldexp(q, e - 10);
    float got = F16ToF32(F32ToF16(x));
    if (want > 65504.0)
      ASSERT_EQ(got, kInf) << x;
    else
      ASSERT_EQ(got, static_cast<float>(want)) << x;
  }
}

}  // namespace
}  // namespace ptox::interp::testing
