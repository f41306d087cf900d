// Masks and indices in the interpreter, against hand-computed values: tile.argmax_gt,
// tile.causal_mask, tile.extract; tensor compares and select (bool tensors), tensor.causal_mask,
// tensor.argmax, tensor.gather and tensor.store at offsets — NaN / +-0 / Inf, broadcasting,
// out-of-range ids and offsets.
#include <cmath>
#include <cstdint>

#include "tests/unit/interp/helpers.h"

namespace ptox::interp::testing {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> Floats(const Buf& b) {
  std::vector<float> v(b.bytes.size() / 4);
  for (size_t k = 0; k < v.size(); ++k) v[k] = b.F(k);
  return v;
}

template <typename T>
std::vector<int64_t> Ints(const Buf& b) {
  std::vector<int64_t> v(b.bytes.size() / sizeof(T));
  for (size_t k = 0; k < v.size(); ++k) v[k] = b.At<T>(k);
  return v;
}

// ---- tile.argmax_gt: the order of row_argmax.

TEST(TileArgmaxGt, NaNAboveAllButNaNAndPlusZeroAboveMinusZero) {
  std::vector<Buf> in{
      Buf::F32({1, 11}, {kNaN, 1, kNaN, 0.0f, -0.0f, -0.0f, 2, 1, 1, kNegInf, kInf}),
      Buf::F32({1, 11}, {1, kNaN, kNaN, -0.0f, 0.0f, -0.0f, 1, 2, 1, kNegInf, kNaN})};
  Buf out = Buf::Filled<uint8_t>(DType::kBool, {1, 11}, 7);
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileArgmaxGt, {t[0], t[1]});
  });
  EXPECT_EQ(Ints<uint8_t>(out), (std::vector<int64_t>{1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0}));
}

TEST(TileArgmaxGt, IntegersCompareAsIntegers) {
  std::vector<Buf> in{Buf::Of<int32_t>(DType::kI32, {1, 3}, {3, 2, -5})};
  Buf out = Buf::Filled<uint8_t>(DType::kBool, {1, 3}, 7);
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileArgmaxGt, {t[0], Operand::Int(2)});
  });
  EXPECT_EQ(Ints<uint8_t>(out), (std::vector<int64_t>{1, 0, 0}));
}

// ---- tile.causal_mask and tile.extract.

TEST(TileCausalMask, MasksAboveTheDiagonalIncludingPadding) {
  Builder b("t");
  Buf in = Buf::F32({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value k0, k1, km1;
  b.Incore([&] {
    Value t = b.Load(x, Zeros(2), Type::Tile(4, 4, DType::kF32), /*pad=*/9.0);
    k0 = b.Op(OpCode::kTileCausalMask, {t, Operand::Int(0)});
    k1 = b.Op(OpCode::kTileCausalMask, {t, Operand::Int(1)});
    km1 = b.Op(OpCode::kTileCausalMask, {t, Operand::Int(-1)});
  });
  ir::Func f = b.Finish();
  ir::Verify(f);
  Env env;
  RunInEnv(f, {in.View()}, env);
  const float I = kNegInf;
  EXPECT_EQ(TileOf(env, k0).f,
            (std::vector<float>{0, I, I, I, 3, 4, I, I, 6, 7, 8, I, 9, 9, 9, 9}));
  EXPECT_EQ(TileOf(env, k1).f,
            (std::vector<float>{0, 1, I, I, 3, 4, 5, I, 6, 7, 8, 9, 9, 9, 9, 9}));
  EXPECT_EQ(TileOf(env, km1).f,
            (std::vector<float>{I, I, I, I, 3, I, I, I, 6, 7, I, I, 9, 9, 9, I}));
  EXPECT_EQ(TileOf(env, k0).valid_rows, 3);
  EXPECT_EQ(TileOf(env, k0).valid_cols, 3);
}

TEST(TileExtract, ReadsOneElementOfTheValidRegion) {
  Builder b("t");
  Buf in = Buf::Of<int64_t>(DType::kI64, {2, 3}, {10, 11, 12, 13, -14, 15});
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value r = b.Param("r", Direction::kIn, Type::Scalar(DType::kIndex));
  Value e;
  b.Incore([&] {
    Value t = b.Load(x, Zeros(2), Type::Tile(4, 4, DType::kI64));
    e = b.Op(OpCode::kTileExtract, {t, r, Operand::Int(1)});
  });
  ir::Func f = b.Finish();
  ir::Verify(f);
  Env env;
  RunInEnv(f, {in.View(), int64_t{1}}, env);
  const Scalar s = std::get<Scalar>(env.Get(e));
  EXPECT_EQ(s.dtype, DType::kI64);
  EXPECT_EQ(s.i, -14);
  // Row 2 is padding of the 4x4 tile (valid 2x3): an error, as outside the tile.
  for (int64_t row : {int64_t{2}, int64_t{-1}}) {
    Env bad;
    ExpectRuntimeError(
        [&] {
          RunInEnv(f, {in.View(), row}, bad);
        },
        "is outside the valid region 2x3 of the 4x4 tile");
  }
}

// ---- Tensor compares and select.

TEST(TensorCompare, IeeeRulesWithBroadcastingIntoBoolTensors) {
  Buf a = Buf::F32({2, 4}, {kNaN, -0.0f, 1, 2, 5, 5, 5, 5});
  Buf b = Buf::F32({4}, {kNaN, 0.0f, 2, 1});
  Buf eq = Buf::Filled<uint8_t>(DType::kBool, {2, 4}, 7);
  Buf ne = eq, lt = eq, ge = eq;
  RunFunc(
      "%a: in tensor<2x4xf32>, %b: in tensor<4xf32>, %eq: out tensor<2x4xbool>, %ne: out "
      "tensor<2x4xbool>, %lt: out tensor<2x4xbool>, %ge: out tensor<2x4xbool>",
      "  %0 = tensor.eq %a, %b\n  %1 = tensor.ne %a, %b\n  %2 = tensor.lt %a, %b\n"
      "  %3 = tensor.ge %a, 5.0\n  tensor.store %0, %eq\n  tensor.store %1, %ne\n"
      "  tensor.store %2, %lt\n  tensor.store %3, %ge\n",
      {a.View(), b.View(), eq.View(), ne.View(), lt.View(), ge.View()});
  EXPECT_EQ(Ints<uint8_t>(eq), (std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Ints<uint8_t>(ne), (std::vector<int64_t>{1, 0, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(Ints<uint8_t>(lt), (std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Ints<uint8_t>(ge), (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(TensorCompare, ScalarRoundsToTheTensorDtype) {
  // 1 + 2^-8 rounds (tie, even) to 1.0 in bf16: x = 1.0 equals it, x = 1.0078125 exceeds it.
  Buf a = Buf::Of<uint16_t>(DType::kBF16, {2}, {0x3F80, 0x3F81});
  Buf eq = Buf::Filled<uint8_t>(DType::kBool, {2}, 7), gt = eq;
  RunFunc("%a: in tensor<2xbf16>, %eq: out tensor<2xbool>, %gt: out tensor<2xbool>",
          "  %0 = tensor.eq %a, 1.00390625\n  %1 = tensor.gt %a, 1.00390625\n"
          "  tensor.store %0, %eq\n  tensor.store %1, %gt\n",
          {a.View(), eq.View(), gt.View()});
  EXPECT_EQ(Ints<uint8_t>(eq), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Ints<uint8_t>(gt), (std::vector<int64_t>{0, 1}));
}

TEST(TensorSelect, BroadcastsConditionValuesAndScalar) {
  Buf c = Buf::Of<uint8_t>(DType::kBool, {2, 1}, {1, 0});
  Buf a = Buf::F32({2, 3}, {1, -0.0f, kNaN, 4, 5, 6});
  Buf b = Buf::F32({3}, {-1, -2, -3});
  Buf y = Buf::Filled<float>(DType::kF32, {2, 3}, -777.0f), z = y;
  RunFunc(
      "%c: in tensor<2x1xbool>, %a: in tensor<2x3xf32>, %b: in tensor<3xf32>, %y: out "
      "tensor<2x3xf32>, %z: out tensor<2x3xf32>",
      "  %s = tensor.select %c, %a, %b\n  %t = tensor.select %c, %a, 0.25\n"
      "  tensor.store %s, %y\n  tensor.store %t, %z\n",
      {c.View(), a.View(), b.View(), y.View(), z.View()});
  EXPECT_EQ(Bits(y.F(1)), Bits(-0.0f));  // selected values are exact copies
  EXPECT_TRUE(std::isnan(y.F(2)));
  EXPECT_EQ(y.F(0), 1.0f);
  EXPECT_EQ((std::vector<float>{y.F(3), y.F(4), y.F(5)}), (std::vector<float>{-1, -2, -3}));
  EXPECT_EQ((std::vector<float>{z.F(3), z.F(4), z.F(5)}),
            (std::vector<float>{0.25f, 0.25f, 0.25f}));
}

TEST(TensorSelect, MaskFromACompareFeedsSelect) {
  Buf x = Buf::F32({4}, {-1, 2, kNaN, 0.0f});
  Buf y = Buf::Filled<float>(DType::kF32, {4}, -777.0f);
  RunFunc("%x: in tensor<4xf32>, %y: out tensor<4xf32>",
          "  %m = tensor.gt %x, 0.0\n  %r = tensor.select %m, %x, -9.0\n  tensor.store %r, %y\n",
          {x.View(), y.View()});
  EXPECT_EQ(Floats(y), (std::vector<float>{-9, 2, -9, -9}));  // NaN > 0 and 0 > 0 are false
}

// ---- tensor.causal_mask.

// x [2, 3, 5] of 0..29 masked with `offset`; returns the result.
std::vector<float> Mask(int64_t offset) {
  std::vector<float> v(30);
  for (int k = 0; k < 30; ++k) v[k] = static_cast<float>(k);
  Buf x = Buf::F32({2, 3, 5}, v);
  Buf y = Buf::Filled<float>(DType::kF32, {2, 3, 5}, -777.0f);
  RunFunc("%x: in tensor<2x3x5xf32>, %o: in i64, %y: out tensor<2x3x5xf32>",
          "  %m = tensor.causal_mask %x, %o\n  tensor.store %m, %y\n",
          {x.View(), offset, y.View()});
  return Floats(y);
}

TEST(TensorCausalMask, MasksKeysAfterTheQueryPlusOffset) {
  const float I = kNegInf;
  // offset 2 (two cached tokens, three new): row t sees keys s <= t + 2; every batch alike.
  std::vector<float> want = {0, 1, 2, I, I, 5, 6, 7, 8, I, 10, 11, 12, 13, 14};
  std::vector<float> second = want;
  for (size_t k = 0; k < second.size(); ++k) second[k] = std::isinf(want[k]) ? I : want[k] + 15;
  want.insert(want.end(), second.begin(), second.end());
  EXPECT_EQ(Mask(2), want);
  // offset 0: the causal mask of a prompt; -1 also hides the diagonal (row 0 entirely).
  std::vector<float> m0 = Mask(0), m1 = Mask(-1);
  EXPECT_EQ(std::vector<float>(m0.begin(), m0.begin() + 15),
            (std::vector<float>{0, I, I, I, I, 5, 6, I, I, I, 10, 11, 12, I, I}));
  EXPECT_EQ(std::vector<float>(m1.begin(), m1.begin() + 15),
            (std::vector<float>{I, I, I, I, I, 5, I, I, I, I, 10, 11, I, I, I}));
}

TEST(TensorCausalMask, ExtremeOffsetsMaskNothingOrEverything) {
  for (float v : Mask(INT64_MAX)) EXPECT_FALSE(std::isinf(v));
  for (float v : Mask(INT64_MIN)) EXPECT_EQ(v, kNegInf);
}

TEST(TensorCausalMask, MaskedPositionsGetExactlyZeroProbability) {
  // Decode: one new token after 2 cached ones over a cache of 5: keys 3 and 4 are unwritten.
  Buf x = Buf::F32({1, 5}, {0.5f, 3.0f, -0.0f, kNaN, 1e30f});
  Buf y = Buf::Filled<float>(DType::kF32, {1, 5}, -777.0f);
  Buf m = y;
  RunFunc("%x: in tensor<1x5xf32>, %y: out tensor<1x5xf32>, %m: out tensor<1x5xf32>",
          "  %c = tensor.causal_mask %x, 2\n  %p = tensor.softmax %c\n  tensor.store %p, %y\n"
          "  tensor.store %c, %m\n",
          {x.View(), y.View(), m.View()});
  EXPECT_EQ(Bits(m.F(2)), Bits(-0.0f));  // unmasked elements are exact copies
  EXPECT_EQ(m.F(3), kNegInf);
  EXPECT_EQ(Bits(y.F(3)), Bits(0.0f));  // the NaN and the huge value never enter
  EXPECT_EQ(Bits(y.F(4)), Bits(0.0f));
  EXPECT_GT(y.F(1), 0.8f);
  EXPECT_LT(y.F(1), 1.0f);
}

// ---- tensor.argmax.

TEST(TensorArgmax, FirstMaximumNaNFirstAndPlusZeroOverMinusZero) {
  Buf x = Buf::F32({6, 4}, {1,       3,       3,       2,        // ties: the first
                            kNegInf, kNegInf, kNegInf, kNegInf,  // all -inf: 0
                            -0.0f,   0.0f,    -0.0f,   0.0f,     // +0 beats -0
                            0.0f,    -0.0f,   0.0f,    -1,       // the first +0
                            2,       kNaN,    5,       kNaN,     // the first NaN
                            -5,      -4,      -7,      -4.5f});  // all negative
  Buf y = Buf::Filled<int32_t>(DType::kI32, {6}, -1);
  RunFunc("%x: in tensor<6x4xf32>, %y: out tensor<6xi32>",
          "  %a = tensor.argmax %x\n  tensor.store %a, %y\n", {x.View(), y.View()});
  EXPECT_EQ(Ints<int32_t>(y), (std::vector<int64_t>{1, 0, 1, 0, 1, 1}));
}

TEST(TensorArgmax, OtherAxesAndKeepdims) {
  // x[b][t][v] = values below; argmax over axis 1 (t) with keepdims -> [2, 1, 3].
  Buf x = Buf::F32({2, 2, 3}, {1, 5, 2, 3, 5, 1,  //
                               -1, -2, kNaN, -1, 0, 7});
  Buf y = Buf::Filled<int32_t>(DType::kI32, {2, 1, 3}, -1);
  Buf z = Buf::Filled<int32_t>(DType::kI32, {2, 2}, -1);
  RunFunc("%x: in tensor<2x2x3xf32>, %y: out tensor<2x1x3xi32>, %z: out tensor<2x2xi32>",
          "  %a = tensor.argmax %x {axis = 1, keepdims = true}\n"
          "  %b = tensor.argmax %x {axis = -1}\n  tensor.store %a, %y\n  tensor.store %b, %z\n",
          {x.View(), y.View(), z.View()});
  EXPECT_EQ(Ints<int32_t>(y), (std::vector<int64_t>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(Ints<int32_t>(z), (std::vector<int64_t>{1, 1, 2, 2}));
}

TEST(TensorArgmax, EmptyAxisIsAnError) {
  Buf x = Buf::F32({3, 0}, {});
  Buf y = Buf::Filled<int32_t>(DType::kI32, {3}, -1);
  ExpectRuntimeError(
      [&] {
        RunFunc("%x: in tensor<3x{N}xf32>, %y: out tensor<3xi32>",
                "  %a = tensor.argmax %x\n  tensor.store %a, %y\n", {x.View(), y.View()});
      },
      "tensor.argmax (t.pto:2): argmax over the empty axis 1 of a tensor of shape 3x0");
  Buf none = Buf::F32({0, 0}, {});
  Buf empty = Buf::Filled<int32_t>(DType::kI32, {0}, -1);
  RunFunc("%x: in tensor<{M}x{N}xf32>, %y: out tensor<{M}xi32>",  // no result element: fine
          "  %a = tensor.argmax %x\n  tensor.store %a, %y\n", {none.View(), empty.View()});
}

// ---- tensor.gather.

TEST(TensorGather, CopiesRowsByIdsOfAnyShape) {
  Buf table = Buf::F32({4, 3}, {0, 1, 2, 10, 11, 12, 20, -0.0f, kNaN, 30, 31, 32});
  Buf ids = Buf::Of<int64_t>(DType::kI64, {2, 2}, {3, 0, 2, 3});
  Buf y = Buf::Filled<float>(DType::kF32, {2, 2, 3}, -777.0f);
  RunFunc("%t: in tensor<4x3xf32>, %ids: in tensor<2x2xi64>, %y: out tensor<2x2x3xf32>",
          "  %g = tensor.gather %t, %ids\n  tensor.store %g, %y\n",
          {table.View(), ids.View(), y.View()});
  std::vector<float> got = Floats(y);
  EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 6),
            (std::vector<float>{30, 31, 32, 0, 1, 2}));
  EXPECT_EQ(got[6], 20.0f);
  EXPECT_EQ(Bits(got[7]), Bits(-0.0f));
  EXPECT_EQ(Bits(got[8]), Bits(table.F(8)));
  EXPECT_EQ(std::vector<float>(got.begin() + 9, got.end()), (std::vector<float>{30, 31, 32}));
}

TEST(TensorGather, Bf16RowsAreExact) {
  Buf table = Buf::Of<uint16_t>(DType::kBF16, {2, 2}, {0x3F81, 0x7FC1, 0x8000, 0x0001});
  Buf ids = Buf::Of<int32_t>(DType::kI32, {3}, {1, 0, 1});
  Buf y = Buf::Filled<uint16_t>(DType::kBF16, {3, 2}, 0xFFFF);
  RunFunc("%t: in tensor<2x2xbf16>, %ids: in tensor<3xi32>, %y: out tensor<3x2xbf16>",
          "  %g = tensor.gather %t, %ids\n  tensor.store %g, %y\n",
          {table.View(), ids.View(), y.View()});
  EXPECT_EQ(Ints<uint16_t>(y),
            (std::vector<int64_t>{0x8000, 0x0001, 0x3F81, 0x7FC1, 0x8000, 0x0001}));
}

TEST(TensorGather, IdOutOfRangeIsAnErrorNamingTheId) {
  for (auto [id, text] : {std::pair<int32_t, const char*>{4, "id 4 at ids[1]"},
                          std::pair<int32_t, const char*>{-1, "id -1 at ids[1]"}}) {
    Buf table = Buf::F32({4, 2}, std::vector<float>(8, 1.0f));
    Buf ids = Buf::Of<int32_t>(DType::kI32, {2}, {0, id});
    Buf y = Buf::Filled<float>(DType::kF32, {2, 2}, -777.0f);
    ExpectRuntimeError(
        [&] {
          RunFunc("%t: in tensor<4x2xf32>, %ids: in tensor<2xi32>, %y: out tensor<2x2xf32>",
                  "  %g = tensor.gather %t, %ids\n  tensor.store %g, %y\n",
                  {table.View(), ids.View(), y.View()});
        },
        std::string("tensor.gather (t.pto:2): ") + text +
            " is out of range [0, 4) (the table has 4 rows)");
    EXPECT_EQ(y.F(0), -777.0f);  // nothing written
  }
  // Empty rows (no column) still check every id.
  Buf table = Buf::F32({2, 0}, {});
  Buf ids = Buf::Of<int64_t>(DType::kI64, {1}, {2});
  Buf y = Buf::F32({1, 0}, {});
  ExpectRuntimeError(
      [&] {
        RunFunc("%t: in tensor<2x{D}xf32>, %ids: in tensor<1xi64>, %y: out tensor<1x{D}xf32>",
                "  %g = tensor.gather %t, %ids\n  tensor.store %g, %y\n",
                {table.View(), ids.View(), y.View()});
      },
      "id 2 at ids[0] is out of range [0, 2)");
}

// ---- tensor.store at offsets.

TEST(TensorStoreAt, WritesTheBoxAndNothingElse) {
  Buf v = Buf::F32({2, 2}, {1, 2, 3, 4});
  Buf cache = Buf::Filled<float>(DType::kF32, {4, 3}, 0.0f);
  RunFunc("%v: in tensor<{T}x2xf32>, %p: in index, %c: inout tensor<4x3xf32>",
          "  tensor.store %v, %c[%p, 1]\n", {v.View(), int64_t{2}, cache.View()});
  EXPECT_EQ(Floats(cache), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 3, 4}));
}

TEST(TensorStoreAt, OutOfBoundsIsAnErrorAndWritesNothing) {
  for (auto [p, text] : {std::pair<int64_t, const char*>{3, "[3, 5) is out of bounds in dim 0"},
                         std::pair<int64_t, const char*>{-1, "[-1, 1) is out of bounds in dim 0"},
                         std::pair<int64_t, const char*>{INT64_MAX,
                                                         "[9223372036854775807, "
                                                         "9223372036854775809)"}}) {
    Buf v = Buf::F32({2, 3}, {1, 2, 3, 4, 5, 6});
    Buf cache = Buf::Filled<float>(DType::kF32, {4, 3}, 0.0f);
    ExpectRuntimeError(
        [&] {
          RunFunc("%v: in tensor<2x3xf32>, %p: in index, %c: inout tensor<4x3xf32>",
                  "  tensor.store %v, %c[%p, 0]\n", {v.View(), p, cache.View()});
        },
        std::string("tensor.store (t.pto:2): ") + text);
    EXPECT_EQ(Floats(cache), std::vector<float>(12, 0.0f));
  }
}

}  // namespace
}  // namespace ptox::interp::testing
