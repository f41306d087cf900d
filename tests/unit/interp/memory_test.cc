// tile.load / tile.store / tile.full: edge tiles, padding, strides, unaligned views, narrow
// dtypes, bounds errors.
#include <numeric>

#include "tests/unit/interp/helpers.h"

namespace ptox::interp::testing {
namespace {

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

// Loads `in` at `offsets` as `tile` (with optional pad) and stores it to `out` at [0, ...].
// Returns the loaded tile (padding included).
Tile LoadStore(Buf& in, std::vector<Operand> offsets, Type tile, Buf& out,
               std::optional<double> pad = {}) {
  Builder b("t");
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value y = b.Param("y", Direction::kOut, out.IrType());
  Value t;
  b.Incore([&] {
    t = b.Load(x, std::move(offsets), tile, pad);
    b.Store(t, y, Zeros(out.IrType().rank()));
  });
  ir::Func f = b.Finish();
  Env env;
  RunInEnv(f, {in.View(), out.View()}, env);
  return TileOf(env, t);
}

TEST(TileLoad, EdgeTileIsPartialAndPadded) {
  Buf in = Buf::F32({3, 5}, Iota(15));
  Buf out = Buf::Filled(DType::kF32, {2, 4}, 99.0f);
  Tile t =
      LoadStore(in, {Operand::Int(2), Operand::Int(3)}, Type::Tile(2, 4, DType::kF32), out, -1.5);
  EXPECT_EQ(t.valid_rows, 1);
  EXPECT_EQ(t.valid_cols, 2);
  EXPECT_EQ(t.f, (std::vector<float>{13, 14, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f}));
  // The store writes only the valid 1x2 region.
  std::vector<float> got;
  for (int k = 0; k < 8; ++k) got.push_back(out.F(k));
  EXPECT_EQ(got, (std::vector<float>{13, 14, 99, 99, 99, 99, 99, 99}));
}

TEST(TileLoad, DefaultPadIsZero) {
  Buf in = Buf::F32({1, 3}, {1, 2, 3});
  Buf out = Buf::Filled(DType::kF32, {1, 3}, 0.0f);
  Tile t = LoadStore(in, {Operand::Int(0), Operand::Int(1)}, Type::Tile(2, 3, DType::kF32), out);
  EXPECT_EQ(t.f, (std::vector<float>{2, 3, 0, 0, 0, 0}));
  EXPECT_EQ(t.valid_rows, 1);
  EXPECT_EQ(t.valid_cols, 2);
}

TEST(TileStore, ClipsToTensorBounds) {
  // A full 2x2 tile stored at [1, 1] of a 2x2 tensor writes only element [1][1].
  Builder b("t");
  Value y =
      b.Param("y", Direction::kOut, Type::Tensor({Dim::Static(2), Dim::Static(2)}, DType::kF32));
  b.Incore([&] {
    Value t = b.Op(OpCode::kTileFull, {Operand::Float(4.5)}, {}, Type::Tile(2, 2, DType::kF32));
    b.Store(t, y, {Operand::Int(1), Operand::Int(1)});
  });
  ir::Func f = b.Finish();
  Buf out = Buf::Filled(DType::kF32, {2, 2}, 0.0f);
  interp::Run(f, {out.View()});
  EXPECT_EQ(out.F(0), 0.0f);
  EXPECT_EQ(out.F(1), 0.0f);
  EXPECT_EQ(out.F(2), 0.0f);
  EXPECT_EQ(out.F(3), 4.5f);
}

TEST(TileLoad, SymbolicDimWithTailLoop) {
  // for i = 0 to N step 2: y[i:i+2, :] = 2 * x[i:i+2, :], N = 5 (last tile has one row).
  Builder b("t");
  Type tt = Type::Tensor({Dim::Symbol("N"), Dim::Static(3)}, DType::kF32);
  Value x = b.Param("x", Direction::kIn, tt);
  Value y = b.Param("y", Direction::kOut, tt);
  Value n = b.Op(OpCode::kTensorDim, {x, Operand::Int(0)});
  b.For(Operand::Int(0), n, Operand::Int(2), [&](Value i) {
    b.Incore([&] {
      Value t = b.Load(x, {i, Operand::Int(0)}, Type::Tile(2, 3, DType::kF32));
      Value d = b.Op(OpCode::kTileMul, {t, Operand::Float(2.0)});
      b.Store(d, y, {i, Operand::Int(0)});
    });
  });
  ir::Func f = b.Finish();
  ir::Verify(f);
  Buf in = Buf::F32({5, 3}, Iota(15));
  Buf out = Buf::Filled(DType::kF32, {5, 3}, -1.0f);
  interp::Run(f, {in.View(), out.View()});
  for (int k = 0; k < 15; ++k) EXPECT_EQ(out.F(k), 2.0f * k) << k;
}

TEST(TileLoad, StridedInputView) {
  // A 4x3 view of a 4x6 buffer taking every other column: element [r][c] = 6r + 2c.
  Buf in = Buf::F32({4, 3}, Iota(24));
  in.strides = {6, 2};
  Buf out = Buf::Filled(DType::kF32, {4, 3}, 0.0f);
  LoadStore(in, Zeros(2), Type::Tile(4, 3, DType::kF32), out);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(out.F(r * 3 + c), 6.0f * r + 2.0f * c);
}

TEST(TileStore, StridedOutputViewLeavesGapsAlone) {
  Buf in = Buf::F32({2, 2}, {1, 2, 3, 4});
  Buf out = Buf::F32({2, 2}, std::vector<float>(8, -7.0f));  // 2x4 buffer, view columns 0 and 2
  out.strides = {4, 2};
  LoadStore(in, Zeros(2), Type::Tile(2, 2, DType::kF32), out);
  std::vector<float> got;
  for (int k = 0; k < 8; ++k) got.push_back(out.F(k));
  EXPECT_EQ(got, (std::vector<float>{1, -7, 2, -7, 3, -7, 4, -7}));
}

TEST(TileLoad, UnalignedViewsByOneByte) {
  Buf in = Buf::Of<float>(DType::kF32, {2, 2}, {1.5f, -2.0f, kInf, 0.25f}, /*pad_front=*/1);
  Buf out = Buf::Of<float>(DType::kF32, {2, 2}, std::vector<float>(4, 0.0f), /*pad_front=*/3);
  LoadStore(in, Zeros(2), Type::Tile(2, 2, DType::kF32), out);
  EXPECT_EQ(out.F(0), 1.5f);
  EXPECT_EQ(out.F(1), -2.0f);
  EXPECT_EQ(out.F(2), kInf);
  EXPECT_EQ(out.F(3), 0.25f);
}

TEST(TileLoad, Bf16WidensExactlyAndStoresBack) {
  std::vector<uint16_t> bits{0x3F82, 0x0001, 0xFF80, 0x7FC1, 0x8000, 0x7F7F};
  Buf in = Buf::Of(DType::kBF16, {1, 6}, bits, /*pad_front=*/1);
  Buf out = Buf::Of(DType::kBF16, {1, 6}, std::vector<uint16_t>(6, 0));
  Tile t = LoadStore(in, Zeros(2), Type::Tile(1, 6, DType::kBF16), out);
  EXPECT_EQ(t.f[0], 1.015625f);
  EXPECT_EQ(Bits(t.f[1]), 0x00010000u);
  EXPECT_EQ(t.f[2], -kInf);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(out.At<uint16_t>(k), bits[k]) << k;
}

TEST(TileLoad, F16WidensExactlyAndStoresBack) {
  std::vector<uint16_t> bits{0x3C00, 0x0001, 0x7BFF, 0xFC00, 0x8000, 0x03FF};
  Buf in = Buf::Of(DType::kF16, {6}, bits);
  Buf out = Buf::Of(DType::kF16, {6}, std::vector<uint16_t>(6, 0));
  Tile t = LoadStore(in, Zeros(1), Type::Tile(1, 6, DType::kF16), out);
  EXPECT_EQ(t.f[0], 1.0f);
  EXPECT_EQ(t.f[1], 0x1p-24f);
  EXPECT_EQ(t.f[2], 65504.0f);
  EXPECT_EQ(t.f[5], 1023 * 0x1p-24f);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(out.At<uint16_t>(k), bits[k]) << k;
}

TEST(TileLoad, IntegerAndBoolTensors) {
  Buf i8 = Buf::Of<int8_t>(DType::kI8, {1, 3}, {-128, 127, 5}, 1);
  Buf o8 = Buf::Of<int8_t>(DType::kI8, {1, 3}, {0, 0, 0});
  Tile t = LoadStore(i8, Zeros(2), Type::Tile(1, 3, DType::kI8), o8);
  EXPECT_EQ(t.i, (std::vector<int64_t>{-128, 127, 5}));
  EXPECT_EQ(o8.At<int8_t>(0), -128);
  EXPECT_EQ(o8.At<int8_t>(1), 127);
  Buf bl = Buf::Of<uint8_t>(DType::kBool, {3}, {0, 1, 7});  // any nonzero byte reads as true
  Buf ob = Buf::Of<uint8_t>(DType::kBool, {3}, {9, 9, 9});
  t = LoadStore(bl, Zeros(1), Type::Tile(1, 3, DType::kBool), ob);
  EXPECT_EQ(t.i, (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(ob.At<uint8_t>(2), 1);
}

TEST(TileLoad, Rank1AndRank3Tensors) {
  Buf r1 = Buf::F32({5}, Iota(5));
  Buf o1 = Buf::Filled(DType::kF32, {8}, 0.0f);
  Tile t = LoadStore(r1, {Operand::Int(2)}, Type::Tile(1, 8, DType::kF32), o1, 9.0);
  EXPECT_EQ(t.valid_rows, 1);
  EXPECT_EQ(t.valid_cols, 3);
  EXPECT_EQ(t.f, (std::vector<float>{2, 3, 4, 9, 9, 9, 9, 9}));
  Buf r3 = Buf::F32({2, 3, 4}, Iota(24));
  Buf o3 = Buf::Filled(DType::kF32, {2, 4}, 0.0f);
  t = LoadStore(r3, {Operand::Int(1), Operand::Int(1), Operand::Int(0)},
                Type::Tile(2, 4, DType::kF32), o3);
  EXPECT_EQ(t.f, (std::vector<float>{16, 17, 18, 19, 20, 21, 22, 23}));
}

TEST(TileLoad, OffsetAtDimIsOutOfBounds) {
  Buf in = Buf::F32({4, 4}, Iota(16));
  Buf out = Buf::Filled(DType::kF32, {2, 2}, 0.0f);
  // Offsets from a scalar argument, so the verifier cannot see them.
  Builder b("t");
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value y = b.Param("y", Direction::kOut, out.IrType());
  Value o = b.Param("o", Direction::kIn, Type::Scalar(DType::kIndex));
  b.Incore([&] {
    Value t = b.Load(x, {o, Operand::Int(0)}, Type::Tile(2, 2, DType::kF32));
    b.Store(t, y, Zeros(2));
  });
  ir::Func f = b.Finish();
  ExpectRuntimeError(
      [&] {
        interp::Run(f, {in.View(), out.View(), int64_t{4}});
      },
      "tile.load: offsets [4, 0] are out of bounds for a tensor of shape 4x4xf32");
  ExpectRuntimeError(
      [&] {
        interp::Run(f, {in.View(), out.View(), int64_t{-1}});
      },
      "out of bounds");
  EXPECT_NO_THROW(interp::Run(f, {in.View(), out.View(), int64_t{3}}));
  EXPECT_EQ(out.F(0), 12.0f);
}

TEST(TileLoad, EmptyTensorCannotBeLoaded) {
  Builder b("t");
  Value x =
      b.Param("x", Direction::kIn, Type::Tensor({Dim::Symbol("N"), Dim::Static(4)}, DType::kF32));
  b.Incore([&] { b.Load(x, Zeros(2), Type::Tile(2, 4, DType::kF32)); });
  ir::Func f = b.Finish();
  Buf in = Buf::F32({0, 4}, {});
  ExpectRuntimeError([&] { interp::Run(f, {in.View()}); }, "shape 0x4xf32");
}

TEST(TileFull, FillsAndConvertsTheScalar) {
  Buf out = Buf::Of(DType::kBF16, {1, 2}, std::vector<uint16_t>(2, 0));
  std::vector<Buf> none;
  RunTiles(none, out, [](Builder& b, const std::vector<Value>&) {
    // 0x3F818000 as a double: the f32 is exact, bf16 rounding ties to even -> 0x3F82.
    return b.Op(OpCode::kTileFull, {Operand::Float(1.01171875)}, {},
                Type::Tile(1, 2, DType::kBF16));
  });
  EXPECT_EQ(out.At<uint16_t>(0), 0x3F82);
  EXPECT_EQ(out.At<uint16_t>(1), 0x3F82);
  Buf oi = Buf::Of<int32_t>(DType::kI32, {1, 1}, {0});
  RunTiles(none, oi, [](Builder& b, const std::vector<Value>&) {
    return b.Op(OpCode::kTileFull, {Operand::Int(-7)}, {}, Type::Tile(1, 1, DType::kI32));
  });
  EXPECT_EQ(oi.At<int32_t>(0), -7);
}

TEST(TileFull, OutOfRangeImmediateIsAnError) {
  Buf o8 = Buf::Of<int8_t>(DType::kI8, {1, 1}, {0});
  std::vector<Buf> none;
  ExpectRuntimeError(
      [&] {
        RunTiles(none, o8, [](Builder& b, const std::vector<Value>&) {
          return b.Op(OpCode::kTileFull, {Operand::Int(300)}, {}, Type::Tile(1, 1, DType::kI8));
        });
      },
      "index 300 does not fit in i8");
}

}  // namespace
}  // namespace ptox::interp::testing
