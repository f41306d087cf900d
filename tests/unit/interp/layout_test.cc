// Layout ops (transpose, reshape, slice, assemble) and matmul / matmul_acc with partial tiles.
#include "tests/unit/interp/helpers.h"

namespace ptox::interp::testing {
namespace {

// Runs `body` on the tile loaded from `in` (tile shape = tile_rows x tile_cols at [0, 0]) and
// returns the tile it builds.
Tile Apply(Buf in, int64_t tile_rows, int64_t tile_cols,
           const std::function<Value(Builder&, Value)>& body) {
  Builder b("t");
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value r;
  b.Incore([&] { r = body(b, b.Load(x, Zeros(2), Type::Tile(tile_rows, tile_cols, in.dtype))); });
  ir::Func f = b.Finish();
  ir::Verify(f);
  Env env;
  RunInEnv(f, {in.View()}, env);
  return TileOf(env, r);
}

TEST(TileTranspose, SwapsDataAndValidRegion) {
  Tile t = Apply(Buf::F32({2, 3}, {1, 2, 3, 4, 5, 6}), 2, 4,
                 [](Builder& b, Value x) { return b.Op(OpCode::kTileTranspose, {x}); });
  EXPECT_EQ(t.rows, 4);
  EXPECT_EQ(t.cols, 2);
  EXPECT_EQ(t.valid_rows, 3);
  EXPECT_EQ(t.valid_cols, 2);
  EXPECT_EQ(t.f, (std::vector<float>{1, 4, 2, 5, 3, 6, 0, 0}));
}

TEST(TileReshape, RowMajorAndPartialIsAnError) {
  Tile t = Apply(Buf::F32({2, 3}, {1, 2, 3, 4, 5, 6}), 2, 3, [](Builder& b, Value x) {
    return b.Op(OpCode::kTileReshape, {x}, {}, Type::Tile(3, 2, DType::kF32));
  });
  EXPECT_EQ(t.f, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.valid_rows, 3);
  ExpectRuntimeError(
      [] {
        Apply(Buf::F32({2, 3}, {1, 2, 3, 4, 5, 6}), 2, 4, [](Builder& b, Value x) {
          return b.Op(OpCode::kTileReshape, {x}, {}, Type::Tile(4, 2, DType::kF32));
        });
      },
      "tile.reshape: cannot reshape a partial tile (valid region 2x3 of 2x4)");
}

TEST(TileSlice, CopiesAndClipsValidRegion) {
  Tile t = Apply(Buf::F32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), 4, 4, [](Builder& b, Value x) {
    return b.Op(OpCode::kTileSlice, {x, Operand::Int(1), Operand::Int(2)}, {},
                Type::Tile(2, 2, DType::kF32));
  });
  EXPECT_EQ(t.f, (std::vector<float>{6, 0, 9, 0}));
  EXPECT_EQ(t.valid_rows, 2);
  EXPECT_EQ(t.valid_cols, 1);
}

TEST(TileSlice, DynamicOffsetOutOfBoundsIsAnError) {
  Builder b("t");
  Buf in = Buf::F32({4, 4}, std::vector<float>(16, 1.0f));
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value i = b.Param("i", Direction::kIn, Type::Scalar(DType::kIndex));
  b.Incore([&] {
    Value t = b.Load(x, Zeros(2), Type::Tile(4, 4, DType::kF32));
    b.Op(OpCode::kTileSlice, {t, i, Operand::Int(0)}, {}, Type::Tile(2, 4, DType::kF32));
  });
  ir::Func f = b.Finish();
  EXPECT_NO_THROW(interp::Run(f, {in.View(), int64_t{2}}));
  ExpectRuntimeError(
      [&] {
        interp::Run(f, {in.View(), int64_t{3}});
      },
      "tile.slice: offsets [3, 0] are out of bounds (row offset in [0, 2]");
}

TEST(TileAssemble, WritesSourceValidRegionKeepsDestinationValid) {
  Builder b("t");
  Buf in = Buf::F32({1, 1}, {5});
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value r;
  b.Incore([&] {
    Value dst = b.Op(OpCode::kTileFull, {Operand::Float(1.0)}, {}, Type::Tile(3, 3, DType::kF32));
    Value src = b.Load(x, Zeros(2), Type::Tile(2, 2, DType::kF32), 9.0);  // valid 1x1
    r = b.Op(OpCode::kTileAssemble, {dst, src, Operand::Int(1), Operand::Int(1)});
  });
  ir::Func f = b.Finish();
  Env env;
  RunInEnv(f, {in.View()}, env);
  const Tile& t = TileOf(env, r);
  EXPECT_EQ(t.f, (std::vector<float>{1, 1, 1, 1, 5, 1, 1, 1, 1}));  // padding 9 not written
  EXPECT_EQ(t.valid_rows, 3);
  EXPECT_EQ(t.valid_cols, 3);
}

// C = A (2x3) * B (3x2), also with B given transposed.
TEST(TileMatmul, SmallProductAndTransposeB) {
  Builder b("t");
  Buf a = Buf::F32({2, 3}, {1, 2, 3, 4, 5, 6});
  Buf bm = Buf::F32({3, 2}, {7, 8, 9, 10, 11, 12});
  Buf bt = Buf::F32({2, 3}, {7, 9, 11, 8, 10, 12});
  Value pa = b.Param("a", Direction::kIn, a.IrType());
  Value pb = b.Param("b", Direction::kIn, bm.IrType());
  Value pt = b.Param("bt", Direction::kIn, bt.IrType());
  Value c1, c2, c3;
  b.Incore([&] {
    Value ta = b.Load(pa, Zeros(2), Type::Tile(2, 3, DType::kF32));
    Value tb = b.Load(pb, Zeros(2), Type::Tile(3, 2, DType::kF32));
    Value tt = b.Load(pt, Zeros(2), Type::Tile(2, 3, DType::kF32));
    c1 = b.Op(OpCode::kTileMatmul, {ta, tb});
    c2 = b.Op(OpCode::kTileMatmul, {ta, tt}, {{"transpose_b", true}});
    c3 = b.Op(OpCode::kTileMatmulAcc, {c1, ta, tb});
  });
  ir::Func f = b.Finish();
  ir::Verify(f);
  Env env;
  RunInEnv(f, {a.View(), bm.View(), bt.View()}, env);
  EXPECT_EQ(TileOf(env, c1).f, (std::vector<float>{58, 64, 139, 154}));
  EXPECT_EQ(TileOf(env, c2).f, (std::vector<float>{58, 64, 139, 154}));
  EXPECT_EQ(TileOf(env, c3).f, (std::vector<float>{116, 128, 278, 308}));
}

TEST(TileMatmul, PartialKIgnoresPaddingAndBf16Widens) {
  // A: 1x2 bf16 data in a 2x4 tile padded with 1000 (valid 1x2); B: 4x1 of ones (valid 4x1).
  // K_valid = 2, so C[0][0] = 1.5 + 2.5; the result is valid 1x1.
  Builder b("t");
  Buf a = Buf::Of<uint16_t>(DType::kBF16, {1, 2}, {0x3FC0, 0x4020});  // 1.5, 2.5
  Buf ones = Buf::Of<uint16_t>(DType::kBF16, {4, 1}, {0x3F80, 0x3F80, 0x3F80, 0x3F80});
  Value pa = b.Param("a", Direction::kIn, a.IrType());
  Value pb = b.Param("b", Direction::kIn, ones.IrType());
  Value c;
  b.Incore([&] {
    Value ta = b.Load(pa, Zeros(2), Type::Tile(2, 4, DType::kBF16), 1000.0);
    Value tb = b.Load(pb, Zeros(2), Type::Tile(4, 1, DType::kBF16));
    c = b.Op(OpCode::kTileMatmul, {ta, tb});
  });
  ir::Func f = b.Finish();
  Env env;
  RunInEnv(f, {a.View(), ones.View()}, env);
  const Tile& t = TileOf(env, c);
  EXPECT_EQ(t.dtype, DType::kF32);
  EXPECT_EQ(t.valid_rows, 1);
  EXPECT_EQ(t.valid_cols, 1);
  EXPECT_EQ(t.f[0], 4.0f);
  EXPECT_EQ(t.f[1], 2000.0f);  // padding row: pad values over K_valid = 2
}

TEST(TileMatmul, AccumulatesInOrderWithoutFma) {
  // a = [1 + 2^-12, -(1 + 2^-12)], b = [1 + 2^-12, 1 + 2^-12]^T. Each exact product is
  // +-(1 + 2^-11 + 2^-24), which rounds (tie to even) to +-(1 + 2^-11); the sum is 0. A fused
  // multiply-add in the second step would keep the -2^-24.
  const float e = 1.0f + 0x1p-12f;
  Builder b("t");
  Buf a = Buf::F32({1, 2}, {e, -e});
  Buf bm = Buf::F32({2, 1}, {e, e});
  Value pa = b.Param("a", Direction::kIn, a.IrType());
  Value pb = b.Param("b", Direction::kIn, bm.IrType());
  Value c;
  b.Incore([&] {
    c = b.Op(OpCode::kTileMatmul, {b.Load(pa, Zeros(2), Type::Tile(1, 2, DType::kF32)),
                                   b.Load(pb, Zeros(2), Type::Tile(2, 1, DType::kF32))});
  });
  ir::Func f = b.Finish();
  Env env;
  RunInEnv(f, {a.View(), bm.View()}, env);
  EXPECT_EQ(Bits(TileOf(env, c).f[0]), 0u);
}

}  // namespace
}  // namespace ptox::interp::testing
