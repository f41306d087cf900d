// Builder implementation: a stack of open blocks, one per nested region.
#include "ir/builder.h"

#include "ir/call.h"
#include "ops/type_rules.h"

namespace ptox::ir {

Builder::Builder(std::string func_name) {
  func_.name = std::move(func_name);
  blocks_.emplace_back();
}

Value Builder::Param(std::string name, Direction dir, Type type) {
  Value v = MakeValue(std::move(type), std::move(name));
  func_.params.push_back({v, dir});
  return v;
}

Value Builder::Op(OpCode op, std::vector<Operand> args, Attrs attrs, std::optional<Type> declared,
                  std::string name) {
  std::optional<Type> t = InferOpType(op, args, attrs, declared, Span{});
  std::vector<Value> results;
  if (t) results.push_back(MakeValue(*t, std::move(name)));
  Current().push_back(OpStmt::Make(op, std::move(args), std::move(attrs), results));
  return t ? results[0] : nullptr;
}

Value Builder::Load(Value tensor, std::vector<Operand> offsets, Type tile,
                    std::optional<double> pad) {
  std::vector<Operand> args{std::move(tensor)};
  args.insert(args.end(), offsets.begin(), offsets.end());
  Attrs attrs;
  if (pad) attrs["pad"] = *pad;
  return Op(OpCode::kTileLoad, std::move(args), std::move(attrs), tile);
}

void Builder::Store(Value tile, Value tensor, std::vector<Operand> offsets) {
  std::vector<Operand> args{std::move(tile), std::move(tensor)};
  args.insert(args.end(), offsets.begin(), offsets.end());
  Op(OpCode::kTileStore, std::move(args));
}

Block Builder::Collect(const std::function<void()>& fill) {
  blocks_.emplace_back();
  fill();
  Block b = std::move(blocks_.back());
  blocks_.pop_back();
  return b;
}

void Builder::Incore(const std::function<void()>& body) {
  Block b = Collect(body);
  Current().push_back(IncoreStmt::Make(std::move(b)));
}

std::vector<Value> Builder::For(Operand lb, Operand ub, Operand step, std::vector<Operand> inits,
                                const LoopBody& body, LoopKind kind) {
  Value iv = MakeValue(Type::Scalar(DType::kIndex), "i");
  std::vector<Value> iters, results;
  for (const Operand& init : inits) {
    iters.push_back(MakeValue(init.type(), "acc"));
    results.push_back(MakeValue(init.type()));
  }
  Block b = Collect([&] {
    std::vector<Operand> yields = body(iv, iters);
    if (!yields.empty() || !inits.empty()) Current().push_back(YieldStmt::Make(std::move(yields)));
  });
  Current().push_back(ForStmt::Make(iv, std::move(lb), std::move(ub), std::move(step), kind, iters,
                                    std::move(inits), std::move(b), results));
  return results;
}

void Builder::For(Operand lb, Operand ub, Operand step, const std::function<void(Value iv)>& body,
                  LoopKind kind) {
  For(std::move(lb), std::move(ub), std::move(step), {},
      [&](Value iv, const std::vector<Value>&) {
        body(iv);
        return std::vector<Operand>{};
      },
      kind);
}

std::vector<Value> Builder::While(std::vector<Operand> inits, const WhileCond& cond,
                                  const WhileBody& body) {
  std::vector<Value> iters, results;
  for (const Operand& init : inits) {
    iters.push_back(MakeValue(init.type(), "acc"));
    results.push_back(MakeValue(init.type()));
  }
  Block c = Collect([&] { Current().push_back(YieldStmt::Make({cond(iters)})); });
  Block b = Collect([&] {
    std::vector<Operand> yields = body(iters);
    if (!yields.empty() || !inits.empty()) Current().push_back(YieldStmt::Make(std::move(yields)));
  });
  Current().push_back(WhileStmt::Make(iters, std::move(inits), std::move(c), std::move(b), results));
  return results;
}

std::vector<Value> Builder::If(Operand cond, const Arm& then_arm, const Arm& else_arm) {
  std::vector<Operand> then_yields;
  Block then_b = Collect([&] {
    then_yields = then_arm();
    if (!then_yields.empty()) Current().push_back(YieldStmt::Make(then_yields));
  });
  Block else_b = Collect([&] {
    std::vector<Operand> ys = else_arm ? else_arm() : std::vector<Operand>{};
    if (!ys.empty()) Current().push_back(YieldStmt::Make(std::move(ys)));
  });
  std::vector<Value> results;
  for (const Operand& y : then_yields) results.push_back(MakeValue(y.type()));
  Current().push_back(IfStmt::Make(std::move(cond), std::move(then_b), std::move(else_b), results));
  return results;
}

std::vector<Value> Builder::Call(const Func& callee, std::vector<Operand> args) {
  std::vector<Value> results;
  for (const Type& t : CallResultTypes(callee, args, Span{})) results.push_back(MakeValue(t));
  Current().push_back(CallStmt::Make(callee.name, std::move(args), results));
  return results;
}

void Builder::Return(std::vector<Operand> values) {
  PTOX_CHECK(blocks_.size() == 1, Span{}) << "return inside a loop, if or incore scope of @"
                                          << func_.name;
  PTOX_CHECK(func_.results.empty() && (Current().empty() ||
                                       Current().back()->kind() != StmtKind::kYield),
             Span{})
      << "@" << func_.name << " returns twice";
  for (const Operand& v : values) func_.results.push_back(v.type());
  Current().push_back(YieldStmt::Make(std::move(values)));
}

Func Builder::Finish() {
  PTOX_ICHECK(blocks_.size() == 1) << "Finish() inside an open region";
  func_.body = std::move(blocks_.back());
  blocks_.back().clear();
  return std::move(func_);
}

}  // namespace ptox::ir
