// Tensor-level ops in the interpreter: broadcasting, reductions, matmul, layout, buffers and
// composites, against hand-computed values and independent double-precision formulas.
#include <cmath>

#include "tests/unit/interp/helpers.h"

namespace ptox::interp::testing {
namespace {

std::vector<float> Floats(const Buf& b) {
  std::vector<float> v(b.bytes.size() / 4);
  for (size_t k = 0; k < v.size(); ++k) v[k] = b.F(k);
  return v;
}

std::vector<uint16_t> Halves(const Buf& b) {
  std::vector<uint16_t> v(b.bytes.size() / 2);
  for (size_t k = 0; k < v.size(); ++k) v[k] = b.At<uint16_t>(k);
  return v;
}

// 0, 1, ..., n - 1 (times `scale`, plus `shift`).
std::vector<float> Iota(int n, float scale = 1.0f, float shift = 0.0f) {
  std::vector<float> v(n);
  for (int k = 0; k < n; ++k) v[k] = static_cast<float>(k) * scale + shift;
  return v;
}

Buf Out(std::vector<int64_t> shape) {
  return Buf::Filled<float>(DType::kF32, std::move(shape), -777.0f);
}

// Deterministic values in [-3, 3) with no exact zeros.
std::vector<float> Wavy(int n, int seed) {
  std::vector<float> v(n);
  for (int k = 0; k < n; ++k) v[k] = 3.0f * std::sin(0.7f * k + 1.3f * seed) + 0.01f;
  return v;
}

// |got - want| <= ulps * 2^-23 * (|want| + 1), elementwise.
void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double ulps) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const double tol = ulps * std::ldexp(1.0, -23) * (std::fabs(want[k]) + 1.0);
    EXPECT_NEAR(got[k], want[k], tol) << "element " << k;
  }
}

// ---- Elementwise and broadcasting.

TEST(TensorBinary, BroadcastsTrailingVector) {
  Buf a = Buf::F32({2, 3}, {1, 2, 3, 4, 5, 6});
  Buf b = Buf::F32({3}, {10, 20, 30});
  Buf y = Out({2, 3});
  RunFunc("%a: in tensor<2x3xf32>, %b: in tensor<3xf32>, %y: out tensor<2x3xf32>",
          "  %r = tensor.add %a, %b\n  tensor.store %r, %y\n", {a.View(), b.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(TensorBinary, BroadcastsColumnAgainstRow) {
  Buf a = Buf::F32({2, 1}, {1, 2});
  Buf b = Buf::F32({1, 3}, {10, 20, 30});
  Buf y = Out({2, 3});
  RunFunc("%a: in tensor<2x1xf32>, %b: in tensor<1x3xf32>, %y: out tensor<2x3xf32>",
          "  %r = tensor.sub %a, %b\n  tensor.store %r, %y\n", {a.View(), b.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{-9, -19, -29, -8, -18, -28}));
}

TEST(TensorBinary, LowerRankFirstOperandStretches) {
  Buf a = Buf::F32({3}, {1, 2, 3});
  Buf b = Buf::F32({2, 3}, {2, 4, 6, 8, 10, 12});
  Buf y = Out({2, 3});
  RunFunc("%a: in tensor<3xf32>, %b: in tensor<2x3xf32>, %y: out tensor<2x3xf32>",
          "  %r = tensor.div %a, %b\n  tensor.store %r, %y\n", {a.View(), b.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{0.5f, 0.5f, 0.5f, 0.125f, 0.2f, 0.25f}));
}

TEST(TensorBinary, ScalarImmediateAndSsaScalar) {
  Buf a = Buf::F32({4}, {1, -2, 3, -4});
  Buf y = Out({4});
  RunFunc("%a: in tensor<4xf32>, %s: in f32, %y: out tensor<4xf32>",
          "  %m = tensor.mul %a, 0.5\n  %r = tensor.sub %m, %s\n  tensor.store %r, %y\n",
          {a.View(), 1.0, y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{-0.5f, -2, 0.5f, -3}));
}

TEST(TensorBinary, F32ScalarRoundsToBf16First) {
  // 1 + 2^-8 is a bf16 tie that rounds to 1.0, so x * s == x (x * 1.00390625 would round up).
  Buf a = Buf::Of<uint16_t>(DType::kBF16, {2}, {0x3F81, 0x4000});  // 1.0078125, 2
  Buf y = Buf::Filled<uint16_t>(DType::kBF16, {2}, 0xFFFF);
  RunFunc("%a: in tensor<2xbf16>, %s: in f32, %y: out tensor<2xbf16>",
          "  %r = tensor.mul %a, %s\n  tensor.store %r, %y\n", {a.View(), 1.00390625, y.View()});
  EXPECT_EQ(Halves(y), (std::vector<uint16_t>{0x3F81, 0x4000}));
}

TEST(TensorBinary, MaxMinNaNAndSignedZeros) {
  Buf a = Buf::F32({4}, {kNaN, -0.0f, 0.0f, 1});
  Buf b = Buf::F32({4}, {1, 0.0f, -0.0f, kNaN});
  Buf mx = Out({4}), mn = Out({4});
  RunFunc(
      "%a: in tensor<4xf32>, %b: in tensor<4xf32>, %x: out tensor<4xf32>, "
      "%n: out tensor<4xf32>",
      "  %p = tensor.max %a, %b\n  %q = tensor.min %a, %b\n"
      "  tensor.store %p, %x\n  tensor.store %q, %n\n",
      {a.View(), b.View(), mx.View(), mn.View()});
  EXPECT_TRUE(std::isnan(mx.F(0)));
  EXPECT_EQ(Bits(mx.F(1)), Bits(0.0f));
  EXPECT_EQ(Bits(mx.F(2)), Bits(0.0f));
  EXPECT_TRUE(std::isnan(mx.F(3)));
  EXPECT_TRUE(std::isnan(mn.F(0)));
  EXPECT_EQ(Bits(mn.F(1)), Bits(-0.0f));
  EXPECT_EQ(Bits(mn.F(2)), Bits(-0.0f));
  EXPECT_TRUE(std::isnan(mn.F(3)));
}

TEST(TensorBinary, Bf16RoundsEachResultToNearestEven) {
  // 1.0078125 + 2^-8 = 0x3F818000 in f32: a tie that rounds up to 0x3F82 (even);
  // 1 + 2^-8 = 0x3F808000 rounds down to 0x3F80.
  Buf a = Buf::Of<uint16_t>(DType::kBF16, {2}, {0x3F81, 0x3F80});
  Buf b = Buf::Of<uint16_t>(DType::kBF16, {2}, {0x3B80, 0x3B80});
  Buf y = Buf::Filled<uint16_t>(DType::kBF16, {2}, 0xFFFF);
  RunFunc("%a: in tensor<2xbf16>, %b: in tensor<2xbf16>, %y: out tensor<2xbf16>",
          "  %r = tensor.add %a, %b\n  %z = tensor.add %r, 0.0\n  tensor.store %z, %y\n",
          {a.View(), b.View(), y.View()});
  EXPECT_EQ(Halves(y), (std::vector<uint16_t>{0x3F82, 0x3F80}));
}

TEST(TensorUnary, ValuesAndBf16Rounding) {
  Buf a = Buf::F32({6}, {-4, 0, 1, 9, -0.0f, 0.25f});
  Buf y = Out({5, 6});
  RunFunc("%a: in tensor<6xf32>, %y: out tensor<5x6xf32>",
          "  %n = tensor.neg %a\n  %b = tensor.abs %n\n  %r = tensor.relu %a\n"
          "  %s = tensor.sqrt %b\n  %q = tensor.recip %s\n"
          "  %c = tensor.concat %n, %b, %r, %s, %q {axis = 0}\n"
          "  %y2 = tensor.reshape %c : tensor<5x6xf32>\n  tensor.store %y2, %y\n",
          {a.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{4,    -0.0f, -1, -9,       0,    -0.25f,  // neg
                                           4,    0,     1,  9,        0,    0.25f,   // abs
                                           0,    0,     1,  9,        0,    0.25f,   // relu
                                           2,    0,     1,  3,        0,    0.5f,    // sqrt
                                           0.5f, kInf,  1,  1 / 3.0f, kInf, 2}));    // recip
  EXPECT_EQ(Bits(y.F(1)), Bits(-0.0f));
  EXPECT_EQ(Bits(y.F(16)), Bits(0.0f));  // relu(-0) = +0
  // exp(1) in bf16 is 2.71875 (0x402E): the f32 result rounds to the dtype.
  Buf e = Buf::Of<uint16_t>(DType::kBF16, {2}, {0x3F80, 0x0000});  // 1, 0
  Buf ey = Buf::Filled<uint16_t>(DType::kBF16, {2}, 0xFFFF);
  RunFunc("%a: in tensor<2xbf16>, %y: out tensor<2xbf16>",
          "  %r = tensor.exp %a\n  tensor.store %r, %y\n", {e.View(), ey.View()});
  EXPECT_EQ(Halves(ey), (std::vector<uint16_t>{0x402E, 0x3F80}));
}

TEST(TensorCast, RoundsToNearestEvenAndWidensExactly) {
  Buf a = Buf::F32({3}, {FromBits(0x3F818000), FromBits(0x3F828000), kNaN});
  Buf h = Buf::Filled<uint16_t>(DType::kBF16, {3}, 0xFFFF);
  Buf back = Out({3});
  RunFunc("%a: in tensor<3xf32>, %h: out tensor<3xbf16>, %y: out tensor<3xf32>",
          "  %b = tensor.cast %a : tensor<3xbf16>\n  %c = tensor.cast %b : tensor<3xf32>\n"
          "  tensor.store %b, %h\n  tensor.store %c, %y\n",
          {a.View(), h.View(), back.View()});
  EXPECT_EQ(h.At<uint16_t>(0), 0x3F82);
  EXPECT_EQ(h.At<uint16_t>(1), 0x3F82);
  EXPECT_TRUE(std::isnan(back.F(2)));
  EXPECT_EQ(Bits(back.F(0)), 0x3F820000u);
  EXPECT_EQ(Bits(back.F(1)), 0x3F820000u);
}

// ---- Reductions.

// Runs `op` {axis, keepdims} over the 2x3x4 f32 tensor `x` into an output of shape `out`.
std::vector<float> Reduce3(const std::string& op, int axis, bool keep,
                           const std::vector<int64_t>& out, const std::vector<float>& x) {
  Buf in = Buf::F32({2, 3, 4}, x);
  Buf y = Out(out);
  std::string type = "tensor<";
  for (int64_t s : out) type += std::to_string(s) + "x";
  type += "f32>";
  RunFunc("%x: in tensor<2x3x4xf32>, %y: out " + type,
          "  %r = " + op + " %x {axis = " + std::to_string(axis) +
              ", keepdims = " + (keep ? "true" : "false") + "}\n  tensor.store %r, %y\n",
          {in.View(), y.View()});
  return Floats(y);
}

TEST(TensorReduce, SumOverEachAxisWithAndWithoutKeepdims) {
  const std::vector<float> x = Iota(24);  // x[i][j][k] = 12i + 4j + k
  std::vector<float> ax0, ax1, ax2;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k) ax0.push_back(12 + 2 * (4 * j + k));
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) ax1.push_back(36 * i + 12 + 3 * k);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) ax2.push_back(48 * i + 16 * j + 6);
  EXPECT_EQ(Reduce3("tensor.sum", 0, false, {3, 4}, x), ax0);
  EXPECT_EQ(Reduce3("tensor.sum", 0, true, {1, 3, 4}, x), ax0);
  EXPECT_EQ(Reduce3("tensor.sum", 1, false, {2, 4}, x), ax1);
  EXPECT_EQ(Reduce3("tensor.sum", -2, true, {2, 1, 4}, x), ax1);
  EXPECT_EQ(Reduce3("tensor.sum", 2, false, {2, 3}, x), ax2);
  EXPECT_EQ(Reduce3("tensor.sum", -1, true, {2, 3, 1}, x), ax2);
}

TEST(TensorReduce, MaxMinOverEachAxisAllNegative) {
  const std::vector<float> x = Iota(24, -1.0f, -1.0f);  // x[i][j][k] = -(12i + 4j + k + 1)
  std::vector<float> max0, min1, max2, min2;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k) max0.push_back(-(4 * j + k + 1));
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) min1.push_back(-(12 * i + 8 + k + 1));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) max2.push_back(-(12 * i + 4 * j + 1));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) min2.push_back(-(12 * i + 4 * j + 4));
  EXPECT_EQ(Reduce3("tensor.reduce_max", 0, false, {3, 4}, x), max0);
  EXPECT_EQ(Reduce3("tensor.reduce_max", 0, true, {1, 3, 4}, x), max0);
  EXPECT_EQ(Reduce3("tensor.reduce_min", 1, false, {2, 4}, x), min1);
  EXPECT_EQ(Reduce3("tensor.reduce_min", 1, true, {2, 1, 4}, x), min1);
  EXPECT_EQ(Reduce3("tensor.reduce_max", 2, false, {2, 3}, x), max2);
  EXPECT_EQ(Reduce3("tensor.reduce_max", -1, true, {2, 3, 1}, x), max2);
  EXPECT_EQ(Reduce3("tensor.reduce_min", 2, true, {2, 3, 1}, x), min2);
}

TEST(TensorReduce, NaNPropagatesAndSignedZeros) {
  Buf x = Buf::F32({3, 3}, {1, kNaN, 3, -0.0f, -0.0f, -0.0f, -0.0f, 0.0f, -0.0f});
  Buf s = Out({3}), mx = Out({3}), mn = Out({3});
  RunFunc(
      "%x: in tensor<3x3xf32>, %s: out tensor<3xf32>, %a: out tensor<3xf32>, "
      "%b: out tensor<3xf32>",
      "  %r = tensor.sum %x\n  %p = tensor.reduce_max %x {axis = 1}\n"
      "  %q = tensor.reduce_min %x {axis = -1}\n"
      "  tensor.store %r, %s\n  tensor.store %p, %a\n  tensor.store %q, %b\n",
      {x.View(), s.View(), mx.View(), mn.View()});
  EXPECT_TRUE(std::isnan(s.F(0)));
  EXPECT_TRUE(std::isnan(mx.F(0)));
  EXPECT_TRUE(std::isnan(mn.F(0)));
  EXPECT_EQ(Bits(s.F(1)), Bits(0.0f));    // +0 + -0 + -0 + -0 = +0
  EXPECT_EQ(Bits(mx.F(1)), Bits(-0.0f));  // all -0 stays -0
  EXPECT_EQ(Bits(mx.F(2)), Bits(0.0f));   // -0 < +0
  EXPECT_EQ(Bits(mn.F(2)), Bits(-0.0f));
}

TEST(TensorReduce, SumIsSequentialAndBf16RoundsOnce) {
  // Sequential f32: 1e8 + 1 + 1 + 1 + 1 - 1e8 = 0.
  Buf x = Buf::F32({6}, {1e8f, 1, 1, 1, 1, -1e8f});
  Buf y = Out({1});
  RunFunc("%x: in tensor<6xf32>, %y: out tensor<1xf32>",
          "  %r = tensor.sum %x {keepdims = true}\n  tensor.store %r, %y\n", {x.View(), y.View()});
  EXPECT_EQ(y.F(0), 0.0f);
  // bf16 1 + 2^-8 + 2^-8 = 1.0078125 (0x3F81) in f32, rounded once; per-add rounding would
  // tie to even twice and give 1.0.
  Buf h = Buf::Of<uint16_t>(DType::kBF16, {3}, {0x3F80, 0x3B80, 0x3B80});
  Buf hy = Buf::Filled<uint16_t>(DType::kBF16, {1}, 0xFFFF);
  RunFunc("%x: in tensor<3xbf16>, %y: out tensor<1xbf16>",
          "  %r = tensor.sum %x {axis = 0, keepdims = true}\n  tensor.store %r, %y\n",
          {h.View(), hy.View()});
  EXPECT_EQ(hy.At<uint16_t>(0), 0x3F81);
}

TEST(TensorReduce, EmptyAxisSumsToZeroAndMaxIsAnError) {
  Buf x = Buf::F32({0, 3}, {});
  Buf y = Out({3});
  const std::string params = "%x: in tensor<{N}x3xf32>, %y: out tensor<3xf32>";
  RunFunc(params, "  %r = tensor.sum %x {axis = 0}\n  tensor.store %r, %y\n", {x.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{0, 0, 0}));
  ExpectRuntimeError(
      [&] {
        RunFunc(params, "  %r = tensor.reduce_max %x {axis = 0}\n  tensor.store %r, %y\n",
                {x.View(), y.View()});
      },
      "tensor.reduce_max");
  // Reducing the non-empty axis of an empty tensor is fine: no element needs a minimum.
  Buf e = Buf::F32({0}, {});
  EXPECT_NO_THROW(RunFunc("%x: in tensor<{N}x3xf32>, %y: out tensor<{N}xf32>",
                          "  %r = tensor.reduce_min %x {axis = 1}\n  tensor.store %r, %y\n",
                          {x.View(), e.View()}));
}

// ---- Matmul.

const std::vector<float> kA = {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2};  // 2 batches of 2x3
const std::vector<float> kBShared = {1, 0, 0, 1, 1, 1};               // 3x2

TEST(TensorMatmul, SharedTwoDimensionalB) {
  Buf a = Buf::F32({2, 2, 3}, kA), b = Buf::F32({3, 2}, kBShared);
  Buf y = Out({2, 2, 2});
  RunFunc("%a: in tensor<2x2x3xf32>, %b: in tensor<3x2xf32>, %y: out tensor<2x2x2xf32>",
          "  %r = tensor.matmul %a, %b\n  tensor.store %r, %y\n", {a.View(), b.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{4, 5, 10, 11, 0, 1, 4, 4}));
}

TEST(TensorMatmul, BatchedB) {
  Buf a = Buf::F32({2, 2, 3}, kA);
  Buf b = Buf::F32({2, 3, 2}, {1, 0, 0, 1, 1, 1, 1, 2, 3, 4, 5, 6});
  Buf y = Out({2, 2, 2});
  RunFunc("%a: in tensor<2x2x3xf32>, %b: in tensor<2x3x2xf32>, %y: out tensor<2x2x2xf32>",
          "  %r = tensor.matmul %a, %b\n  tensor.store %r, %y\n", {a.View(), b.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{4, 5, 10, 11, 4, 4, 18, 24}));
}

TEST(TensorMatmul, TransposedBAndBf16Inputs) {
  // B^T of kBShared, in bf16 (small integers are exact); the result is f32.
  Buf a = Buf::Of<uint16_t>(DType::kBF16, {2, 3}, {0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0});
  Buf b = Buf::Of<uint16_t>(DType::kBF16, {2, 3}, {0x3F80, 0, 0x3F80, 0, 0x3F80, 0x3F80});
  Buf y = Out({2, 2});
  RunFunc("%a: in tensor<2x3xbf16>, %b: in tensor<2x3xbf16>, %y: out tensor<2x2xf32>",
          "  %r = tensor.matmul %a, %b {transpose_b = true}\n  tensor.store %r, %y\n",
          {a.View(), b.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{4, 5, 10, 11}));
}

TEST(TensorMatmul, ProductsRoundBeforeTheAdd) {
  // k=0: -1 * (1 + 2^-11); k=1: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 (tie to
  // even), so the sum is exactly 0. A fused multiply-add would give 2^-24.
  const float e = 1.0f + std::ldexp(1.0f, -12);
  Buf a = Buf::F32({1, 2}, {-1, e});
  Buf b = Buf::F32({2, 1}, {1.0f + std::ldexp(1.0f, -11), e});
  Buf y = Out({1, 1});
  RunFunc("%a: in tensor<1x2xf32>, %b: in tensor<2x1xf32>, %y: out tensor<1x1xf32>",
          "  %r = tensor.matmul %a, %b\n  tensor.store %r, %y\n", {a.View(), b.View(), y.View()});
  EXPECT_EQ(Bits(y.F(0)), Bits(0.0f));
}

// ---- Layout.

TEST(TensorLayout, ReshapeKeepsRowMajorOrder) {
  Buf x = Buf::F32({2, 3, 4}, Iota(24));
  Buf y = Out({6, 4});
  RunFunc("%x: in tensor<2x3x4xf32>, %y: out tensor<6x4xf32>",
          "  %r = tensor.reshape %x : tensor<4x6xf32>\n"
          "  %s = tensor.reshape %r : tensor<6x4xf32>\n  tensor.store %s, %y\n",
          {x.View(), y.View()});
  EXPECT_EQ(Floats(y), Iota(24));
}

TEST(TensorLayout, ReshapeWithSymbolicDims) {
  Buf x = Buf::F32({3, 2, 2}, Iota(12));
  Buf y = Out({3, 4});
  RunFunc("%x: in tensor<{N}x2x2xf32>, %y: out tensor<{N}x4xf32>",
          "  %r = tensor.reshape %x : tensor<{N}x4xf32>\n  %s = tensor.mul %r, 2.0\n"
          "  tensor.store %s, %y\n",
          {x.View(), y.View()});
  EXPECT_EQ(Floats(y), Iota(12, 2.0f));
}

TEST(TensorLayout, TransposeDefaultAndOuterDims) {
  Buf x = Buf::F32({2, 3, 4}, Iota(24));
  Buf t = Out({2, 4, 3}), u = Out({4, 3, 2});
  RunFunc("%x: in tensor<2x3x4xf32>, %t: out tensor<2x4x3xf32>, %u: out tensor<4x3x2xf32>",
          "  %a = tensor.transpose %x\n  %b = tensor.transpose %x {dim0 = 0, dim1 = 2}\n"
          "  tensor.store %a, %t\n  tensor.store %b, %u\n",
          {x.View(), t.View(), u.View()});
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) {
        const float v = 12 * i + 4 * j + k;
        EXPECT_EQ(t.F(i * 12 + k * 3 + j), v);
        EXPECT_EQ(u.F(k * 6 + j * 2 + i), v);
      }
    }
  }
}

TEST(TensorLayout, SliceStaticAndRuntimeOffsets) {
  Buf x = Buf::F32({3, 4}, Iota(12));
  Buf y = Out({2, 2}), z = Out({1, 4});
  RunFunc(
      "%x: in tensor<3x4xf32>, %i: in index, %y: out tensor<2x2xf32>, "
      "%z: out tensor<1x4xf32>",
      "  %a = tensor.slice %x[1, 1] : tensor<2x2xf32>\n"
      "  %b = tensor.slice %x[%i, 0] : tensor<1x4xf32>\n"
      "  tensor.store %a, %y\n  tensor.store %b, %z\n",
      {x.View(), int64_t{2}, y.View(), z.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{5, 6, 9, 10}));
  EXPECT_EQ(Floats(z), (std::vector<float>{8, 9, 10, 11}));
}

TEST(TensorLayout, SliceOutOfBoundsAtRunTimeIsAnError) {
  Buf x = Buf::F32({3, 4}, Iota(12));
  Buf y = Out({2, 4});
  for (int64_t i : {int64_t{2}, int64_t{-1}}) {
    ExpectRuntimeError(
        [&] {
          RunFunc("%x: in tensor<3x4xf32>, %i: in index, %y: out tensor<2x4xf32>",
                  "  %a = tensor.slice %x[%i, 0] : tensor<2x4xf32>\n  tensor.store %a, %y\n",
                  {x.View(), i, y.View()});
        },
        "tensor.slice (t.pto:2): [" + std::to_string(i) + ", " + std::to_string(i + 2) +
            ") is out of bounds in dim 0 of a tensor of shape 3x4");
  }
  EXPECT_EQ(y.F(0), -777.0f);  // nothing written
}

TEST(TensorLayout, ConcatAlongEachAxis) {
  Buf a = Buf::F32({2, 2}, {1, 2, 3, 4}), b = Buf::F32({2, 1}, {5, 6});
  Buf c = Buf::F32({1, 2}, {7, 8});
  Buf y = Out({2, 4}), z = Out({3, 2});
  RunFunc(
      "%a: in tensor<2x2xf32>, %b: in tensor<2x1xf32>, %c: in tensor<1x2xf32>, "
      "%y: out tensor<2x4xf32>, %z: out tensor<3x2xf32>",
      "  %r = tensor.concat %a, %b, %b {axis = 1}\n  %s = tensor.concat %a, %c {axis = 0}\n"
      "  tensor.store %r, %y\n  tensor.store %s, %z\n",
      {a.View(), b.View(), c.View(), y.View(), z.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{1, 2, 5, 5, 3, 4, 6, 6}));
  EXPECT_EQ(Floats(z), (std::vector<float>{1, 2, 3, 4, 7, 8}));
}

// ---- Views, symbols and buffers.

TEST(TensorViews, StridedInputsAndOutput) {
  // a: the 2x3 top-left of a 2x4 buffer; b: a transposed view (strides 1, 2) of a 3x2 buffer;
  // y: every other element of a 2x6 buffer.
  Buf a = Buf::F32({2, 3}, {1, 2, 3, 99, 4, 5, 6, 99});
  a.strides = {4, 1};
  Buf b = Buf::F32({2, 3}, {10, 40, 20, 50, 30, 60});
  b.strides = {1, 2};
  Buf y = Buf::Filled<float>(DType::kF32, {2, 6}, -1.0f);
  y.shape = {2, 3};
  y.strides = {6, 2};
  RunFunc("%a: in tensor<2x3xf32>, %b: in tensor<2x3xf32>, %y: out tensor<2x3xf32>",
          "  %r = tensor.add %a, %b\n  tensor.store %r, %y\n", {a.View(), b.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{11, -1, 22, -1, 33, -1, 44, -1, 55, -1, 66, -1}));
}

TEST(TensorViews, SymbolicDimsBindAtRunTime) {
  for (int64_t n : {1, 3}) {
    Buf x = Buf::F32({n, 4}, Iota(static_cast<int>(4 * n)));
    Buf w = Buf::F32({4}, {1, 1, 1, 1});
    Buf y = Out({n});
    RunFunc("%x: in tensor<{N}x4xf32>, %w: in tensor<4xf32>, %y: out tensor<{N}xf32>",
            "  %a = tensor.add %x, %w\n  %s = tensor.sum %a {axis = -1}\n"
            "  tensor.store %s, %y\n",
            {x.View(), w.View(), y.View()});
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y.F(i), 16 * i + 10);
  }
}

TEST(TensorEmpty, IsZeroAndWorksWithTileOps) {
  // Store into an empty tensor, read it back with tile ops, and store the untouched empty too.
  Buf x = Buf::F32({2, 4}, Iota(8, 1.0f, 1.0f));
  Buf y = Out({2, 4}), z = Out({2, 4});
  RunFunc("%x: in tensor<{N}x4xf32>, %y: out tensor<{N}x4xf32>, %z: out tensor<{N}x4xf32>",
          "  %n = tensor.dim %x, 0\n  %e = tensor.empty %n : tensor<{N}x4xf32>\n"
          "  %f = tensor.empty %n : tensor<{N}x4xf32>\n"
          "  %d = tensor.mul %x, 2.0\n  tensor.store %d, %e\n"
          "  incore {\n    %t = tile.load %e[0, 0] : tile<2x4xf32>\n"
          "    tile.store %t, %y[0, 0]\n  }\n  tensor.store %f, %z\n",
          {x.View(), y.View(), z.View()});
  EXPECT_EQ(Floats(y), Iota(8, 2.0f, 2.0f));
  EXPECT_EQ(Floats(z), std::vector<float>(8, 0.0f));
}

TEST(TensorEmpty, NegativeSizeAndSymbolMismatchAreErrors) {
  Buf x = Buf::F32({3, 4}, Iota(12));
  const std::string params = "%x: in tensor<{N}x4xf32>, %n: in index";
  ExpectRuntimeError(
      [&] {
        RunFunc(params, "  %e = tensor.empty %n : tensor<{M}x4xf32>\n", {x.View(), int64_t{-2}});
      },
      "tensor.empty (t.pto:2): size -2 of dim 0 is negative");
  // A symbol has one size where it is visible: a tensor.empty that gives N another size fails
  // (so equal symbols never meet with different sizes, even when one is 1).
  ExpectRuntimeError(
      [&] {
        RunFunc(params, "  %e = tensor.empty %n : tensor<{N}x4xf32>\n  %s = tensor.add %x, %e\n",
                {x.View(), int64_t{1}});
      },
      "tensor.empty (t.pto:2): size 1 for symbol N, which is 3 here");
}

// Symbols no parameter carries are bound by the tensor.empty that names them, for the rest of
// its block: a second empty in the same block must agree; one in the next loop iteration (a new
// scope) may differ.
TEST(TensorEmpty, BindsNewSymbolsForItsBlock) {
  Buf x = Buf::F32({3, 4}, Iota(12));
  const std::string params = "%x: in tensor<{N}x4xf32>, %n: in index";
  ExpectRuntimeError(
      [&] {
        RunFunc(params,
                "  %e = tensor.empty %n : tensor<{M}x4xf32>\n"
                "  %m = arith.add %n, 1\n"
                "  %f = tensor.empty %m : tensor<{M}x4xf32>\n",
                {x.View(), int64_t{2}});
      },
      "tensor.empty (t.pto:4): size 3 for symbol M, which is 2 here");
  EXPECT_NO_THROW(RunFunc(params,
                          "  for %i = 0 to 3 step 1 {\n"
                          "    %e = tensor.empty %i : tensor<{M}x4xf32>\n"
                          "  }\n",
                          {x.View(), int64_t{2}}));
}

TEST(TensorEmpty, TooLargeIsARuntimeError) {
  Buf x = Buf::F32({1, 4}, Iota(4));
  ExpectRuntimeError(
      [&] {
        RunFunc("%x: in tensor<{N}x4xf32>, %n: in index",
                "  %e = tensor.empty %n, %n : tensor<{M}x{K}x4xf32>\n",
                {x.View(), int64_t{1} << 40});
      },
      "is too large");
}

// ---- Composites.

// Runs `composite` (a line defining %y) on x (R x C f32) and extra params, returns y.
std::vector<float> RunComposite(const std::string& extra_params, const std::string& composite,
                                int rows, int cols, const std::vector<Arg>& extra_args,
                                const std::vector<float>& x) {
  Buf in = Buf::F32({rows, cols}, x);
  Buf y = Out({rows, cols});
  const std::string t = "tensor<" + std::to_string(rows) + "x" + std::to_string(cols) + "xf32>";
  std::vector<Arg> args{in.View()};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  args.push_back(y.View());
  RunFunc("%x: in " + t + extra_params + ", %out: out " + t,
          "  " + composite + "\n  tensor.store %y, %out\n", args);
  return Floats(y);
}

TEST(TensorComposite, SoftmaxAndLogSoftmaxMatchDoubleReference) {
  const int R = 3, C = 17;
  std::vector<float> x = Wavy(R * C, 1);
  x[5] = 80.0f;  // a large logit: the max subtraction keeps exp finite
  std::vector<double> sm(R * C), lsm(R * C);
  for (int r = 0; r < R; ++r) {
    double m = -INFINITY, z = 0;
    for (int c = 0; c < C; ++c) m = std::max<double>(m, x[r * C + c]);
    for (int c = 0; c < C; ++c) z += std::exp(double{x[r * C + c]} - m);
    for (int c = 0; c < C; ++c) {
      sm[r * C + c] = std::exp(double{x[r * C + c]} - m) / z;
      lsm[r * C + c] = double{x[r * C + c]} - m - std::log(z);
    }
  }
  ExpectNear(RunComposite("", "%y = tensor.softmax %x", R, C, {}, x), sm, 4 + C);
  ExpectNear(RunComposite("", "%y = tensor.log_softmax %x {axis = -1}", R, C, {}, x), lsm, 4 + C);
}

TEST(TensorComposite, SoftmaxOverAxisZero) {
  std::vector<float> x = {0, 1, 0, 1};  // 2x2, columns {0, 0} and {1, 1}
  EXPECT_EQ(RunComposite("", "%y = tensor.softmax %x {axis = 0}", 2, 2, {}, x),
            (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}));
}

TEST(TensorComposite, RmsnormAndLayernormMatchDoubleReference) {
  const int R = 4, C = 24;
  const std::vector<float> x = Wavy(R * C, 2), wv = Wavy(C, 3), bv = Wavy(C, 4);
  Buf w = Buf::F32({C}, wv), b = Buf::F32({C}, bv);
  const double eps = 1e-5;
  std::vector<double> rms(R * C), ln(R * C);
  for (int r = 0; r < R; ++r) {
    double ss = 0, mean = 0, var = 0;
    for (int c = 0; c < C; ++c) ss += double{x[r * C + c]} * x[r * C + c];
    for (int c = 0; c < C; ++c) mean += x[r * C + c];
    mean /= C;
    for (int c = 0; c < C; ++c) var += (x[r * C + c] - mean) * (x[r * C + c] - mean);
    var /= C;
    for (int c = 0; c < C; ++c) {
      rms[r * C + c] = x[r * C + c] / std::sqrt(ss / C + eps) * wv[c];
      ln[r * C + c] = (x[r * C + c] - mean) / std::sqrt(var + eps) * wv[c] + bv[c];
    }
  }
  const std::string wt = "tensor<" + std::to_string(C) + "xf32>";
  ExpectNear(RunComposite(", %w: in " + wt, "%y = tensor.rmsnorm %x, %w {eps = 1e-05}", R, C,
                          {w.View()}, x),
             rms, 8 + C);
  // Layernorm's result is ~|w| + |b| in size; cancellation in t + b makes the bound absolute.
  ExpectNear(
      RunComposite(", %w: in " + wt + ", %b: in " + wt,
                   "%y = tensor.layernorm %x, %w, %b {eps = 1e-05}", R, C, {w.View(), b.View()}, x),
      ln, 4 * (8 + C));
}

TEST(TensorComposite, SwigluMatchesDoubleReference) {
  const int R = 2, C = 8;
  const std::vector<float> g = Wavy(R * C, 5), uv = Wavy(R * C, 6);
  Buf u = Buf::F32({R, C}, uv);
  std::vector<double> want(R * C);
  for (int k = 0; k < R * C; ++k) want[k] = g[k] / (1.0 + std::exp(-double{g[k]})) * uv[k];
  ExpectNear(
      RunComposite(", %u: in tensor<2x8xf32>", "%y = tensor.swiglu %x, %u", R, C, {u.View()}, g),
      want, 8);
}

TEST(TensorComposite, RopeBothFormsMatchDoubleReference) {
  const int R = 3, D = 8;
  const std::vector<float> x = Wavy(R * D, 7), cv = Wavy(R * D, 8), sv = Wavy(D, 9);
  Buf cos = Buf::F32({R, D}, cv), sin = Buf::F32({D}, sv);  // sin broadcasts over rows
  std::vector<double> half(R * D), inter(R * D);
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < D; ++i) {
      const int k = r * D + i;
      const double rot_half = i < D / 2 ? -double{x[k + D / 2]} : x[k - D / 2];
      const double rot_inter = i % 2 == 0 ? -double{x[k + 1]} : x[k - 1];
      half[k] = double{x[k]} * cv[k] + rot_half * sv[i];
      inter[k] = double{x[k]} * cv[k] + rot_inter * sv[i];
    }
  }
  const std::string params = ", %c: in tensor<3x8xf32>, %s: in tensor<8xf32>";
  ExpectNear(RunComposite(params, "%y = tensor.rope %x, %c, %s", R, D, {cos.View(), sin.View()}, x),
             half, 16);
  ExpectNear(RunComposite(params, "%y = tensor.rope %x, %c, %s {interleaved = true}", R, D,
                          {cos.View(), sin.View()}, x),
             inter, 16);
  // Element positions exactly: cos = 0, sin = 1 gives y = rot.
  std::vector<float> xi = Iota(D, 1.0f, 1.0f);
  EXPECT_EQ(
      RunComposite(", %c: in f32, %s: in f32", "%y = tensor.rope %x, %c, %s", 1, D, {0.0, 1.0}, xi),
      (std::vector<float>{-5, -6, -7, -8, 1, 2, 3, 4}));
  EXPECT_EQ(RunComposite(", %c: in f32, %s: in f32",
                         "%y = tensor.rope %x, %c, %s {interleaved = true}", 1, D, {0.0, 1.0}, xi),
            (std::vector<float>{-2, 1, -4, 3, -6, 5, -8, 7}));
}

// Each composite in bf16 equals its documented decomposition written as primitive tensor ops,
// bit for bit: the operands widened to f32, f32 steps, one rounding to bf16 at the end.
TEST(TensorComposite, Bf16CompositesEqualTheirPrimitiveDecompositions) {
  const int R = 3, C = 8;
  auto bf16 = [](const std::vector<float>& v) {
    std::vector<uint16_t> h;
    for (float f : v) h.push_back(scalar::F32ToBf16(f));
    return h;
  };
  Buf x = Buf::Of(DType::kBF16, {R, C}, bf16(Wavy(R * C, 10)));
  Buf u = Buf::Of(DType::kBF16, {R, C}, bf16(Wavy(R * C, 11)));
  Buf w = Buf::Of(DType::kBF16, {C}, bf16(Wavy(C, 12)));
  Buf b = Buf::Of(DType::kBF16, {C}, bf16(Wavy(C, 13)));
  const std::string t = "tensor<3x8xbf16>", tf = "tensor<3x8xf32>";
  struct Case {
    std::string composite, decomposition;
  };
  const Case cases[] = {
      {"%y = tensor.softmax %x",
       "%m = tensor.reduce_max %xf {axis = -1, keepdims = true}\n %s = tensor.sub %xf, %m\n"
       " %e = tensor.exp %s\n %z = tensor.sum %e {axis = -1, keepdims = true}\n"
       " %r = tensor.recip %z\n %y3 = tensor.mul %e, %r"},
      {"%y = tensor.log_softmax %x",
       "%m = tensor.reduce_max %xf {axis = -1, keepdims = true}\n %s = tensor.sub %xf, %m\n"
       " %e = tensor.exp %s\n %z = tensor.sum %e {axis = -1, keepdims = true}\n"
       " %l = tensor.log %z\n %y3 = tensor.sub %s, %l"},
      {"%y = tensor.rmsnorm %x, %w {eps = 1e-06}",
       "%q = tensor.mul %xf, %xf\n %ss = tensor.sum %q {axis = -1, keepdims = true}\n"
       " %ms = tensor.mul %ss, 0.125\n %a = tensor.add %ms, 1e-06\n %r = tensor.rsqrt %a\n"
       " %t = tensor.mul %xf, %r\n %y3 = tensor.mul %t, %wf"},
      {"%y = tensor.layernorm %x, %w, %b {eps = 1e-05}",
       "%s = tensor.sum %xf {axis = -1, keepdims = true}\n %mean = tensor.mul %s, 0.125\n"
       " %d = tensor.sub %xf, %mean\n %q = tensor.mul %d, %d\n"
       " %vs = tensor.sum %q {axis = -1, keepdims = true}\n %v = tensor.mul %vs, 0.125\n"
       " %a = tensor.add %v, 1e-05\n %r = tensor.rsqrt %a\n %n = tensor.mul %d, %r\n"
       " %t = tensor.mul %n, %wf\n %y3 = tensor.add %t, %bf"},
      {"%y = tensor.swiglu %x, %u", "%sg = tensor.silu %xf\n %y3 = tensor.mul %sg, %uf"},
      {"%y = tensor.rope %x, %u, %u",
       "%hi = tensor.slice %xf[0, 4] : tensor<3x4xf32>\n"
       " %lo = tensor.slice %xf[0, 0] : tensor<3x4xf32>\n %nh = tensor.neg %hi\n"
       " %rot = tensor.concat %nh, %lo {axis = 1}\n %p = tensor.mul %xf, %uf\n"
       " %q = tensor.mul %rot, %uf\n %y3 = tensor.add %p, %q"},
      {"%y = tensor.rope %x, %u, %u {interleaved = true}",
       "%x3 = tensor.reshape %xf : tensor<3x4x2xf32>\n"
       " %ev = tensor.slice %x3[0, 0, 0] : tensor<3x4x1xf32>\n"
       " %od = tensor.slice %x3[0, 0, 1] : tensor<3x4x1xf32>\n %no = tensor.neg %od\n"
       " %r3 = tensor.concat %no, %ev {axis = 2}\n %rot = tensor.reshape %r3 : " +
           tf +
           "\n"
           " %p = tensor.mul %xf, %uf\n %q = tensor.mul %rot, %uf\n %y3 = tensor.add %p, %q"},
  };
  const std::string widen =
      "%xf = tensor.cast %x : " + tf + "\n %uf = tensor.cast %u : " + tf +
      "\n %wf = tensor.cast %w : tensor<8xf32>\n %bf = tensor.cast %b : tensor<8xf32>\n ";
  for (const Case& c : cases) {
    Buf y1 = Buf::Filled<uint16_t>(DType::kBF16, {R, C}, 0xFFFF);
    Buf y2 = Buf::Filled<uint16_t>(DType::kBF16, {R, C}, 0xFFFF);
    RunFunc("%x: in " + t + ", %u: in " + t + ", %w: in tensor<8xbf16>, %b: in " +
                "tensor<8xbf16>, %o1: out " + t + ", %o2: out " + t,
            "  " + c.composite + "\n  " + widen + c.decomposition +
                "\n  %y2 = tensor.cast %y3 : " + t + "\n  tensor.store %y, %o1\n" +
                "  tensor.store %y2, %o2\n",
            {x.View(), u.View(), w.View(), b.View(), y1.View(), y2.View()});
    EXPECT_EQ(Halves(y1), Halves(y2)) << c.composite;
    EXPECT_NE(y1.At<uint16_t>(0), 0xFFFF) << c.composite;
  }
}

// Rounding once makes a bf16 softmax / rmsnorm correctly rounded but for the f32 steps' error:
// within half a bf16 ulp of the double result on the bf16 inputs, plus 2^-8 ulp (an f32 error of
// up to 2^-16 relative, far above these steps').
TEST(TensorComposite, Bf16SoftmaxAndRmsnormRoundOnce) {
  const int R = 4, C = 64;
  std::vector<uint16_t> xh, wh;
  for (float f : Wavy(R * C, 14)) xh.push_back(scalar::F32ToBf16(3.0f * f));
  for (float f : Wavy(C, 15)) wh.push_back(scalar::F32ToBf16(f));
  Buf x = Buf::Of(DType::kBF16, {R, C}, xh), w = Buf::Of(DType::kBF16, {C}, wh);
  const std::string t = "tensor<4x64xbf16>";
  Buf sm = Buf::Filled<uint16_t>(DType::kBF16, {R, C}, 0xFFFF);
  Buf rms = Buf::Filled<uint16_t>(DType::kBF16, {R, C}, 0xFFFF);
  RunFunc("%x: in " + t + ", %w: in tensor<64xbf16>, %o1: out " + t + ", %o2: out " + t,
          "  %s = tensor.softmax %x\n  %r = tensor.rmsnorm %x, %w {eps = 1e-06}\n"
          "  tensor.store %s, %o1\n  tensor.store %r, %o2\n",
          {x.View(), w.View(), sm.View(), rms.View()});
  auto ulp = [](double v) { return std::ldexp(1.0, std::ilogb(v) - 7); };  // bf16: 8 bits
  for (int r = 0; r < R; ++r) {
    double m = -INFINITY, z = 0, ss = 0;
    auto xv = [&](int c) { return double{scalar::Bf16ToF32(xh[r * C + c])}; };
    for (int c = 0; c < C; ++c) m = std::max(m, xv(c)), ss += xv(c) * xv(c);
    for (int c = 0; c < C; ++c) z += std::exp(xv(c) - m);
    for (int c = 0; c < C; ++c) {
      const double want_sm = std::exp(xv(c) - m) / z;
      const double want_rms = xv(c) / std::sqrt(ss / C + 1e-6) * scalar::Bf16ToF32(wh[c]);
      const double got_sm = scalar::Bf16ToF32(sm.At<uint16_t>(r * C + c));
      const double got_rms = scalar::Bf16ToF32(rms.At<uint16_t>(r * C + c));
      EXPECT_LE(std::abs(got_sm - want_sm), ulp(want_sm) * (0.5 + 0x1p-8)) << r << "," << c;
      if (want_rms != 0) {
        EXPECT_LE(std::abs(got_rms - want_rms), ulp(std::abs(want_rms)) * (0.5 + 0x1p-8))
            << r << "," << c;
      }
    }
  }
}

TEST(TensorComposite, SoftmaxOverEmptySymbolicAxisIsAnError) {
  Buf x = Buf::F32({2, 0}, {});
  ExpectRuntimeError(
      [&] { RunFunc("%x: in tensor<2x{N}xf32>", "  %y = tensor.softmax %x\n", {x.View()}); },
      "tensor.softmax (t.pto:2): max over the empty axis 1");
}

}  // namespace
}  // namespace ptox::interp::testing
