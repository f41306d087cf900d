// fold-constants and dce on builder programs: exact before / after IR text.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass.h"
#include "passes/pipeline.h"

namespace ptox::passes {
namespace {

using ir::Operand;

ir::Module One(ir::Func f) {
  ir::Module m;
  m.funcs.push_back(std::make_shared<const ir::Func>(std::move(f)));
  return m;
}

// %n = tensor.dim of a static dim, index math on it, used as a loop bound.
ir::Module StaticDimLoop() {
  ir::Builder b("f");
  ir::Value a = b.Param("a", ir::Direction::kInOut,
                        ir::Type::Tensor({ir::Dim::Static(64), ir::Dim::Static(8)}, DType::kF32));
  ir::Value n = b.Op(ir::OpCode::kTensorDim, {a, Operand::Int(1)}, {}, {}, "n");
  ir::Value half = b.Op(ir::OpCode::kArithDiv, {n, Operand::Int(2)}, {}, {}, "half");
  b.Op(ir::OpCode::kArithMul, {half, Operand::Int(3)}, {}, {}, "unused");
  b.For(Operand::Int(0), Operand::Int(64), half, [&](ir::Value i) {
    b.Incore([&] {
      ir::Value t = b.Load(a, {i, Operand::Int(0)}, ir::Type::Tile(4, 8, DType::kF32));
      b.Op(ir::OpCode::kTileExp, {t}, {}, {}, "dead");
      b.Store(t, a, {i, Operand::Int(0)});
    });
  });
  return One(b.Finish());
}

TEST(FoldConstants, StaticDimAndIndexMathBecomeImmediates) {
  ir::Module m = FoldConstants(StaticDimLoop(), {});
  ir::Verify(m);
  std::string text = ir::Print(m);
  EXPECT_EQ(text.find("tensor.dim"), std::string::npos) << text;
  EXPECT_EQ(text.find("arith.div"), std::string::npos) << text;
  EXPECT_NE(text.find("for %i = 0 to 64 step 4 {"), std::string::npos) << text;
}

TEST(FoldConstants, DivisionByZeroIsLeftForRunTime) {
  ir::Builder b("f");
  b.Op(ir::OpCode::kArithDiv, {Operand::Int(1), Operand::Int(0)}, {}, {}, "q");
  ir::Module m = FoldConstants(One(b.Finish()), {});
  EXPECT_NE(ir::Print(m).find("arith.div 1, 0"), std::string::npos) << ir::Print(m);
}

TEST(FoldConstants, FloorDivisionOfNegatives) {
  ir::Builder b("f");
  ir::Value a = b.Param("a", ir::Direction::kInOut, ir::Type::Tensor({ir::Dim::Static(8)}, DType::kF32));
  ir::Value q = b.Op(ir::OpCode::kArithDiv, {Operand::Int(-7), Operand::Int(2)});
  ir::Value r = b.Op(ir::OpCode::kArithRem, {Operand::Int(-7), Operand::Int(2)});
  ir::Value s = b.Op(ir::OpCode::kArithAdd, {q, r});  // -4 + 1 = -3
  b.For(s, Operand::Int(0), Operand::Int(1), [&](ir::Value) {
    b.Incore([&] { b.Store(b.Load(a, {Operand::Int(0)}, ir::Type::Tile(1, 8, DType::kF32)), a, {Operand::Int(0)}); });
  });
  ir::Module m = FoldConstants(One(b.Finish()), {});
  EXPECT_NE(ir::Print(m).find("for %i = -3 to 0 step 1"), std::string::npos) << ir::Print(m);
}

TEST(EliminateDeadCode, RemovesUnusedPureOpsButKeepsStores) {
  ir::Module m = EliminateDeadCode(FoldConstants(StaticDimLoop(), {}), {});
  ir::Verify(m);
  std::string text = ir::Print(m);
  EXPECT_EQ(text.find("tile.exp"), std::string::npos) << text;
  EXPECT_EQ(text.find("arith.mul"), std::string::npos) << text;
  EXPECT_NE(text.find("tile.store"), std::string::npos) << text;
  EXPECT_NE(text.find("tile.load"), std::string::npos) << text;
}

TEST(EliminateDeadCode, EmptyScopesDisappear) {
  ir::Builder b("f");
  ir::Value a = b.Param("a", ir::Direction::kIn, ir::Type::Tensor({ir::Dim::Static(8)}, DType::kF32));
  b.For(Operand::Int(0), Operand::Int(4), Operand::Int(1), [&](ir::Value) {
    b.Incore([&] { b.Op(ir::OpCode::kTileExp, {b.Load(a, {Operand::Int(0)}, ir::Type::Tile(1, 8, DType::kF32))}); });
  });
  ir::Module m = EliminateDeadCode(One(b.Finish()), {});
  EXPECT_EQ(ir::Print(m), "func @f(%a: in tensor<8xf32>) {\n}\n");
}

TEST(Pipeline, UnknownPassNamesTheKnownOnes) {
  try {
    RunPipeline(StaticDimLoop(), {"fold-constants", "vectorize-everything"});
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown pass 'vectorize-everything' (known: "), std::string::npos) << msg;
    for (const PassInfo& p : AllPasses())
      EXPECT_NE(msg.find(std::string(p.name)), std::string::npos) << p.name << ": " << msg;
  }
}

TEST(Pipeline, CallsBackAfterEachPass) {
  std::vector<std::string> seen;
  PipelineOptions opts;
  opts.after_pass = [&](std::string_view p, const ir::Module&) { seen.emplace_back(p); };
  RunPipeline(StaticDimLoop(), DefaultPipeline(), opts);
  EXPECT_EQ(seen, DefaultPipeline());
}

}  // namespace
}  // namespace ptox::passes
