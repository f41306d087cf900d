// Builder + printer + verifier: programs built in C++ print as expected and verify.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace ptox::ir {
namespace {

Func TileAdd() {
  Builder b("tile_add");
  Type t = Type::Tensor({Dim::Static(128), Dim::Static(128)}, DType::kF32);
  Value a = b.Param("a", Direction::kIn, t);
  Value bb = b.Param("b", Direction::kIn, t);
  Value c = b.Param("c", Direction::kOut, t);
  b.Incore([&] {
    Type tile = Type::Tile(128, 128, DType::kF32);
    Value ta = b.Load(a, {Operand::Int(0), Operand::Int(0)}, tile);
    Value tb = b.Load(bb, {Operand::Int(0), Operand::Int(0)}, tile);
    Value tc = b.Op(OpCode::kTileAdd, {ta, tb}, {}, {}, "tc");
    b.Store(tc, c, {Operand::Int(0), Operand::Int(0)});
  });
  return b.Finish();
}

TEST(Builder, TileAddPrints) {
  Func f = TileAdd();
  EXPECT_EQ(Print(f),
            "func @tile_add(%a: in tensor<128x128xf32>, %b: in tensor<128x128xf32>, %c: out "
            "tensor<128x128xf32>) {\n"
            "  incore {\n"
            "    %0 = tile.load %a[0, 0] : tile<128x128xf32>\n"
            "    %1 = tile.load %b[0, 0] : tile<128x128xf32>\n"
            "    %tc = tile.add %0, %1\n"
            "    tile.store %tc, %c[0, 0]\n"
            "  }\n"
            "}\n");
  EXPECT_NO_THROW(Verify(f));
}

TEST(Builder, TypeErrorThrowsAtTheCall) {
  Builder b("bad");
  Value a = b.Param("a", Direction::kIn, Type::Tensor({Dim::Static(8)}, DType::kF32));
  EXPECT_THROW(b.Op(OpCode::kTileExp, {a}), Error);
}

TEST(Verifier, StoreIntoInParameterIsAnError) {
  Builder b("bad");
  Type t = Type::Tensor({Dim::Static(4), Dim::Static(4)}, DType::kF32);
  Value a = b.Param("a", Direction::kIn, t);
  b.Incore([&] {
    Value x = b.Load(a, {Operand::Int(0), Operand::Int(0)}, Type::Tile(4, 4, DType::kF32));
    b.Store(x, a, {Operand::Int(0), Operand::Int(0)});
  });
  Func f = b.Finish();
  try {
    Verify(f);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'in' parameter"), std::string::npos) << e.what();
  }
}

TEST(Verifier, ConstantOffsetPastStaticDimIsAnError) {
  Builder b("oob");
  Type t = Type::Tensor({Dim::Static(4), Dim::Static(4)}, DType::kF32);
  Value a = b.Param("a", Direction::kIn, t);
  b.Incore([&] { b.Load(a, {Operand::Int(4), Operand::Int(0)}, Type::Tile(4, 4, DType::kF32)); });
  Func f = b.Finish();
  EXPECT_THROW(Verify(f), Error);
}

}  // namespace
}  // namespace ptox::ir

namespace ptox::ir {
namespace {

// A while built in C++: the condition block closes with `condition`, the body with its yield.
TEST(Builder, WhilePrintsAndVerifies) {
  Builder b("halve");
  Value n = b.Param("n", Direction::kIn, Type::Scalar(DType::kIndex));
  Value x = b.Param("x", Direction::kIn, Type::Scalar(DType::kF32));
  std::vector<Value> r = b.While(
      {Operand::Int(0), x},
      [&](const std::vector<Value>& c) { return Operand(b.Op(OpCode::kArithLt, {c[0], n})); },
      [&](const std::vector<Value>& c) {
        return std::vector<Operand>{b.Op(OpCode::kArithAdd, {c[0], Operand::Int(1)}),
                                    b.Op(OpCode::kArithMul, {c[1], Operand::Float(0.5)})};
      });
  ASSERT_EQ(r.size(), 2u);
  Func f = b.Finish();
  EXPECT_EQ(Print(f),
            "func @halve(%n: in index, %x: in f32) {\n"
            "  %0, %1 = while iter(%acc = 0, %acc_0 = %x) {\n"
            "    %2 = arith.lt %acc, %n\n"
            "    condition %2\n"
            "  } do {\n"
            "    %3 = arith.add %acc, 1\n"
            "    %4 = arith.mul %acc_0, 0.5\n"
            "    yield %3, %4\n"
            "  }\n"
            "}\n");
  EXPECT_NO_THROW(Verify(f));
}

}  // namespace
}  // namespace ptox::ir
