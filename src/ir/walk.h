// Walking the statement tree: the nested blocks of a statement, every statement or op of a block
// and its nested blocks, the operands a statement reads, and rebuilding a statement with new
// nested blocks. Passes and analyses use these instead of switching on statement kinds to
// recurse (a switch stays where each kind means something different: printer, verifier,
// interpreter, codegen).
#pragma once

#include "ir/ir.h"

namespace ptox::ir {

// Calls fn(block) for each block nested directly in `s`: a for's body, an if's then and else
// arms, a while's condition block and body, an incore scope's body (none for ops and yields).
template <typename Fn>
void ForEachBody(const Stmt& s, Fn&& fn) {
  switch (s.kind()) {
    case StmtKind::kFor: fn(As<ForStmt>(s).body()); break;
    case StmtKind::kIf:
      fn(As<IfStmt>(s).then_body());
      fn(As<IfStmt>(s).else_body());
      break;
    case StmtKind::kWhile:
      fn(As<WhileStmt>(s).cond_body());
      fn(As<WhileStmt>(s).body());
      break;
    case StmtKind::kIncore: fn(As<IncoreStmt>(s).body()); break;
    case StmtKind::kOp:
    case StmtKind::kYield:
    case StmtKind::kCall: break;
  }
}

// Calls fn(stmt) for every statement of `block` and of the blocks nested in it, each statement
// before the statements nested in it.
template <typename Fn>
void ForEachStmt(const Block& block, Fn&& fn) {
  for (const StmtRef& s : block) {
    fn(*s);
    ForEachBody(*s, [&](const Block& b) { ForEachStmt(b, fn); });
  }
}

// Calls fn(op) for every op of `block` and of the blocks nested in it, in program order.
template <typename Fn>
void ForEachOp(const Block& block, Fn&& fn) {
  ForEachStmt(block, [&](const Stmt& s) {
    if (s.kind() == StmtKind::kOp) fn(As<OpStmt>(s));
  });
}

// Calls fn(value) for every value `block` and the blocks nested in it define: op results, loop
// induction variables, iter arguments and results (for and while), if results.
template <typename Fn>
void ForEachDefinition(const Block& block, Fn&& fn) {
  ForEachStmt(block, [&](const Stmt& s) {
    if (s.kind() == StmtKind::kOp)
      for (const Value& r : As<OpStmt>(s).results()) fn(r);
    if (s.kind() == StmtKind::kFor) {
      const auto& f = As<ForStmt>(s);
      fn(f.iv());
      for (const Value& v : f.iter_args()) fn(v);
      for (const Value& v : f.results()) fn(v);
    }
    if (s.kind() == StmtKind::kIf)
      for (const Value& v : As<IfStmt>(s).results()) fn(v);
    if (s.kind() == StmtKind::kWhile) {
      for (const Value& v : As<WhileStmt>(s).iter_args()) fn(v);
      for (const Value& v : As<WhileStmt>(s).results()) fn(v);
    }
    if (s.kind() == StmtKind::kCall)
      for (const Value& v : As<CallStmt>(s).results()) fn(v);
  });
}

// Whether pred(stmt) holds for a statement of `block` or of the blocks nested in it.
template <typename Pred>
bool AnyStmt(const Block& block, Pred&& pred) {
  for (const StmtRef& s : block) {
    if (pred(*s)) return true;
    bool nested = false;
    ForEachBody(*s, [&](const Block& b) { nested = nested || AnyStmt(b, pred); });
    if (nested) return true;
  }
  return false;
}

// Calls fn(operand) for each operand `s` reads itself (an op's arguments; a for's bounds, step
// and inits; an if's condition; a yield's values; a call's arguments), not those of its nested blocks.
template <typename Fn>
void ForEachOperand(const Stmt& s, Fn&& fn) {
  switch (s.kind()) {
    case StmtKind::kOp:
      for (const Operand& a : As<OpStmt>(s).args()) fn(a);
      break;
    case StmtKind::kFor: {
      const auto& f = As<ForStmt>(s);
      fn(f.lb()), fn(f.ub()), fn(f.step());
      for (const Operand& o : f.inits()) fn(o);
      break;
    }
    case StmtKind::kIf: fn(As<IfStmt>(s).cond()); break;
    case StmtKind::kWhile:  // the condition is the condition block's closing yield
      for (const Operand& o : As<WhileStmt>(s).inits()) fn(o);
      break;
    case StmtKind::kYield:
      for (const Operand& o : As<YieldStmt>(s).values()) fn(o);
      break;
    case StmtKind::kCall:
      for (const Operand& o : As<CallStmt>(s).args()) fn(o);
      break;
    case StmtKind::kIncore: break;
  }
}

// `s` with every nested block replaced by fn(block) (the same node for ops and yields).
template <typename Fn>
StmtRef MapBodies(const StmtRef& s, Fn&& fn) {
  switch (s->kind()) {
    case StmtKind::kFor: {
      const auto& f = As<ForStmt>(*s);
      return f.WithBody(fn(f.body()));
    }
    case StmtKind::kIf: {
      const auto& i = As<IfStmt>(*s);
      return IfStmt::Make(i.cond(), fn(i.then_body()), fn(i.else_body()), i.results(), i.span());
    }
    case StmtKind::kWhile: {
      const auto& w = As<WhileStmt>(*s);
      return w.WithBodies(fn(w.cond_body()), fn(w.body()));
    }
    case StmtKind::kIncore: {
      const auto& in = As<IncoreStmt>(*s);
      return in.WithBody(fn(in.body()));
    }
    default: return s;
  }
}

}  // namespace ptox::ir
