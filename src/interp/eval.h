// Op evaluators of the reference interpreter, one per op group. Each takes the op and the
// environment and returns the op's result (std::nullopt for ops without one, like tile.store).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "interp/value.h"

namespace ptox::interp {

// tile.load, tile.store, tile.full (eval_memory.cc).
std::optional<RtValue> EvalMemoryOp(const ir::OpStmt& op, const Env& env);
// Binary, unary, compare, select, causal_mask, cast (eval_elementwise.cc).
RtValue EvalElementwiseOp(const ir::OpStmt& op, const Env& env);
// Reductions, argmax, row / col expand (eval_reduce.cc).
RtValue EvalReduceOp(const ir::OpStmt& op, const Env& env);
// Transpose, reshape, slice, assemble, broadcast, extract, matmul (eval_layout.cc).
RtValue EvalLayoutOp(const ir::OpStmt& op, const Env& env);
// arith.*, tensor.dim (eval_scalar.cc).
RtValue EvalScalarOp(const ir::OpStmt& op, const Env& env);
// arith.assert: a runtime error with the op's message when its condition is false.
void EvalAssert(const ir::OpStmt& op, const Env& env);

// Tensor-level ops: whole-tensor values the environment owns (eval_tensor.cc).
std::optional<RtValue> EvalTensorOp(const ir::OpStmt& op, Env& env);

// dist.put / dist.get (queued in env.epoch) and dist.fence, which applies them (eval_rma.cc).
void EvalRma(const ir::OpStmt& op, Env& env);
// The end of a run: one-sided ops still queued (no fence after them) are an error.
void CheckNoPendingRma(const Env& env);

// Run() that leaves every computed value in `env` (tests inspect tiles, padding included).
void RunInEnv(const ir::Func& func, const std::vector<Arg>& args, Env& env);

// "tile.add (f.pto:3 (in @g, called at f.pto:9:3))": the op's name (or `name`, when the error
// names the op the user wrote, as an assert does) and its source location when known.
std::string OpWhere(const ir::OpStmt& op, std::string_view name = {});

}  // namespace ptox::interp
