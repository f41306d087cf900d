// The op facts of src/ops/ops.def and op_attrs.def: every attribute an op declares is accepted
// with a value of its kind, anything else is a clear error naming the op (and listing what it
// takes), and the cost classes fuse-tiles weighs are the ones the table declares.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "ops/type_rules.h"
#include "support/error.h"

namespace ptox::ir {
namespace {

constexpr OpCode kAllOps[] = {
#define PTOX_OP(e, ...) OpCode::k##e,
#include "ops/ops.def"
#undef PTOX_OP
};

// A value of `spec`'s kind that it accepts (a string attribute's first listed value).
AttrValue Accepted(const AttrSpec& spec) {
  switch (spec.kind) {
    case AttrKind::kBool: return true;
    case AttrKind::kInt: return int64_t{0};
    case AttrKind::kFloat: return 0.5;
    case AttrKind::kString: return std::string(spec.values ? spec.values()[0] : "text");
  }
  return false;
}

// A value of another kind than `spec`'s.
AttrValue OtherKind(const AttrSpec& spec) {
  return spec.kind == AttrKind::kBool ? AttrValue(int64_t{1}) : AttrValue(true);
}

// The message CheckOpAttrs throws for `attrs` on `op` ("" when it accepts them).
std::string AttrError(OpCode op, const Attrs& attrs) {
  try {
    CheckOpAttrs(op, attrs, Span{"t.pto", 3, 5});
  } catch (const ptox::Error& e) {
    return e.what();
  }
  return "";
}

TEST(OpAttrs, EveryDeclaredAttributeIsAcceptedAndEveryOtherRejected) {
  for (OpCode op : kAllOps) {
    SCOPED_TRACE(std::string(OpName(op)));
    const std::string prefix = "t.pto:3:5: error: " + std::string(OpName(op)) + " ";
    Attrs all;
    for (const AttrSpec& a : OpAttrs(op)) {
      const std::string name(a.name);
      EXPECT_EQ(FindAttr(op, name), &a);
      EXPECT_EQ(AttrError(op, {{name, Accepted(a)}}), "");
      all[name] = Accepted(a);
      // A value of another kind: the error names the op, the attribute and the kind it takes.
      const std::string kind = AttrError(op, {{name, OtherKind(a)}});
      EXPECT_EQ(kind.rfind(prefix + "attribute '" + name + "' must be a", 0), 0u) << kind;
    }
    EXPECT_EQ(AttrError(op, all), "");
    // An attribute the op does not declare: the error lists the ones it does.
    const std::string bogus = AttrError(op, {{"bogus", true}});
    EXPECT_EQ(bogus.rfind(prefix + "does not take attribute 'bogus'; it takes ", 0), 0u) << bogus;
    for (const AttrSpec& a : OpAttrs(op)) {
      const std::string listed =
          std::string(a.name) + " (" + std::string(AttrKindName(a.kind)) + ")";
      EXPECT_NE(bogus.find(listed), std::string::npos) << bogus;
    }
  }
}

TEST(OpAttrs, MessagesListWhatTheOpTakes) {
  EXPECT_EQ(AttrError(OpCode::kTileLoad, {{"padding", 0.0}}),
            "t.pto:3:5: error: tile.load does not take attribute 'padding'; it takes pad (float), "
            "fused (bool)");
  EXPECT_EQ(AttrError(OpCode::kTileRowSum, {{"fused", true}}),
            "t.pto:3:5: error: tile.row_sum does not take attribute 'fused'; it takes none");
  EXPECT_EQ(AttrError(OpCode::kTensorSum, {{"axis", 1.0}}),
            "t.pto:3:5: error: tensor.sum attribute 'axis' must be an int, got a float");
  EXPECT_EQ(AttrError(OpCode::kTensorAllreduce, {{"op", std::string("min")}}),
            "t.pto:3:5: error: tensor.allreduce attribute 'op' must be one of \"sum\", \"max\", "
            "got \"min\"");
  // The quant formats are kernels/quant.h's list.
  EXPECT_EQ(AttrError(OpCode::kTensorQMatmul, {{"format", std::string("q5_0")}}),
            "t.pto:3:5: error: tensor.qmatmul attribute 'format' must be one of \"q4_0\", "
            "\"q4_1\", \"q8_0\", \"w8a8\", got \"q5_0\"");
  // arith.assert's op names the user op: any string.
  EXPECT_EQ(AttrError(OpCode::kArithAssert, {{"op", std::string("tensor.store")}}), "");
}

TEST(OpCost, TranscendentalsAreCostlyAndArithmeticCheap) {
  EXPECT_EQ(CostOf(OpCode::kTileExp), OpCost::kCostly);
  EXPECT_EQ(CostOf(OpCode::kTensorExp), OpCost::kCostly);
  EXPECT_EQ(CostOf(OpCode::kTileAdd), OpCost::kCheap);
  EXPECT_EQ(CostOf(OpCode::kTileDiv), OpCost::kModerate);
  EXPECT_EQ(CostOf(OpCode::kTileMatmul), OpCost::kNone);
}

TEST(OpCost, ElementwiseOpsOfOneScalarFunctionShareTheirCost) {
  // tile.exp and tensor.exp, tile.div and tile.row_expand_div: one function, one cost.
  std::map<std::string_view, OpCode> first;
  for (OpCode op : kAllOps) {
    const OpInfo& info = GetOpInfo(op);
    if (info.cost == OpCost::kNone || info.scalar_fn == "None") continue;
    const OpCode seen = first.try_emplace(info.scalar_fn, op).first->second;
    EXPECT_EQ(info.cost, CostOf(seen)) << info.name << " and " << OpName(seen);
  }
}

}  // namespace
}  // namespace ptox::ir
