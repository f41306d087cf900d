// A tile.load feeding only matmuls need not be copied into a tile: the matmul packs (or streams)
// its operands anyway, so the copy would move every element twice — for GEMV-like products,
// where each weight is used once, it halved the bandwidth.
#include "analysis/matmul_operands.h"

#include <algorithm>
#include <vector>

#include "analysis/uses.h"

namespace ptox::analysis {
namespace {

bool IsMatmulOperand(const UseSite& u) {
  if (u.stmt->kind() != ir::StmtKind::kOp) return false;
  const ir::OpFamily f = ir::FamilyOf(ir::As<ir::OpStmt>(*u.stmt).op());
  return (f == ir::OpFamily::kMatmul && (u.operand == 0 || u.operand == 1)) ||
         (f == ir::OpFamily::kMatmulAcc && (u.operand == 1 || u.operand == 2));
}

bool HasStore(const ir::Stmt& s) {
  auto any = [](const ir::Block& b) {
    return std::any_of(b.begin(), b.end(), [](const ir::StmtRef& c) { return HasStore(*c); });
  };
  switch (s.kind()) {
    case ir::StmtKind::kOp: return ir::FamilyOf(ir::As<ir::OpStmt>(s).op()) == ir::OpFamily::kStore;
    case ir::StmtKind::kFor: return any(ir::As<ir::ForStmt>(s).body());
    case ir::StmtKind::kIf:
      return any(ir::As<ir::IfStmt>(s).then_body()) || any(ir::As<ir::IfStmt>(s).else_body());
    case ir::StmtKind::kIncore: return any(ir::As<ir::IncoreStmt>(s).body());
    case ir::StmtKind::kYield: return false;
  }
  return false;
}

void Plan(const ir::Block& block, const UseMap& uses,
          std::unordered_set<const ir::ValueNode*>& out) {
  for (size_t p = 0; p < block.size(); ++p) {
    const ir::Stmt& s = *block[p];
    if (s.kind() == ir::StmtKind::kFor) Plan(ir::As<ir::ForStmt>(s).body(), uses, out);
    if (s.kind() == ir::StmtKind::kIf) {
      Plan(ir::As<ir::IfStmt>(s).then_body(), uses, out);
      Plan(ir::As<ir::IfStmt>(s).else_body(), uses, out);
    }
    if (s.kind() != ir::StmtKind::kOp) continue;
    const auto& op = ir::As<ir::OpStmt>(s);
    if (ir::FamilyOf(op.op()) != ir::OpFamily::kLoad || !IsFloat(op.result()->type.dtype()))
      continue;
    const auto it = uses.find(op.result().get());
    if (it == uses.end() || it->second.empty()) continue;
    size_t last = p;
    bool ok = true;
    for (const UseSite& u : it->second) {
      ok = IsMatmulOperand(u) && u.block == &block;
      if (!ok) break;
      for (size_t q = p + 1; q < block.size(); ++q)
        if (block[q].get() == u.stmt) last = std::max(last, q);
    }
    for (size_t q = p + 1; ok && q < last; ++q) ok = !HasStore(*block[q]);
    if (ok) out.insert(op.result().get());
  }
}

}  // namespace

std::unordered_set<const ir::ValueNode*> InPlaceMatmulOperands(const ir::Block& body) {
  UseMap uses;
  CollectUses(body, uses);
  std::unordered_set<const ir::ValueNode*> out;
  Plan(body, uses, out);
  return out;
}

}  // namespace ptox::analysis
