// Use lists and producers of SSA values (see uses.h).
#include "analysis/uses.h"

#include "ir/walk.h"

namespace ptox::analysis {

void CollectUses(const ir::Block& block, UseMap& uses, ProducerMap* producers) {
  for (const ir::StmtRef& sp : block) {
    const ir::Stmt* s = sp.get();
    // An op's uses record the operand's position; the other statements' are -1.
    int pos = 0;
    ir::ForEachOperand(*s, [&](const ir::Operand& o) {
      const int at = s->kind() == ir::StmtKind::kOp ? pos++ : -1;
      if (o.is_value()) uses[o.value().get()].push_back({s, at, &block});
    });
    if (producers && s->kind() == ir::StmtKind::kOp)
      for (const ir::Value& r : ir::As<ir::OpStmt>(*s).results())
        (*producers)[r.get()] = &ir::As<ir::OpStmt>(*s);
    ir::ForEachBody(*s, [&](const ir::Block& b) { CollectUses(b, uses, producers); });
  }
}

}  // namespace ptox::analysis
