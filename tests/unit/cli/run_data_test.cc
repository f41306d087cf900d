// `ptox run` data helpers: the documented random distribution, summary lines, FNV-1a checksums
// and run-to-run comparison.
#include "tools/ptox/run_data.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "kernels/scalar.h"

namespace ptox::cli {
namespace {

NpyArray Make(DType dtype, std::vector<int64_t> shape) {
  Result<NpyArray> a = NpyArray::Allocate(dtype, std::move(shape));
  EXPECT_TRUE(a.ok());
  return std::move(a).value();
}

template <typename T>
NpyArray FromValues(DType dtype, const std::vector<T>& v) {
  NpyArray a = Make(dtype, {static_cast<int64_t>(v.size())});
  std::memcpy(a.data(), v.data(), a.nbytes());
  return a;
}

TEST(Fnv1a, KnownVectors) {
  EXPECT_EQ(Fnv1a("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a("foobar", 6), 0x85944171f73967e8ull);
}

TEST(FillRandom, FloatsFollowTheDocumentedMapping) {
  NpyArray a = Make(DType::kF32, {4096});
  std::mt19937_64 rng(5);
  FillRandom(a, rng);
  std::mt19937_64 ref(5);
  double sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    float want = static_cast<float>(2.0 * std::ldexp(static_cast<double>(ref() >> 11), -53) - 1);
    float got;
    std::memcpy(&got, a.data() + 4 * i, 4);
    ASSERT_EQ(got, want) << i;
    ASSERT_GE(got, -1.0f);
    ASSERT_LE(got, 1.0f);
    sum += got;
  }
  EXPECT_LT(std::fabs(sum / 4096), 0.05);  // uniform around 0
}

TEST(FillRandom, HalfFloatsAreRoundedF32Draws) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    NpyArray a = Make(t, {1000});
    NpyArray f = Make(DType::kF32, {1000});
    std::mt19937_64 r1(9), r2(9);
    FillRandom(a, r1);
    FillRandom(f, r2);
    for (int64_t i = 0; i < 1000; ++i) {
      float x;
      std::memcpy(&x, f.data() + 4 * i, 4);
      uint16_t want = t == DType::kBF16 ? scalar::F32ToBf16(x) : scalar::F32ToF16(x);
      uint16_t got;
      std::memcpy(&got, a.data() + 2 * i, 2);
      ASSERT_EQ(got, want) << DTypeName(t) << " element " << i;
    }
  }
}

TEST(FillRandom, IntsCoverMinus8To8AndBoolsBoth) {
  for (DType t : {DType::kI8, DType::kI32, DType::kI64}) {
    NpyArray a = Make(t, {2000});
    std::mt19937_64 rng(1);
    FillRandom(a, rng);
    std::set<double> seen;
    for (int64_t i = 0; i < a.numel(); ++i) seen.insert(ElementAsDouble(a, i));
    EXPECT_EQ(seen.size(), 17u) << DTypeName(t);
    EXPECT_EQ(*seen.begin(), -8);
    EXPECT_EQ(*seen.rbegin(), 8);
  }
  NpyArray b = Make(DType::kBool, {200});
  std::mt19937_64 rng(1);
  FillRandom(b, rng);
  std::set<char> bytes(b.data(), b.data() + b.nbytes());
  EXPECT_EQ(bytes, (std::set<char>{0, 1}));
}

TEST(FillRandom, SeedsChangeTheData) {
  NpyArray a = Make(DType::kF32, {64}), b = Make(DType::kF32, {64}), c = Make(DType::kF32, {64});
  std::mt19937_64 r0(0), r0b(0), r1(1);
  FillRandom(a, r0);
  FillRandom(b, r0b);
  FillRandom(c, r1);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.nbytes()), 0);
}

TEST(SummaryLine, FloatsWithNan) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  NpyArray a = FromValues<float>(DType::kF32, {1.0f, -2.0f, 3.5f, nan});
  std::string want = fmt::format("%x: 4xf32 min=-2 max=3.5 mean=0.8333333 nan=1 checksum=0x{:016x}",
                                 Fnv1a(a.data(), 16));
  EXPECT_EQ(SummaryLine("x", a), want);
}

TEST(SummaryLine, IntegersAndEmpty) {
  NpyArray a = FromValues<int32_t>(DType::kI32, {7, -123456789, 5});
  EXPECT_EQ(SummaryLine("k", a).substr(0, 51),
            "%k: 3xi32 min=-123456789 max=7 mean=-4.115226e+07 c");
  NpyArray e = Make(DType::kF16, {0, 3});
  EXPECT_EQ(SummaryLine("e", e), "%e: 0x3xf16 empty checksum=0xcbf29ce484222325");
  NpyArray bf = FromValues<uint16_t>(DType::kBF16, {0x3F80, 0xC000});  // 1, -2
  EXPECT_NE(SummaryLine("b", bf).find("min=-2 max=1 mean=-0.5"), std::string::npos);
}

TEST(Compare, ReportsMaxAbsAndNanMismatch) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  NpyArray a = FromValues<float>(DType::kF32, {1.0f, 2.0f, nan, nan, 0.0f});
  NpyArray b = FromValues<float>(DType::kF32, {1.0f, 2.5f, nan, 1.0f, -0.0f});
  DiffStats d = Compare(a, b, 0.0);
  EXPECT_EQ(d.max_abs, 0.5);
  EXPECT_EQ(d.nan_mismatch, 1);
  EXPECT_EQ(d.differing_bits, 3);  // 2 vs 2.5, NaN vs 1, +0 vs -0
  EXPECT_EQ(d.out_of_bound, 2);    // exact: 2 vs 2.5 and +0 vs -0 (the NaN counts separately)
  DiffStats same = Compare(a, a, 0.0);
  EXPECT_EQ(same.max_abs, 0);
  EXPECT_EQ(same.differing_bits, 0);
  EXPECT_EQ(same.out_of_bound, 0);
}

TEST(Compare, RelativeBoundScalesWithTheOutput) {
  NpyArray want = FromValues<float>(DType::kF32, {1000.0f, 1.0f, -0.0f});
  NpyArray got = FromValues<float>(DType::kF32, {1000.5f, 1.01f, 0.0f});
  // Bound 1e-4: element 0 may differ by 1e-4 * (1000 + 1000) = 0.2 -> 0.5 is out; element 1 by
  // 1e-4 * (1 + 1000) = 0.1001 -> 0.01 is in; +0 vs -0 is within any non-zero bound.
  DiffStats d = Compare(got, want, 1e-4);
  EXPECT_EQ(d.out_of_bound, 1);
  EXPECT_EQ(Compare(got, want, 1e-3).out_of_bound, 0);
}

}  // namespace
}  // namespace ptox::cli
