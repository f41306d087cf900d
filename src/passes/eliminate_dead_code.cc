// dce: removes ops without side effects whose results are never used, then incore scopes and
// loops left with nothing in them. An op that can fail at run time (integer overflow or division
// by zero, a narrowing integer cast, an out-of-bounds offset, a max over an empty region, a
// run-time shape mismatch; see MayTrap) has a side effect — its error — and stays even when
// unused: the interpreter, which defines the program, evaluates it, so every target fails where
// the interpreter does.
//
// Requires: verified IR. Establishes: every remaining op has a used result, writes memory
// (tile.store) or may fail; no empty incore; no result-less for with an empty body.
// Algorithm: count uses over the whole function, then sweep blocks bottom-up removing dead ops
// (decrementing their operands' counts so chains die in the same sweep); repeat until nothing
// changes. O(statements x sweeps); sweeps are bounded by the nesting depth in practice.
#include <cstdint>
#include <unordered_map>

#include "passes/pass.h"

namespace ptox::passes {
namespace {

using Uses = std::unordered_map<const ir::ValueNode*, int>;

bool IsInt(const ir::Operand& o) { return !IsFloat(o.type().dtype()); }

// A cast that can fail: integer to a narrower integer (floats saturate, bool takes != 0).
bool CastMayTrap(DType from, DType to) {
  if (IsFloat(from) || IsFloat(to) || to == DType::kBool) return false;
  return DTypeBytes(to) < DTypeBytes(from) && from != DType::kBool;
}

// Integer arithmetic that can overflow or divide by zero (min / max / comparisons cannot).
bool IntArithMayTrap(ir::OpCode op) {
  switch (op) {
    case ir::OpCode::kTileMax:
    case ir::OpCode::kTileMin:
    case ir::OpCode::kTileRelu:
    case ir::OpCode::kArithMax:
    case ir::OpCode::kArithMin: return false;
    default: return true;
  }
}

// Scalar integer arithmetic on two immediates fails exactly when folding it would (fold-constants
// keeps those ops: see FoldInt there); the result is an index.
bool ImmediateArithMayTrap(ir::OpCode op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case ir::OpCode::kArithAdd: return __builtin_add_overflow(a, b, &r);
    case ir::OpCode::kArithSub: return __builtin_sub_overflow(a, b, &r);
    case ir::OpCode::kArithMul: return __builtin_mul_overflow(a, b, &r);
    case ir::OpCode::kArithDiv:
    case ir::OpCode::kArithRem: return b == 0 || (a == INT64_MIN && b == -1);
    default: return false;
  }
}

// A tile.load whose offsets are immediates inside a static shape (it cannot go out of bounds).
bool LoadInBounds(const ir::OpStmt& op) {
  const ir::Type& t = op.args()[0].type();
  for (size_t k = 1; k < op.args().size(); ++k) {
    const ir::Operand& o = op.args()[k];
    const ir::Dim& d = t.shape()[k - 1];
    if (!o.is_int() || !d.is_static() || o.int_value() < 0 || o.int_value() >= d.size)
      return false;
  }
  return true;
}

// A tensor-level op checks at run time only what depends on symbolic sizes or SSA scalars.
bool TensorOpMayTrap(const ir::OpStmt& op) {
  auto dynamic = [](const ir::Type& t) {
    if (!t.is_tensor()) return true;
    for (const ir::Dim& d : t.shape())
      if (!d.is_static()) return true;
    return false;
  };
  for (const ir::Operand& a : op.args())
    if (a.is_value() && dynamic(a.type())) return true;
  return dynamic(op.result()->type);
}

// Whether evaluating `op` can fail at run time (conservatively: true unless it provably cannot).
bool MayTrap(const ir::OpStmt& op) {
  const auto& args = op.args();
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kLoad: return !LoadInBounds(op);
    case ir::OpFamily::kFull:
    case ir::OpFamily::kCompare:
    case ir::OpFamily::kSelect:
    case ir::OpFamily::kCausalMask:
    case ir::OpFamily::kBroadcast:
    case ir::OpFamily::kTranspose:
    case ir::OpFamily::kMatmul:
    case ir::OpFamily::kMatmulAcc:
    case ir::OpFamily::kDequantize:
    case ir::OpFamily::kScalarCompare:
    case ir::OpFamily::kScalarSelect:
    case ir::OpFamily::kDim: return false;
    case ir::OpFamily::kScalarBinary:
      if (args[0].is_int() && args[1].is_int())
        return ImmediateArithMayTrap(op.op(), args[0].int_value(), args[1].int_value());
      [[fallthrough]];
    case ir::OpFamily::kBinary:
    case ir::OpFamily::kUnary:
    case ir::OpFamily::kRowExpand:
    case ir::OpFamily::kColExpand:
      return !IsFloat(op.result()->type.dtype()) && IntArithMayTrap(op.op());
    case ir::OpFamily::kCast:
    case ir::OpFamily::kScalarCast:
      return CastMayTrap(args[0].type().dtype(), op.result()->type.dtype());
    case ir::OpFamily::kRowReduce:
    case ir::OpFamily::kColReduce:  // max / min of an empty region; integer sums overflow
      return IsInt(args[0]) || (op.op() != ir::OpCode::kTileRowSum &&
                                op.op() != ir::OpCode::kTileColSum);
    case ir::OpFamily::kAssert:  // has no result: never dead, listed for completeness
    case ir::OpFamily::kSlice:
    case ir::OpFamily::kAssemble:
    case ir::OpFamily::kReshape:  // offsets checked at run time; a partial tile cannot reshape
    case ir::OpFamily::kExtract:  // the element must be in the valid region
    case ir::OpFamily::kRowArgmax:
    case ir::OpFamily::kTensorGather: return true;  // ids are data: any may be out of range
    default: return TensorOpMayTrap(op);
  }
}

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
    case ir::StmtKind::kWhile: {
      const auto& w = ir::As<ir::WhileStmt>(s);
      for (const auto& o : w.inits()) Count(o, uses, delta);
      if (delta > 0) CountBlock(w.cond_body(), uses), CountBlock(w.body(), uses);
      break;
    }
    case ir::StmtKind::kIncore:
      if (delta > 0) CountBlock(ir::As<ir::IncoreStmt>(s).body(), uses);
      break;
    case ir::StmtKind::kYield:
      for (const auto& o : ir::As<ir::YieldStmt>(s).values()) Count(o, uses, delta);
      break;
    case ir::StmtKind::kCall: PTOX_ICHECK(false) << "calls are inlined first (inline-calls)"; break;
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
      return uses_[op.result().get()] == 0 && !MayTrap(op);
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
    } else if (s->kind() == ir::StmtKind::kWhile) {  // never dead: it may not end (nor trap)
      const auto& w = ir::As<ir::WhileStmt>(*s);
      r = w.WithBodies(Sweep(w.cond_body()), Sweep(w.body()));
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
