// A tile.load feeding only matmuls need not be copied into a tile: the matmul packs (or streams)
// its operands anyway, so the copy would move every element twice — for GEMV-like products,
// where each weight is used once, it halved the bandwidth.
#include "analysis/matmul_operands.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace ptox::analysis {
namespace {

struct Use {
  const ir::Stmt* stmt;
  int operand;  // -1: not an op operand (loop bounds and inits, if conditions, yields)
  const ir::Block* block;
};
using Uses = std::unordered_map<const ir::ValueNode*, std::vector<Use>>;

void CollectUses(const ir::Block& block, Uses& uses) {
  auto use = [&](const ir::Operand& o, const ir::Stmt* s, int pos) {
    if (o.is_value()) uses[o.value().get()].push_back({s, pos, &block});
  };
  for (const ir::StmtRef& sp : block) {
    const ir::Stmt* s = sp.get();
    switch (s->kind()) {
      case ir::StmtKind::kOp: {
        const auto& args = ir::As<ir::OpStmt>(*s).args();
        for (size_t i = 0; i < args.size(); ++i) use(args[i], s, static_cast<int>(i));
        break;
      }
      case ir::StmtKind::kFor: {
        const auto& f = ir::As<ir::ForStmt>(*s);
        use(f.lb(), s, -1), use(f.ub(), s, -1), use(f.step(), s, -1);
        for (const auto& i : f.inits()) use(i, s, -1);
        CollectUses(f.body(), uses);
        break;
      }
      case ir::StmtKind::kIf: {
        const auto& i = ir::As<ir::IfStmt>(*s);
        use(i.cond(), s, -1);
        CollectUses(i.then_body(), uses);
        CollectUses(i.else_body(), uses);
        break;
      }
      case ir::StmtKind::kYield:
        for (const auto& v : ir::As<ir::YieldStmt>(*s).values()) use(v, s, -1);
        break;
      case ir::StmtKind::kIncore: CollectUses(ir::As<ir::IncoreStmt>(*s).body(), uses); break;
    }
  }
}

bool IsMatmulOperand(const Use& u) {
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
    case ir::StmtKind::kOp:
      return ir::FamilyOf(ir::As<ir::OpStmt>(s).op()) == ir::OpFamily::kStore;
    case ir::StmtKind::kFor: return any(ir::As<ir::ForStmt>(s).body());
    case ir::StmtKind::kIf:
      return any(ir::As<ir::IfStmt>(s).then_body()) || any(ir::As<ir::IfStmt>(s).else_body());
    case ir::StmtKind::kIncore: return any(ir::As<ir::IncoreStmt>(s).body());
    case ir::StmtKind::kYield: return false;
  }
  return false;
}

void Plan(const ir::Block& block, const Uses& uses,
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
    for (const Use& u : it->second) {
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
  Uses uses;
  CollectUses(body, uses);
  std::unordered_set<const ir::ValueNode*> out;
  Plan(body, uses, out);
  return out;
}

}  // namespace ptox::analysis
