// Reductions, argmax and row / col expand over valid regions: NaN, all-negative rows, empty
// reductions, integer overflow.
#include "tests/unit/interp/helpers.h"

namespace ptox::interp::testing {
namespace {

// Loads `in` (R x C f32) as a tile of `tile_rows x tile_cols` at [0, 0] and applies `op`;
// returns the result tile.
Tile ReduceTile(OpCode op, Buf in, int64_t tile_rows, int64_t tile_cols, double pad = 0.0) {
  Builder b("t");
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value r;
  b.Incore([&] {
    Value t = b.Load(x, Zeros(2), Type::Tile(tile_rows, tile_cols, in.dtype), pad);
    r = b.Op(op, {t});
  });
  ir::Func f = b.Finish();
  Env env;
  RunInEnv(f, {in.View()}, env);
  return TileOf(env, r);
}

TEST(TileRowReduce, SumMaxMinOverValidColumnsOnly) {
  // 2x3 data in a 4x4 tile padded with 100: padding must not enter the results.
  Buf in = Buf::F32({2, 3}, {1, -2, 3.5f, -4, -5, -6});
  Tile s = ReduceTile(OpCode::kTileRowSum, in, 4, 4, 100.0);
  EXPECT_EQ(s.rows, 4);
  EXPECT_EQ(s.cols, 1);
  EXPECT_EQ(s.valid_rows, 2);
  EXPECT_EQ(s.valid_cols, 1);
  EXPECT_EQ(s.f, (std::vector<float>{2.5f, -15, 0, 0}));  // invalid rows are 0
  Tile mx = ReduceTile(OpCode::kTileRowMax, in, 4, 4, 100.0);
  EXPECT_EQ(mx.f[0], 3.5f);
  EXPECT_EQ(mx.f[1], -4.0f);  // all-negative row
  Tile mn = ReduceTile(OpCode::kTileRowMin, in, 4, 4, -100.0);
  EXPECT_EQ(mn.f[0], -2.0f);
  EXPECT_EQ(mn.f[1], -6.0f);
}

TEST(TileRowReduce, NaNPropagatesAndSignedZeros) {
  Buf in = Buf::F32({3, 2}, {1, kNaN, -0.0f, 0.0f, -kInf, -kInf});
  Tile mx = ReduceTile(OpCode::kTileRowMax, in, 3, 2);
  EXPECT_TRUE(std::isnan(mx.f[0]));
  EXPECT_EQ(Bits(mx.f[1]), Bits(0.0f));
  EXPECT_EQ(mx.f[2], -kInf);
  Tile mn = ReduceTile(OpCode::kTileRowMin, in, 3, 2);
  EXPECT_TRUE(std::isnan(mn.f[0]));
  EXPECT_EQ(Bits(mn.f[1]), Bits(-0.0f));
  Tile s = ReduceTile(OpCode::kTileRowSum, in, 3, 2);
  EXPECT_TRUE(std::isnan(s.f[0]));
  EXPECT_EQ(Bits(s.f[1]), Bits(0.0f));  // +0 + -0 + +0
  EXPECT_EQ(s.f[2], -kInf);
}

TEST(TileRowReduce, SumIsSequentialInF32) {
  // 1e8 + 1 + ... (4 ones) - 1e8: sequential f32 adds lose every 1 -> 0 (a pairwise or double
  // sum would give 4). This pins the reference order.
  Buf in = Buf::F32({1, 6}, {1e8f, 1, 1, 1, 1, -1e8f});
  EXPECT_EQ(ReduceTile(OpCode::kTileRowSum, in, 1, 6).f[0], 0.0f);
}

TEST(TileRowReduce, EmptyRows) {
  // Valid columns = 0 (a 2x0 tensor cannot be loaded, so slice a tile past its valid region).
  Builder b("t");
  Buf in = Buf::F32({2, 2}, {1, 2, 3, 4});
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value sum, mx;
  b.Incore([&] {
    Value t = b.Load(x, Zeros(2), Type::Tile(2, 4, DType::kF32), 7.0);
    Value e = b.Op(OpCode::kTileSlice, {t, Operand::Int(0), Operand::Int(2)}, {},
                   Type::Tile(2, 2, DType::kF32));
    sum = b.Op(OpCode::kTileRowSum, {e});
    mx = b.Op(OpCode::kTileColMax, {e});  // no valid columns: nothing to reduce, no error
  });
  ir::Func f = b.Finish();
  Env env;
  RunInEnv(f, {in.View()}, env);
  EXPECT_EQ(TileOf(env, sum).f, (std::vector<float>{0, 0}));
  EXPECT_EQ(TileOf(env, sum).valid_rows, 2);
  EXPECT_EQ(TileOf(env, mx).valid_cols, 0);

  Builder b2("t");
  Value x2 = b2.Param("x", Direction::kIn, in.IrType());
  b2.Incore([&] {
    Value t = b2.Load(x2, Zeros(2), Type::Tile(2, 4, DType::kF32));
    Value e = b2.Op(OpCode::kTileSlice, {t, Operand::Int(0), Operand::Int(2)}, {},
                    Type::Tile(2, 2, DType::kF32));
    b2.Op(OpCode::kTileRowMax, {e});
  });
  ir::Func f2 = b2.Finish();
  ExpectRuntimeError([&] { interp::Run(f2, {in.View()}); }, "tile.row_max: max of an empty row 0");
}

TEST(TileColReduce, OverValidRows) {
  Buf in = Buf::F32({2, 3}, {1, -2, 3, -4, 5, kNaN});
  Tile s = ReduceTile(OpCode::kTileColSum, in, 4, 4, 100.0);
  EXPECT_EQ(s.rows, 1);
  EXPECT_EQ(s.valid_cols, 3);
  EXPECT_EQ(s.f[0], -3.0f);
  EXPECT_EQ(s.f[1], 3.0f);
  EXPECT_TRUE(std::isnan(s.f[2]));
  EXPECT_EQ(s.f[3], 0.0f);
  Tile mx = ReduceTile(OpCode::kTileColMax, in, 2, 3);
  EXPECT_EQ(mx.f[0], 1.0f);
  EXPECT_EQ(mx.f[1], 5.0f);
  Tile mn = ReduceTile(OpCode::kTileColMin, in, 2, 3);
  EXPECT_EQ(mn.f[0], -4.0f);
  EXPECT_EQ(mn.f[1], -2.0f);
}

TEST(TileRowReduce, IntegerSumOverflowIsAnError) {
  Buf ok = Buf::Of<int32_t>(DType::kI32, {1, 3}, {INT32_MAX, 1, -1});  // fits at the end
  EXPECT_EQ(ReduceTile(OpCode::kTileRowSum, ok, 1, 3).i[0], INT32_MAX);
  Buf bad = Buf::Of<int32_t>(DType::kI32, {1, 2}, {INT32_MAX, 1});
  ExpectRuntimeError([&] { ReduceTile(OpCode::kTileRowSum, bad, 1, 2); },
                     "result 2147483648 of line 0 does not fit in i32");
}

TEST(TileRowArgmax, FirstMaximumNaNWinsValidColumnsOnly) {
  Buf in = Buf::F32({4, 4}, {1, 3, 3, 2,                  // first of equal maxima
                             -5, -1, -1, -7,              // all negative
                             0, kNaN, kNaN, kInf,         // first NaN wins
                             -0.0f, 0.0f, -0.0f, 0.0f});  // +0 beats -0
  Tile a = ReduceTile(OpCode::kTileRowArgmax, in, 4, 4);
  EXPECT_EQ(a.dtype, DType::kI32);
  EXPECT_EQ(a.i, (std::vector<int64_t>{1, 1, 1, 1}));
  // Padding (100) beyond the valid 3 columns is ignored.
  Buf in2 = Buf::F32({1, 3}, {1, 2, 0});
  EXPECT_EQ(ReduceTile(OpCode::kTileRowArgmax, in2, 1, 4, 100.0).i[0], 1);
}

TEST(TileExpand, RowAndColBroadcasts) {
  Builder b("t");
  Buf in = Buf::F32({2, 3}, {1, 2, 3, 4, 5, 6});
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value rsub, cdiv;
  b.Incore([&] {
    Value t = b.Load(x, Zeros(2), Type::Tile(2, 3, DType::kF32));
    Value rmax = b.Op(OpCode::kTileRowMax, {t});        // [3, 6]
    rsub = b.Op(OpCode::kTileRowExpandSub, {t, rmax});  // softmax-style shift
    Value csum = b.Op(OpCode::kTileColSum, {t});        // [5, 7, 9]
    cdiv = b.Op(OpCode::kTileColExpandDiv, {t, csum});
  });
  ir::Func f = b.Finish();
  Env env;
  RunInEnv(f, {in.View()}, env);
  EXPECT_EQ(TileOf(env, rsub).f, (std::vector<float>{-2, -1, 0, -2, -1, 0}));
  EXPECT_EQ(TileOf(env, cdiv).f,
            (std::vector<float>{1.0f / 5, 2.0f / 7, 3.0f / 9, 4.0f / 5, 5.0f / 7, 6.0f / 9}));
}

TEST(TileExpand, ValidRegionComesFromBothOperands) {
  // a: 3x2 tensor in a 4x2 tile (valid 3x2); v: row_sum of a 2x2 load (valid 2x1, padded).
  Builder b("t");
  Buf in = Buf::F32({3, 2}, {1, 2, 3, 4, 5, 6});
  Value x = b.Param("x", Direction::kIn, in.IrType());
  Value r;
  b.Incore([&] {
    Value a = b.Load(x, Zeros(2), Type::Tile(4, 2, DType::kF32));
    Value v = b.Op(OpCode::kTileRowSum,
                   {b.Load(x, {Operand::Int(1), Operand::Int(0)}, Type::Tile(4, 2, DType::kF32))});
    r = b.Op(OpCode::kTileRowExpandMul, {a, v});
  });
  ir::Func f = b.Finish();
  Env env;
  RunInEnv(f, {in.View()}, env);
  const Tile& t = TileOf(env, r);
  EXPECT_EQ(t.valid_rows, 2);
  EXPECT_EQ(t.valid_cols, 2);
  EXPECT_EQ(t.f, (std::vector<float>{7, 14, 33, 44, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace ptox::interp::testing
