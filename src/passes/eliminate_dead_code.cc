// dce: removes ops without side effects whose results are never used, then incore scopes and
// loops left with nothing in them.
//
// Requires: verified IR. Establishes: every remaining op either has a used result or writes
// memory (tile.store); no empty incore; no result-less for with an empty body.
// Algorithm: count uses over the whole function, then sweep blocks bottom-up removing dead ops
// (decrementing their operands' counts so chains die in the same sweep); repeat until nothing
// changes. O(statements x sweeps); sweeps are bounded by the nesting depth in practice.
#include <unordered_map>

#include "passes/pass.h"

namespace ptox::passes {
namespace {

using Uses = std::unordered_map<const ir::ValueNode*, int>;

void Count(const ir::Operand& o, Uses& uses, int delta) {
  if (o.is_value()) uses[o.value().get()] += delta;
}

void CountBlock(const ir::Block& block, Uses& uses);

void CountStmt(const ir::Stmt& s, Uses& uses, int delta) {
  switch (s.kind()) {
    case ir::StmtKind::kOp:
      for (const auto& a : ir::As<ir::OpStmt>(s).args()) Count(a, uses, delta);
      break;
    case ir::StmtKind::kFor: {
      const auto& f = ir::As<ir::ForStmt>(s);
      for (const auto* o : {&f.lb(), &f.ub(), &f.step()}) Count(*o, uses, delta);
      for (const auto& o : f.inits()) Count(o, uses, delta);
      if (delta > 0) CountBlock(f.body(), uses);
      break;
    }
    case ir::StmtKind::kIf: {
      const auto& i = ir::As<ir::IfStmt>(s);
      Count(i.cond(), uses, delta);
      if (delta > 0) CountBlock(i.then_body(), uses), CountBlock(i.else_body(), uses);
      break;
    }
    case ir::StmtKind::kIncore:
      if (delta > 0) CountBlock(ir::As<ir::IncoreStmt>(s).body(), uses);
      break;
    case ir::StmtKind::kYield:
      for (const auto& o : ir::As<ir::YieldStmt>(s).values()) Count(o, uses, delta);
      break;
  }
}

void CountBlock(const ir::Block& block, Uses& uses) {
  for (const auto& s : block) CountStmt(*s, uses, +1);
}

class Sweeper {
 public:
  explicit Sweeper(Uses& uses) : uses_(uses) {}
  bool changed = false;

  ir::Block Sweep(const ir::Block& block) {
    ir::Block out;
    for (auto it = block.rbegin(); it != block.rend(); ++it) {
      ir::StmtRef s = SweepStmt(*it);
      if (s) out.insert(out.begin(), std::move(s));
    }
    return out;
  }

 private:
  bool Dead(const ir::StmtRef& s) {
    const ir::Stmt& st = *s;
    if (st.kind() == ir::StmtKind::kOp) {
      const auto& op = ir::As<ir::OpStmt>(st);
      if (ir::HasNoResult(ir::FamilyOf(op.op()))) return false;
      return uses_[op.result().get()] == 0;
    }
    if (st.kind() == ir::StmtKind::kIncore) return ir::As<ir::IncoreStmt>(st).body().empty();
    if (st.kind() == ir::StmtKind::kFor) {
      const auto& f = ir::As<ir::ForStmt>(st);
      return f.results().empty() && f.body().empty();
    }
    return false;
  }

  ir::StmtRef SweepStmt(const ir::StmtRef& s) {
    ir::StmtRef r = s;
    if (s->kind() == ir::StmtKind::kIncore) {
      const auto& inc = ir::As<ir::IncoreStmt>(*s);
      r = inc.WithBody(Sweep(inc.body()));
    } else if (s->kind() == ir::StmtKind::kFor) {
      const auto& f = ir::As<ir::ForStmt>(*s);
      r = f.WithBody(Sweep(f.body()));
    } else if (s->kind() == ir::StmtKind::kIf) {
      const auto& i = ir::As<ir::IfStmt>(*s);
      r = ir::IfStmt::Make(i.cond(), Sweep(i.then_body()), Sweep(i.else_body()), i.results(),
                           i.span());
    }
    if (Dead(r)) {
      CountStmt(*r, uses_, -1);
      changed = true;
      return nullptr;
    }
    return r;
  }

  Uses& uses_;
};

}  // namespace

ir::Module EliminateDeadCode(const ir::Module& module, const PassContext&) {
  ir::Module out;
  for (const ir::FuncRef& f : module.funcs) {
    auto nf = std::make_shared<ir::Func>(*f);
    for (bool changed = true; changed;) {
      Uses uses;
      CountBlock(nf->body, uses);
      Sweeper sweeper(uses);
      nf->body = sweeper.Sweep(nf->body);
      changed = sweeper.changed;
    }
    out.funcs.push_back(std::move(nf));
  }
  return out;
}

}  // namespace ptox::passes
