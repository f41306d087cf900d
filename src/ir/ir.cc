// Node constructors and small accessors.
#include "ir/ir.h"

namespace ptox::ir {

const Type& Operand::type() const {
  static const Type kIndex = Type::Scalar(DType::kIndex), kF32 = Type::Scalar(DType::kF32);
  if (is_value()) return value()->type;
  return is_int() ? kIndex : kF32;
}

std::shared_ptr<const OpStmt> OpStmt::Make(OpCode op, std::vector<Operand> args, Attrs attrs,
                                           std::vector<Value> results, Span span) {
  return std::make_shared<const OpStmt>(op, std::move(args), std::move(attrs), std::move(results),
                                        std::move(span));
}

const Value& OpStmt::result() const {
  PTOX_ICHECK(results_.size() == 1) << OpName(op_) << " has no single result";
  return results_[0];
}

std::shared_ptr<const OpStmt> OpStmt::WithArgs(std::vector<Operand> args) const {
  return Make(op_, std::move(args), attrs_, results_, span());
}

std::shared_ptr<const ForStmt> ForStmt::Make(Value iv, Operand lb, Operand ub, Operand step,
                                             LoopKind loop_kind, std::vector<Value> iter_args,
                                             std::vector<Operand> inits, Block body,
                                             std::vector<Value> results, Span span) {
  return std::make_shared<const ForStmt>(std::move(iv), std::move(lb), std::move(ub),
                                         std::move(step), loop_kind, std::move(iter_args),
                                         std::move(inits), std::move(body), std::move(results),
                                         std::move(span));
}

std::shared_ptr<const ForStmt> ForStmt::WithBody(Block body) const {
  return Make(iv_, lb_, ub_, step_, loop_kind_, iter_args_, inits_, std::move(body), results_,
              span());
}

std::string_view LoopKindName(LoopKind k) {
  switch (k) {
    case LoopKind::kSequential: return "sequential";
    case LoopKind::kParallel: return "parallel";
    case LoopKind::kUnroll: return "unroll";
  }
  return "?";
}

std::shared_ptr<const IfStmt> IfStmt::Make(Operand cond, Block then_body, Block else_body,
                                           std::vector<Value> results, Span span) {
  return std::make_shared<const IfStmt>(std::move(cond), std::move(then_body),
                                        std::move(else_body), std::move(results), std::move(span));
}

std::shared_ptr<const WhileStmt> WhileStmt::Make(std::vector<Value> iter_args,
                                                 std::vector<Operand> inits, Block cond_body,
                                                 Block body, std::vector<Value> results,
                                                 Span span) {
  return std::make_shared<const WhileStmt>(std::move(iter_args), std::move(inits),
                                           std::move(cond_body), std::move(body),
                                           std::move(results), std::move(span));
}

std::shared_ptr<const WhileStmt> WhileStmt::WithBodies(Block cond_body, Block body) const {
  return Make(iter_args_, inits_, std::move(cond_body), std::move(body), results_, span());
}

const Operand* WhileStmt::cond() const {
  if (cond_body_.empty() || cond_body_.back()->kind() != StmtKind::kYield) return nullptr;
  const auto& vals = As<YieldStmt>(*cond_body_.back()).values();
  return vals.size() == 1 ? &vals[0] : nullptr;
}

std::shared_ptr<const IncoreStmt> IncoreStmt::Make(Block body, Span span, Attrs attrs) {
  return std::make_shared<const IncoreStmt>(std::move(body), std::move(span), std::move(attrs));
}

std::shared_ptr<const IncoreStmt> IncoreStmt::WithBody(Block body) const {
  return Make(std::move(body), span(), attrs_);
}

std::shared_ptr<const IncoreStmt> IncoreStmt::WithAttrs(Attrs attrs) const {
  return Make(body_, span(), std::move(attrs));
}

std::shared_ptr<const YieldStmt> YieldStmt::Make(std::vector<Operand> values, Span span) {
  return std::make_shared<const YieldStmt>(std::move(values), std::move(span));
}

std::shared_ptr<const CallStmt> CallStmt::Make(std::string callee, std::vector<Operand> args,
                                               std::vector<Value> results, Span span) {
  return std::make_shared<const CallStmt>(std::move(callee), std::move(args), std::move(results),
                                          std::move(span));
}

std::string_view DirectionName(Direction d) {
  switch (d) {
    case Direction::kIn: return "in";
    case Direction::kOut: return "out";
    case Direction::kInOut: return "inout";
  }
  return "?";
}

const Func* Module::Find(std::string_view name) const {
  for (const auto& f : funcs)
    if (f->name == name) return f.get();
  return nullptr;
}

}  // namespace ptox::ir
