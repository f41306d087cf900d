// Builder: constructs a Func statement by statement, inferring each op's result type with the
// op type rules (so a builder program is type-correct or throws at the offending call).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ptox::ir {

class Builder {
 public:
  explicit Builder(std::string func_name);

  Value Param(std::string name, Direction dir, Type type);

  // Appends an op; returns its result (nullptr for ops without one, like tile.store).
  Value Op(OpCode op, std::vector<Operand> args, Attrs attrs = {},
           std::optional<Type> declared = std::nullopt, std::string name = {});

  // Shorthands for the common ops.
  Value Load(Value tensor, std::vector<Operand> offsets, Type tile, std::optional<double> pad = {});
  void Store(Value tile, Value tensor, std::vector<Operand> offsets);

  void Incore(const std::function<void()>& body);

  using LoopBody = std::function<std::vector<Operand>(Value iv, const std::vector<Value>& iters)>;
  // for iv = lb to ub step s: `body` returns the values to yield (one per init); returns results.
  std::vector<Value> For(Operand lb, Operand ub, Operand step, std::vector<Operand> inits,
                         const LoopBody& body, LoopKind kind = LoopKind::kSequential);
  // A loop without carried values.
  void For(Operand lb, Operand ub, Operand step, const std::function<void(Value iv)>& body,
           LoopKind kind = LoopKind::kSequential);

  // while iter(carried = inits) { cond(carried) } do { body(carried) }: `cond` returns the
  // condition (a bool scalar), `body` the next carried values; returns the results.
  using WhileCond = std::function<Operand(const std::vector<Value>& iters)>;
  using WhileBody = std::function<std::vector<Operand>(const std::vector<Value>& iters)>;
  std::vector<Value> While(std::vector<Operand> inits, const WhileCond& cond,
                           const WhileBody& body);

  using Arm = std::function<std::vector<Operand>()>;
  // if cond { then } else { else }: each arm returns the values it yields; returns results typed
  // like the then-arm's yields.
  std::vector<Value> If(Operand cond, const Arm& then_arm, const Arm& else_arm);

  // results = call @callee(args): `callee` is a function of the module this one goes into.
  std::vector<Value> Call(const Func& callee, std::vector<Operand> args);
  // Ends the function's body with `return values`; the function's results are their types.
  void Return(std::vector<Operand> values);

  // Makes the function `incore`: its body is the inside of its callers' incore scopes.
  void SetIncore() { func_.incore = true; }
  Func Finish();
  const std::string& name() const { return func_.name; }

 private:
  Block& Current() { return blocks_.back(); }
  Block Collect(const std::function<void()>& fill);

  Func func_;
  std::vector<Block> blocks_;
};

}  // namespace ptox::ir
