// A tile.load feeding only matmuls need not be copied into a tile: the matmul packs (or streams)
// its operands anyway, so the copy would move every element twice — for GEMV-like products,
// where each weight is used once, it halved the bandwidth.
#include "analysis/matmul_operands.h"

#include <algorithm>
#include <vector>

#include "analysis/uses.h"
#include "ir/walk.h"

namespace ptox::analysis {
namespace {

bool IsMatmulOperand(const UseSite& u) {
  if (u.stmt->kind() != ir::StmtKind::kOp) return false;
  const ir::OpFamily f = ir::FamilyOf(ir::As<ir::OpStmt>(*u.stmt).op());
  return (f == ir::OpFamily::kMatmul && (u.operand == 0 || u.operand == 1)) ||
         (f == ir::OpFamily::kMatmulAcc && (u.operand == 1 || u.operand == 2));
}

bool IsStore(const ir::Stmt& s) {
  return s.kind() == ir::StmtKind::kOp &&
         ir::FamilyOf(ir::As<ir::OpStmt>(s).op()) == ir::OpFamily::kStore;
}

// Whether `s` is a tile.store or holds one.
bool HasStore(const ir::Stmt& s) {
  bool any = IsStore(s);
  ir::ForEachBody(s, [&](const ir::Block& b) { any = any || ir::AnyStmt(b, IsStore); });
  return any;
}

void Plan(const ir::Block& block, const UseMap& uses,
          std::unordered_set<const ir::ValueNode*>& out) {
  for (size_t p = 0; p < block.size(); ++p) {
    const ir::Stmt& s = *block[p];
    ir::ForEachBody(s, [&](const ir::Block& b) { Plan(b, uses, out); });
    if (s.kind() != ir::StmtKind::kOp) continue;
    const auto& op = ir::As<ir::OpStmt>(s);
    // Float operands, and tile.qmatmul_acc's i8 weight blocks (the only i8 matmul operand).
    if (ir::FamilyOf(op.op()) != ir::OpFamily::kLoad) continue;
    const DType dt = op.result()->type.dtype();
    if (!IsFloat(dt) && dt != DType::kI8) continue;
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
