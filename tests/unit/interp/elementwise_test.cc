// Elementwise tile ops: binary, unary, compare, select, cast — NaN / +-0 / Inf, valid regions,
// padding, integer overflow and division by zero.
#include "tests/unit/interp/helpers.h"

namespace ptox::interp::testing {
namespace {

// Applies a binary op to two 1xN f32 rows; returns the output row.
std::vector<float> BinaryF32(OpCode op, const std::vector<float>& a, const std::vector<float>& b) {
  int64_t n = static_cast<int64_t>(a.size());
  std::vector<Buf> in{Buf::F32({1, n}, a), Buf::F32({1, n}, b)};
  Buf out = Buf::Filled(DType::kF32, {1, n}, 0.0f);
  RunTiles(in, out, [&](Builder& bl, const std::vector<Value>& t) {
    return bl.Op(op, {t[0], t[1]});
  });
  std::vector<float> r;
  for (int64_t k = 0; k < n; ++k) r.push_back(out.F(k));
  return r;
}

std::vector<float> UnaryF32(OpCode op, const std::vector<float>& a) {
  int64_t n = static_cast<int64_t>(a.size());
  std::vector<Buf> in{Buf::F32({1, n}, a)};
  Buf out = Buf::Filled(DType::kF32, {1, n}, 0.0f);
  RunTiles(in, out, [&](Builder& bl, const std::vector<Value>& t) { return bl.Op(op, {t[0]}); });
  std::vector<float> r;
  for (int64_t k = 0; k < n; ++k) r.push_back(out.F(k));
  return r;
}

std::vector<uint32_t> BitsOf(const std::vector<float>& v) {
  std::vector<uint32_t> r;
  for (float x : v) r.push_back(Bits(x));
  return r;
}

TEST(TileBinary, AddSubMulDivIeee) {
  EXPECT_EQ(BinaryF32(OpCode::kTileAdd, {1.5f, kInf, -0.0f, 1e38f}, {2.25f, -1.0f, -0.0f, 3e38f}),
            (std::vector<float>{3.75f, kInf, -0.0f, kInf}));
  EXPECT_EQ(BitsOf(BinaryF32(OpCode::kTileAdd, {-0.0f}, {0.0f})), BitsOf({0.0f}));
  auto sub = BinaryF32(OpCode::kTileSub, {kInf, 1.0f}, {kInf, 3.0f});
  EXPECT_TRUE(std::isnan(sub[0]));
  EXPECT_EQ(sub[1], -2.0f);
  auto mul = BinaryF32(OpCode::kTileMul, {0.0f, -2.0f, 0x1p-126f}, {kInf, 0.0f, 0.5f});
  EXPECT_TRUE(std::isnan(mul[0]));
  EXPECT_EQ(Bits(mul[1]), Bits(-0.0f));
  EXPECT_EQ(mul[2], 0x1p-127f);  // subnormal result kept (no flush to zero)
  auto div = BinaryF32(OpCode::kTileDiv, {1.0f, -1.0f, 0.0f, 1.0f}, {0.0f, 0.0f, 0.0f, 3.0f});
  EXPECT_EQ(div[0], kInf);
  EXPECT_EQ(div[1], -kInf);
  EXPECT_TRUE(std::isnan(div[2]));
  EXPECT_EQ(div[3], 1.0f / 3.0f);
}

TEST(TileBinary, MaxMinPropagateNaNAndOrderZeros) {
  auto mx = BinaryF32(OpCode::kTileMax, {kNaN, 1.0f, -0.0f, 0.0f, -3.0f},
                      {1.0f, kNaN, 0.0f, -0.0f, -4.0f});
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(Bits(mx[2]), Bits(0.0f));
  EXPECT_EQ(Bits(mx[3]), Bits(0.0f));
  EXPECT_EQ(mx[4], -3.0f);
  auto mn = BinaryF32(OpCode::kTileMin, {-0.0f, 0.0f, -kInf}, {0.0f, -0.0f, kNaN});
  EXPECT_EQ(Bits(mn[0]), Bits(-0.0f));
  EXPECT_EQ(Bits(mn[1]), Bits(-0.0f));
  EXPECT_TRUE(std::isnan(mn[2]));
}

TEST(TileBinary, ScalarOperandBroadcasts) {
  std::vector<Buf> in{Buf::F32({2, 2}, {1, 2, 3, 4})};
  Buf out = Buf::Filled(DType::kF32, {2, 2}, 0.0f);
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileSub, {t[0], Operand::Int(10)});  // integer immediate -> 10.0f
  });
  EXPECT_EQ(out.F(0), -9.0f);
  EXPECT_EQ(out.F(3), -6.0f);
}

TEST(TileBinary, ValidRegionIsTheIntersectionAndPaddingIsComputed) {
  // a: 3x3 tensor loaded as a 2x2 tile at [1, 2] -> valid 2x1, pad 5.
  // b: full 2x2 tile of 1. a + b: valid 2x1, padding = 5 + 1.
  Builder bl("t");
  Buf in = Buf::F32({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Value x = bl.Param("x", Direction::kIn, in.IrType());
  Value sum;
  bl.Incore([&] {
    Value a = bl.Load(x, {Operand::Int(1), Operand::Int(2)}, Type::Tile(2, 2, DType::kF32), 5.0);
    Value b = bl.Op(OpCode::kTileFull, {Operand::Float(1.0)}, {}, Type::Tile(2, 2, DType::kF32));
    sum = bl.Op(OpCode::kTileAdd, {b, a});
  });
  ir::Func f = bl.Finish();
  Env env;
  RunInEnv(f, {in.View()}, env);
  const Tile& t = TileOf(env, sum);
  EXPECT_EQ(t.valid_rows, 2);
  EXPECT_EQ(t.valid_cols, 1);
  EXPECT_EQ(t.f, (std::vector<float>{6, 6, 9, 6}));
}

TEST(TileBinary, Bf16ResultsRoundToNearestEven) {
  // 1.0 + 2^-8 = 0x3F808000: a tie between 0x3F80 and 0x3F81 -> even 0x3F80.
  // 1.0078125 (0x3F81) + 2^-8 = 0x3F818000: tie -> 0x3F82.
  std::vector<Buf> in{Buf::Of<uint16_t>(DType::kBF16, {1, 2}, {0x3F80, 0x3F81})};
  Buf out = Buf::Of<uint16_t>(DType::kBF16, {1, 2}, {0, 0});
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileAdd, {t[0], Operand::Float(0.00390625)});
  });
  EXPECT_EQ(out.At<uint16_t>(0), 0x3F80);
  EXPECT_EQ(out.At<uint16_t>(1), 0x3F82);
}

TEST(TileBinary, F16OverflowGoesToInf) {
  std::vector<Buf> in{Buf::Of<uint16_t>(DType::kF16, {1, 2}, {0x7BFF, 0x0001})};  // 65504, 2^-24
  Buf out = Buf::Of<uint16_t>(DType::kF16, {1, 2}, {0, 0});
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileMul, {t[0], Operand::Float(2.0)});
  });
  EXPECT_EQ(out.At<uint16_t>(0), 0x7C00);
  EXPECT_EQ(out.At<uint16_t>(1), 0x0002);  // subnormal doubles exactly
}

std::vector<int32_t> BinaryI32(OpCode op, const std::vector<int32_t>& a,
                               const std::vector<int32_t>& b) {
  int64_t n = static_cast<int64_t>(a.size());
  std::vector<Buf> in{Buf::Of(DType::kI32, {1, n}, a), Buf::Of(DType::kI32, {1, n}, b)};
  Buf out = Buf::Of(DType::kI32, {1, n}, std::vector<int32_t>(n, 0));
  RunTiles(in, out, [&](Builder& bl, const std::vector<Value>& t) {
    return bl.Op(op, {t[0], t[1]});
  });
  std::vector<int32_t> r;
  for (int64_t k = 0; k < n; ++k) r.push_back(out.At<int32_t>(k));
  return r;
}

TEST(TileBinary, IntegerArithmeticAndFloorDivision) {
  EXPECT_EQ(BinaryI32(OpCode::kTileAdd, {1, -5, INT32_MAX}, {2, 3, 0}),
            (std::vector<int32_t>{3, -2, INT32_MAX}));
  EXPECT_EQ(BinaryI32(OpCode::kTileDiv, {7, -7, 7, -7}, {2, 2, -2, -2}),
            (std::vector<int32_t>{3, -4, -4, 3}));
  EXPECT_EQ(BinaryI32(OpCode::kTileMax, {-1, 4}, {-2, 9}), (std::vector<int32_t>{-1, 9}));
}

TEST(TileBinary, IntegerOverflowIsAnError) {
  ExpectRuntimeError(
      [] {
        BinaryI32(OpCode::kTileAdd, {1, INT32_MAX}, {1, 1});
      },
      "tile.add: integer overflow in i32 at element [0, 1]: 2147483647 add 1");
  ExpectRuntimeError([] { BinaryI32(OpCode::kTileMul, {65536}, {65536}); }, "integer overflow");
  ExpectRuntimeError([] { BinaryI32(OpCode::kTileDiv, {INT32_MIN}, {-1}); }, "integer overflow");
  ExpectRuntimeError([] { BinaryI32(OpCode::kTileSub, {INT32_MIN}, {1}); }, "integer overflow");
}

TEST(TileBinary, IntegerDivisionByZeroIsAnError) {
  ExpectRuntimeError(
      [] {
        BinaryI32(OpCode::kTileDiv, {4, 4}, {2, 0});
      },
      "integer division by zero in i32 at element [0, 1]");
}

TEST(TileBinary, IntegerErrorsInPaddingProduceZero) {
  // x: 1x3 i32 loaded as 1x4 with pad 0 (valid 1x3); x / x at the padding is 0 / 0 -> 0.
  Builder bl("t");
  Buf in = Buf::Of<int32_t>(DType::kI32, {1, 3}, {6, -6, 9});
  Value x = bl.Param("x", Direction::kIn, in.IrType());
  Value q;
  bl.Incore([&] {
    Value a = bl.Load(x, Zeros(2), Type::Tile(1, 4, DType::kI32));
    q = bl.Op(OpCode::kTileDiv, {a, a});
  });
  ir::Func f = bl.Finish();
  Env env;
  RunInEnv(f, {in.View()}, env);
  EXPECT_EQ(TileOf(env, q).i, (std::vector<int64_t>{1, 1, 1, 0}));
}

TEST(TileBinary, I8RangeIsChecked) {
  std::vector<Buf> in{Buf::Of<int8_t>(DType::kI8, {1, 2}, {100, -100})};
  Buf out = Buf::Of<int8_t>(DType::kI8, {1, 2}, {0, 0});
  ExpectRuntimeError(
      [&] {
        RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
          return b.Op(OpCode::kTileAdd, {t[0], Operand::Int(28)});
        });
      },
      "integer overflow in i8 at element [0, 0]: 100 add 28");
}

TEST(TileUnary, FloatFunctionsAndEdges) {
  auto r = UnaryF32(OpCode::kTileExp, {0.0f, -kInf, kInf, 1.0f});
  EXPECT_EQ(r, (std::vector<float>{1.0f, 0.0f, kInf, scalar::Exp(1.0f)}));
  r = UnaryF32(OpCode::kTileLog, {1.0f, 0.0f, -1.0f, kInf});
  EXPECT_EQ(Bits(r[0]), 0u);
  EXPECT_EQ(r[1], -kInf);
  EXPECT_TRUE(std::isnan(r[2]));
  EXPECT_EQ(r[3], kInf);
  r = UnaryF32(OpCode::kTileSqrt, {4.0f, -0.0f, 2.0f});
  EXPECT_EQ(r[0], 2.0f);
  EXPECT_EQ(Bits(r[1]), Bits(-0.0f));
  EXPECT_EQ(r[2], 1.41421354f);
  EXPECT_EQ(UnaryF32(OpCode::kTileRsqrt, {0.25f, 0.0f}), (std::vector<float>{2.0f, kInf}));
  EXPECT_EQ(UnaryF32(OpCode::kTileRecip, {4.0f, -0.0f}), (std::vector<float>{0.25f, -kInf}));
  EXPECT_EQ(UnaryF32(OpCode::kTileTanh, {kInf, -kInf}), (std::vector<float>{1.0f, -1.0f}));
  EXPECT_EQ(UnaryF32(OpCode::kTileSigmoid, {0.0f, -kInf, kInf}),
            (std::vector<float>{0.5f, 0.0f, 1.0f}));
  EXPECT_EQ(BitsOf(UnaryF32(OpCode::kTileRelu, {-0.0f, -2.0f, 3.0f})), BitsOf({0.0f, 0.0f, 3.0f}));
  EXPECT_TRUE(std::isnan(UnaryF32(OpCode::kTileRelu, {kNaN})[0]));
  EXPECT_EQ(BitsOf(UnaryF32(OpCode::kTileNeg, {0.0f, -1.0f})), BitsOf({-0.0f, 1.0f}));
  EXPECT_EQ(BitsOf(UnaryF32(OpCode::kTileAbs, {-0.0f, -kInf})), BitsOf({0.0f, kInf}));
  EXPECT_EQ(UnaryF32(OpCode::kTileSilu, {0.0f, kInf}), (std::vector<float>{0.0f, kInf}));
  EXPECT_EQ(UnaryF32(OpCode::kTileGelu, {0.0f, kInf}), (std::vector<float>{0.0f, kInf}));
}

TEST(TileUnary, IntegerNegAbsRelu) {
  std::vector<Buf> in{Buf::Of<int32_t>(DType::kI32, {1, 3}, {-5, 0, 7})};
  Buf out = Buf::Of<int32_t>(DType::kI32, {1, 3}, {9, 9, 9});
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileRelu, {b.Op(OpCode::kTileNeg, {t[0]})});
  });
  EXPECT_EQ(out.At<int32_t>(0), 5);
  EXPECT_EQ(out.At<int32_t>(1), 0);
  EXPECT_EQ(out.At<int32_t>(2), 0);
  std::vector<Buf> in8{Buf::Of<int8_t>(DType::kI8, {1, 1}, {-128})};
  Buf o8 = Buf::Of<int8_t>(DType::kI8, {1, 1}, {0});
  ExpectRuntimeError(
      [&] {
        RunTiles(in8, o8, [](Builder& b, const std::vector<Value>& t) {
          return b.Op(OpCode::kTileAbs, {t[0]});
        });
      },
      "integer overflow in i8");
}

TEST(TileCompare, NaNAndZerosFollowIeee) {
  std::vector<Buf> in{Buf::F32({1, 4}, {kNaN, -0.0f, 1.0f, 2.0f}),
                      Buf::F32({1, 4}, {kNaN, 0.0f, 2.0f, 1.0f})};
  auto run = [&](OpCode op) {
    Buf out = Buf::Of<uint8_t>(DType::kBool, {1, 4}, {7, 7, 7, 7});
    RunTiles(in, out, [&](Builder& b, const std::vector<Value>& t) {
      return b.Op(op, {t[0], t[1]});
    });
    std::vector<int> r;
    for (int k = 0; k < 4; ++k) r.push_back(out.At<uint8_t>(k));
    return r;
  };
  EXPECT_EQ(run(OpCode::kTileEq), (std::vector<int>{0, 1, 0, 0}));
  EXPECT_EQ(run(OpCode::kTileNe), (std::vector<int>{1, 0, 1, 1}));
  EXPECT_EQ(run(OpCode::kTileLt), (std::vector<int>{0, 0, 1, 0}));
  EXPECT_EQ(run(OpCode::kTileLe), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(run(OpCode::kTileGt), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(run(OpCode::kTileGe), (std::vector<int>{0, 1, 0, 1}));
}

TEST(TileSelect, PicksPerElementWithScalarElse) {
  std::vector<Buf> in{Buf::F32({1, 4}, {-1.0f, 2.0f, kNaN, 0.5f})};
  Buf out = Buf::Filled(DType::kF32, {1, 4}, 0.0f);
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    Value pos = b.Op(OpCode::kTileGt, {t[0], Operand::Float(0.0)});
    return b.Op(OpCode::kTileSelect, {pos, t[0], Operand::Float(-9.0)});
  });
  EXPECT_EQ(out.F(0), -9.0f);
  EXPECT_EQ(out.F(1), 2.0f);
  EXPECT_EQ(out.F(2), -9.0f);  // NaN > 0 is false
  EXPECT_EQ(out.F(3), 0.5f);
}

TEST(TileCast, FloatToIntTruncatesSaturatesNaNZero) {
  std::vector<Buf> in{Buf::F32({1, 6}, {2.9f, -2.9f, 1e10f, -kInf, kNaN, -0.5f})};
  Buf out = Buf::Of(DType::kI32, {1, 6}, std::vector<int32_t>(6, 5));
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileCast, {t[0]}, {}, Type::Tile(1, 6, DType::kI32));
  });
  std::vector<int32_t> got;
  for (int k = 0; k < 6; ++k) got.push_back(out.At<int32_t>(k));
  EXPECT_EQ(got, (std::vector<int32_t>{2, -2, INT32_MAX, INT32_MIN, 0, 0}));
}

TEST(TileCast, F32ToBf16AndF16RoundToNearestEven) {
  std::vector<Buf> in{Buf::F32({1, 3}, {FromBits(0x3F818000), FromBits(0x3F828000), 1e6f})};
  Buf ob = Buf::Of<uint16_t>(DType::kBF16, {1, 3}, {0, 0, 0});
  RunTiles(in, ob, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileCast, {t[0]}, {}, Type::Tile(1, 3, DType::kBF16));
  });
  EXPECT_EQ(ob.At<uint16_t>(0), 0x3F82);
  EXPECT_EQ(ob.At<uint16_t>(1), 0x3F82);
  EXPECT_EQ(ob.At<uint16_t>(2), 0x4974);  // 1e6 = 0x49742400 -> 0x4974
  Buf oh = Buf::Of<uint16_t>(DType::kF16, {1, 3}, {0, 0, 0});
  RunTiles(in, oh, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileCast, {t[0]}, {}, Type::Tile(1, 3, DType::kF16));
  });
  EXPECT_EQ(oh.At<uint16_t>(0), 0x3C0C);  // 1.01171875 = 1 + 12/1024 exactly
  EXPECT_EQ(oh.At<uint16_t>(2), 0x7C00);  // overflow -> Inf
}

TEST(TileCast, IntToIntIsRangeCheckedAndBoolIsNonzero) {
  std::vector<Buf> in{Buf::Of<int32_t>(DType::kI32, {1, 3}, {127, -128, 0})};
  Buf o8 = Buf::Of<int8_t>(DType::kI8, {1, 3}, {1, 1, 1});
  RunTiles(in, o8, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileCast, {t[0]}, {}, Type::Tile(1, 3, DType::kI8));
  });
  EXPECT_EQ(o8.At<int8_t>(0), 127);
  EXPECT_EQ(o8.At<int8_t>(1), -128);
  std::vector<Buf> big{Buf::Of<int32_t>(DType::kI32, {1, 2}, {1, 128})};
  ExpectRuntimeError(
      [&] {
        RunTiles(big, o8, [](Builder& b, const std::vector<Value>& t) {
          return b.Op(OpCode::kTileCast, {t[0]}, {}, Type::Tile(1, 2, DType::kI8));
        });
      },
      "value i32 128 at element [0, 1] does not fit in i8");
  std::vector<Buf> fl{Buf::F32({1, 3}, {0.0f, kNaN, -0.0f})};
  Buf ob = Buf::Of<uint8_t>(DType::kBool, {1, 3}, {9, 9, 9});
  RunTiles(fl, ob, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileCast, {t[0]}, {}, Type::Tile(1, 3, DType::kBool));
  });
  EXPECT_EQ(ob.At<uint8_t>(0), 0);
  EXPECT_EQ(ob.At<uint8_t>(1), 1);
  EXPECT_EQ(ob.At<uint8_t>(2), 0);
}

TEST(TileCast, IntToFloatRoundsToNearestEven) {
  // 2^24 + 1 -> 2^24 (tie to even); 2^24 + 3 -> 2^24 + 4.
  std::vector<Buf> in{Buf::Of<int32_t>(DType::kI32, {1, 2}, {16777217, 16777219})};
  Buf out = Buf::Filled(DType::kF32, {1, 2}, 0.0f);
  RunTiles(in, out, [](Builder& b, const std::vector<Value>& t) {
    return b.Op(OpCode::kTileCast, {t[0]}, {}, Type::Tile(1, 2, DType::kF32));
  });
  EXPECT_EQ(out.F(0), 16777216.0f);
  EXPECT_EQ(out.F(1), 16777220.0f);
}

}  // namespace
}  // namespace ptox::interp::testing
