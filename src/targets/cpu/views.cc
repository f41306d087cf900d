// Matmul operands read in place: a tile.load whose every use is a matmul operand becomes a
// pc::View of the tensor window instead of a tile copy. The matmul packs (or streams) its operands
// anyway, so the copy would move every element twice: for GEMV-like products, where each weight
// is used once, it halved the bandwidth. A view reads the tensor when the matmul runs, not at the
// load, so the load and every use must sit in one block with no tile.store in between (a store
// to the same tensor, or to one aliasing it, would otherwise be seen).
#include "targets/cpu/emitter.h"

namespace ptox::targets::cpu {
namespace {

bool IsMatmulOperand(const UseSite& u) {
  if (u.stmt->kind() != ir::StmtKind::kOp) return false;
  const ir::OpFamily f = ir::FamilyOf(ir::As<ir::OpStmt>(*u.stmt).op());
  return (f == ir::OpFamily::kMatmul && (u.operand == 0 || u.operand == 1)) ||
         (f == ir::OpFamily::kMatmulAcc && (u.operand == 1 || u.operand == 2));
}

bool HasStore(const ir::Stmt& s) {
  switch (s.kind()) {
    case ir::StmtKind::kOp:
      return ir::FamilyOf(ir::As<ir::OpStmt>(s).op()) == ir::OpFamily::kStore;
    case ir::StmtKind::kFor:
      for (const ir::StmtRef& c : ir::As<ir::ForStmt>(s).body())
        if (HasStore(*c)) return true;
      return false;
    case ir::StmtKind::kIf: {
      const auto& i = ir::As<ir::IfStmt>(s);
      for (const ir::Block* b : {&i.then_body(), &i.else_body()})
        for (const ir::StmtRef& c : *b)
          if (HasStore(*c)) return true;
      return false;
    }
    case ir::StmtKind::kIncore:
      for (const ir::StmtRef& c : ir::As<ir::IncoreStmt>(s).body())
        if (HasStore(*c)) return true;
      return false;
    case ir::StmtKind::kYield: return false;
  }
  return false;
}

}  // namespace

void Emitter::PlanViews(const ir::Block& block) {
  for (size_t p = 0; p < block.size(); ++p) {
    const ir::Stmt& s = *block[p];
    if (s.kind() == ir::StmtKind::kFor) PlanViews(ir::As<ir::ForStmt>(s).body());
    if (s.kind() == ir::StmtKind::kIf) {
      PlanViews(ir::As<ir::IfStmt>(s).then_body());
      PlanViews(ir::As<ir::IfStmt>(s).else_body());
    }
    if (s.kind() != ir::StmtKind::kOp) continue;
    const auto& op = ir::As<ir::OpStmt>(s);
    if (ir::FamilyOf(op.op()) != ir::OpFamily::kLoad || !IsFloat(op.result()->type.dtype()))
      continue;
    const auto uses = uses_.find(op.result().get());
    if (uses == uses_.end() || uses->second.empty()) continue;
    size_t last = p;
    bool ok = true;
    for (const UseSite& u : uses->second) {
      ok = IsMatmulOperand(u) && u.block == &block;
      if (!ok) break;
      for (size_t q = p + 1; q < block.size(); ++q)
        if (block[q].get() == u.stmt) last = std::max(last, q);
    }
    for (size_t q = p + 1; ok && q < last; ++q) ok = !HasStore(*block[q]);
    if (ok) views_.insert(op.result().get());
  }
}

}  // namespace ptox::targets::cpu
