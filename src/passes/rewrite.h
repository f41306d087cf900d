// Helpers for passes that build IR: a block writer that infers each op's type with the op type
// rules, and substitution of values through nested blocks.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "ir/walk.h"

namespace ptox::passes {

// Appends statements to a block; every op's result type comes from the type rules, so a pass
// cannot build an ill-typed op without a (compiler-bug) error at the offending line.
class BlockWriter {
 public:
  explicit BlockWriter(Span span = {}) : span_(std::move(span)) {}

  ir::Value Op(ir::OpCode op, std::vector<ir::Operand> args, ir::Attrs attrs = {},
               std::optional<ir::Type> declared = std::nullopt, std::string name = {});
  // As Op, but the result is `result` (an existing value of the inferred type): a rewrite that
  // replaces the op defining `result` keeps every use of it valid.
  void OpInto(const ir::Value& result, ir::OpCode op, std::vector<ir::Operand> args,
              ir::Attrs attrs = {});
  void Append(ir::StmtRef s) { block_.push_back(std::move(s)); }
  // for %iv = lb to ub step s [kind] { body } without carried values; `body` fills the loop body.
  template <typename Body>
  void For(ir::Operand lb, ir::Operand ub, ir::Operand step, ir::LoopKind kind, Body&& body) {
    ir::Value iv = ir::MakeValue(ir::Type::Scalar(DType::kIndex), "i");
    BlockWriter inner(span_);
    body(iv, inner);
    Append(ir::ForStmt::Make(iv, std::move(lb), std::move(ub), std::move(step), kind, {}, {},
                             inner.Take(), {}, span_));
  }
  ir::Block Take() { return std::move(block_); }
  const Span& span() const { return span_; }
  void set_span(Span s) { span_ = std::move(s); }

 private:
  Span span_;
  ir::Block block_;
};

// Value -> replacement operand, applied to every operand in a block (nested blocks included).
using Substitution = std::unordered_map<const ir::ValueNode*, ir::Operand>;
ir::Block Substitute(const ir::Block& block, const Substitution& subst);
ir::StmtRef Substitute(const ir::StmtRef& stmt, const Substitution& subst);

using ir::MapBodies;  // ir/walk.h

// What Clone changes besides values (inline-calls: a callee's dimension symbols become the
// caller's dims, and its statements record the call they were inlined at). Empty: unchanged.
struct CloneMap {
  std::function<ir::Type(const ir::Type&)> type;
  std::function<Span(const Span&)> span;
};

// A copy of `block` in which every value it defines is a fresh value (so the copy can sit next to
// the original in SSA form); `subst` maps uses (outer values, and the copies of inner ones).
ir::Block Clone(const ir::Block& block, Substitution& subst, const CloneMap& map = {});

// `block` with the loops nested in it rebuilt innermost first: each sequential loop, its body
// already rebuilt, goes to hoist(loop, out), which appends the loop and whatever it moves before
// it to `out`; other statements are kept (their nested blocks rebuilt). The walk of the passes
// that move work out of loops (hoist-loop-buffers, hoist-invariant-tiles): an inner loop's
// hoisted statements are then plain statements of its parent, which may move them further.
template <typename Hoist>
ir::Block HoistFromSequentialLoops(const ir::Block& block, Hoist&& hoist) {
  ir::Block out;
  for (const ir::StmtRef& s : block) {
    ir::StmtRef t =
        ir::MapBodies(s, [&](const ir::Block& b) { return HoistFromSequentialLoops(b, hoist); });
    if (t->kind() == ir::StmtKind::kFor &&
        ir::As<ir::ForStmt>(*t).loop_kind() == ir::LoopKind::kSequential) {
      hoist(t, out);
    } else {
      out.push_back(std::move(t));
    }
  }
  return out;
}

// Applies `fn` to every function of the module (passes that work one function at a time).
template <typename Fn>
ir::Module MapFuncs(const ir::Module& module, Fn&& fn) {
  ir::Module out;
  for (const ir::FuncRef& f : module.funcs) {
    ir::Func g = *f;
    g.body = fn(g);
    out.funcs.push_back(std::make_shared<const ir::Func>(std::move(g)));
  }
  return out;
}

}  // namespace ptox::passes
