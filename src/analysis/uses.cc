#include "analysis/uses.h"

namespace ptox::analysis {

void CollectUses(const ir::Block& block, UseMap& uses, ProducerMap* producers) {
  auto use = [&](const ir::Operand& o, const ir::Stmt* s, int pos) {
    if (o.is_value()) uses[o.value().get()].push_back({s, pos, &block});
  };
  for (const ir::StmtRef& sp : block) {
    const ir::Stmt* s = sp.get();
    switch (s->kind()) {
      case ir::StmtKind::kOp: {
        const auto& op = ir::As<ir::OpStmt>(*s);
        for (size_t i = 0; i < op.args().size(); ++i) use(op.args()[i], s, static_cast<int>(i));
        if (producers)
          for (const ir::Value& r : op.results()) (*producers)[r.get()] = &op;
        break;
      }
      case ir::StmtKind::kFor: {
        const auto& f = ir::As<ir::ForStmt>(*s);
        use(f.lb(), s, -1), use(f.ub(), s, -1), use(f.step(), s, -1);
        for (const auto& i : f.inits()) use(i, s, -1);
        CollectUses(f.body(), uses, producers);
        break;
      }
      case ir::StmtKind::kIf: {
        const auto& i = ir::As<ir::IfStmt>(*s);
        use(i.cond(), s, -1);
        CollectUses(i.then_body(), uses, producers);
        CollectUses(i.else_body(), uses, producers);
        break;
      }
      case ir::StmtKind::kIncore:
        CollectUses(ir::As<ir::IncoreStmt>(*s).body(), uses, producers);
        break;
      case ir::StmtKind::kYield:
        for (const auto& v : ir::As<ir::YieldStmt>(*s).values()) use(v, s, -1);
        break;
    }
  }
}

}  // namespace ptox::analysis
