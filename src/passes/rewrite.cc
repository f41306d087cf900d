// Block writer and value substitution shared by the passes that build IR.
#include "passes/rewrite.h"

#include "ops/type_rules.h"

namespace ptox::passes {

ir::Value BlockWriter::Op(ir::OpCode op, std::vector<ir::Operand> args, ir::Attrs attrs,
                          std::optional<ir::Type> declared, std::string name) {
  std::optional<ir::Type> t = ir::InferOpType(op, args, attrs, declared, span_);
  std::vector<ir::Value> results;
  if (t) results.push_back(ir::MakeValue(*t, std::move(name)));
  block_.push_back(ir::OpStmt::Make(op, std::move(args), std::move(attrs), results, span_));
  return t ? results[0] : nullptr;
}

void BlockWriter::OpInto(const ir::Value& result, ir::OpCode op, std::vector<ir::Operand> args,
                         ir::Attrs attrs) {
  std::optional<ir::Type> declared;
  if (ir::HasExplicitType(ir::FamilyOf(op)) ||
      (op == ir::OpCode::kTensorConcat && ir::ConcatNeedsType(args, attrs)))
    declared = result->type;
  std::optional<ir::Type> t = ir::InferOpType(op, args, attrs, declared, span_);
  PTOX_ICHECK(t && *t == result->type)
      << ir::OpName(op) << " would not produce " << result->type.ToString();
  block_.push_back(ir::OpStmt::Make(op, std::move(args), std::move(attrs), {result}, span_));
}

namespace {

std::vector<ir::Operand> Map(const std::vector<ir::Operand>& ops, const Substitution& subst,
                             bool* changed) {
  std::vector<ir::Operand> out = ops;
  for (ir::Operand& o : out) {
    if (!o.is_value()) continue;
    auto it = subst.find(o.value().get());
    if (it != subst.end()) o = it->second, *changed = true;
  }
  return out;
}

}  // namespace

ir::StmtRef Substitute(const ir::StmtRef& s, const Substitution& subst) {
  bool changed = false;
  switch (s->kind()) {
    case ir::StmtKind::kOp: {
      const auto& op = ir::As<ir::OpStmt>(*s);
      auto args = Map(op.args(), subst, &changed);
      return changed ? op.WithArgs(std::move(args)) : s;
    }
    case ir::StmtKind::kFor: {
      const auto& f = ir::As<ir::ForStmt>(*s);
      auto bounds = Map({f.lb(), f.ub(), f.step()}, subst, &changed);
      auto inits = Map(f.inits(), subst, &changed);
      return ir::ForStmt::Make(f.iv(), bounds[0], bounds[1], bounds[2], f.loop_kind(),
                               f.iter_args(), inits, Substitute(f.body(), subst), f.results(),
                               f.span());
    }
    case ir::StmtKind::kIf: {
      const auto& i = ir::As<ir::IfStmt>(*s);
      auto cond = Map({i.cond()}, subst, &changed);
      return ir::IfStmt::Make(cond[0], Substitute(i.then_body(), subst),
                              Substitute(i.else_body(), subst), i.results(), i.span());
    }
    case ir::StmtKind::kWhile: {
      const auto& w = ir::As<ir::WhileStmt>(*s);
      auto inits = Map(w.inits(), subst, &changed);
      return ir::WhileStmt::Make(w.iter_args(), inits, Substitute(w.cond_body(), subst),
                                 Substitute(w.body(), subst), w.results(), w.span());
    }
    case ir::StmtKind::kIncore: {
      const auto& in = ir::As<ir::IncoreStmt>(*s);
      return in.WithBody(Substitute(in.body(), subst));
    }
    case ir::StmtKind::kYield: {
      const auto& y = ir::As<ir::YieldStmt>(*s);
      auto vals = Map(y.values(), subst, &changed);
      return changed ? ir::YieldStmt::Make(std::move(vals), y.span()) : s;
    }
    case ir::StmtKind::kCall: {
      const auto& c = ir::As<ir::CallStmt>(*s);
      auto args = Map(c.args(), subst, &changed);
      return changed ? ir::CallStmt::Make(c.callee(), std::move(args), c.results(), c.span()) : s;
    }
  }
  return s;
}

ir::Block Substitute(const ir::Block& block, const Substitution& subst) {
  if (subst.empty()) return block;
  ir::Block out;
  out.reserve(block.size());
  for (const ir::StmtRef& s : block) out.push_back(Substitute(s, subst));
  return out;
}

namespace {

// The copy of what Clone copies: fresh values (of the mapped type) and mapped spans.
class Cloner {
 public:
  Cloner(Substitution& subst, const CloneMap& map) : subst_(subst), map_(map) {}

  ir::Block Block(const ir::Block& block) {
    ir::Block out;
    for (const ir::StmtRef& s : block) out.push_back(Stmt(s));
    return out;
  }

 private:
  std::vector<ir::Value> Fresh(const std::vector<ir::Value>& vs) {
    std::vector<ir::Value> out;
    for (const ir::Value& v : vs) {
      out.push_back(ir::MakeValue(map_.type ? map_.type(v->type) : v->type, v->name));
      subst_[v.get()] = out.back();
    }
    return out;
  }
  // Loop-carried values and results: of their (copied) initial values' types.
  std::vector<ir::Value> Carried(const std::vector<ir::Value>& vs,
                                 const std::vector<ir::Operand>& inits) {
    std::vector<ir::Value> out = Fresh(vs);
    if (!map_.type) return out;
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = ir::MakeValue(inits[i].type(), vs[i]->name);
      subst_[vs[i].get()] = out[i];
    }
    return out;
  }
  // A copied op's result when types change: what the type rules give for the copied operands
  // (a symbol an op derives, such as concat's N_plus_M, follows the operands), a declared type
  // mapped.
  std::vector<ir::Value> Retyped(const ir::OpStmt& op, const std::vector<ir::Operand>& args) {
    if (op.results().empty()) return {};
    std::optional<ir::Type> declared;
    if (ir::DeclaresType(op)) declared = map_.type(op.result()->type);
    std::optional<ir::Type> t = ir::InferOpType(op.op(), args, op.attrs(), declared, Where(op));
    PTOX_ICHECK(t) << ir::OpName(op.op()) << " lost its result";
    ir::Value v = ir::MakeValue(*t, op.result()->name);
    subst_[op.result().get()] = v;
    return {v};
  }
  std::vector<ir::Operand> Uses(const std::vector<ir::Operand>& ops) {
    bool changed = false;
    return Map(ops, subst_, &changed);
  }
  ir::Operand Use(const ir::Operand& o) { return Uses({o})[0]; }
  Span Where(const ir::Stmt& s) { return map_.span ? map_.span(s.span()) : s.span(); }

  ir::StmtRef Stmt(const ir::StmtRef& s) {
    switch (s->kind()) {
      case ir::StmtKind::kOp: {
        const auto& op = ir::As<ir::OpStmt>(*s);
        auto args = Uses(op.args());
        auto results = map_.type ? Retyped(op, args) : Fresh(op.results());
        return ir::OpStmt::Make(op.op(), std::move(args), op.attrs(), std::move(results),
                                Where(op));
      }
      case ir::StmtKind::kFor: {
        const auto& f = ir::As<ir::ForStmt>(*s);
        auto inits = Uses(f.inits());
        ir::Operand lb = Use(f.lb()), ub = Use(f.ub()), step = Use(f.step());
        ir::Value iv = Fresh({f.iv()})[0];
        auto iters = Carried(f.iter_args(), inits);
        ir::Block body = Block(f.body());
        return ir::ForStmt::Make(iv, lb, ub, step, f.loop_kind(), iters, inits, std::move(body),
                                 Carried(f.results(), inits), Where(f));
      }
      case ir::StmtKind::kIf: {
        const auto& i = ir::As<ir::IfStmt>(*s);
        ir::Operand cond = Use(i.cond());
        ir::Block then_body = Block(i.then_body());
        ir::Block else_body = Block(i.else_body());
        return ir::IfStmt::Make(cond, std::move(then_body), std::move(else_body),
                                Fresh(i.results()), Where(i));
      }
      case ir::StmtKind::kWhile: {
        const auto& w = ir::As<ir::WhileStmt>(*s);
        auto inits = Uses(w.inits());
        auto iters = Carried(w.iter_args(), inits);
        ir::Block cond_body = Block(w.cond_body());
        ir::Block body = Block(w.body());
        return ir::WhileStmt::Make(iters, inits, std::move(cond_body), std::move(body),
                                   Carried(w.results(), inits), Where(w));
      }
      case ir::StmtKind::kIncore: {
        const auto& in = ir::As<ir::IncoreStmt>(*s);
        return ir::IncoreStmt::Make(Block(in.body()), Where(in), in.attrs());
      }
      case ir::StmtKind::kYield:
        return ir::YieldStmt::Make(Uses(ir::As<ir::YieldStmt>(*s).values()), Where(*s));
      case ir::StmtKind::kCall: {
        const auto& c = ir::As<ir::CallStmt>(*s);
        auto args = Uses(c.args());
        return ir::CallStmt::Make(c.callee(), std::move(args), Fresh(c.results()), Where(c));
      }
    }
    return s;
  }

  Substitution& subst_;
  const CloneMap& map_;
};

}  // namespace

ir::Block Clone(const ir::Block& block, Substitution& subst, const CloneMap& map) {
  return Cloner(subst, map).Block(block);
}

}  // namespace ptox::passes
