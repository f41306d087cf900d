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
    case ir::StmtKind::kIncore: {
      const auto& in = ir::As<ir::IncoreStmt>(*s);
      return in.WithBody(Substitute(in.body(), subst));
    }
    case ir::StmtKind::kYield: {
      const auto& y = ir::As<ir::YieldStmt>(*s);
      auto vals = Map(y.values(), subst, &changed);
      return changed ? ir::YieldStmt::Make(std::move(vals), y.span()) : s;
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

std::vector<ir::Value> Fresh(const std::vector<ir::Value>& vs, Substitution& subst) {
  std::vector<ir::Value> out;
  for (const ir::Value& v : vs) {
    out.push_back(ir::MakeValue(v->type, v->name));
    subst[v.get()] = out.back();
  }
  return out;
}

ir::Operand MapOne(const ir::Operand& o, const Substitution& subst) {
  bool changed = false;
  return Map({o}, subst, &changed)[0];
}

ir::StmtRef CloneStmt(const ir::StmtRef& s, Substitution& subst) {
  bool changed = false;
  switch (s->kind()) {
    case ir::StmtKind::kOp: {
      const auto& op = ir::As<ir::OpStmt>(*s);
      auto args = Map(op.args(), subst, &changed);
      return ir::OpStmt::Make(op.op(), std::move(args), op.attrs(), Fresh(op.results(), subst),
                              op.span());
    }
    case ir::StmtKind::kFor: {
      const auto& f = ir::As<ir::ForStmt>(*s);
      auto inits = Map(f.inits(), subst, &changed);
      ir::Operand lb = MapOne(f.lb(), subst), ub = MapOne(f.ub(), subst),
                  step = MapOne(f.step(), subst);
      ir::Value iv = Fresh({f.iv()}, subst)[0];
      auto iters = Fresh(f.iter_args(), subst);
      ir::Block body = Clone(f.body(), subst);
      return ir::ForStmt::Make(iv, lb, ub, step, f.loop_kind(), iters, inits, std::move(body),
                               Fresh(f.results(), subst), f.span());
    }
    case ir::StmtKind::kIf: {
      const auto& i = ir::As<ir::IfStmt>(*s);
      ir::Operand cond = MapOne(i.cond(), subst);
      ir::Block then_body = Clone(i.then_body(), subst);
      ir::Block else_body = Clone(i.else_body(), subst);
      return ir::IfStmt::Make(cond, std::move(then_body), std::move(else_body),
                              Fresh(i.results(), subst), i.span());
    }
    case ir::StmtKind::kIncore: {
      const auto& in = ir::As<ir::IncoreStmt>(*s);
      return ir::IncoreStmt::Make(Clone(in.body(), subst), in.span(), in.attrs());
    }
    case ir::StmtKind::kYield: {
      const auto& y = ir::As<ir::YieldStmt>(*s);
      return ir::YieldStmt::Make(Map(y.values(), subst, &changed), y.span());
    }
  }
  return s;
}

}  // namespace

ir::Block Clone(const ir::Block& block, Substitution& subst) {
  ir::Block out;
  for (const ir::StmtRef& s : block) out.push_back(CloneStmt(s, subst));
  return out;
}

}  // namespace ptox::passes
