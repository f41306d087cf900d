// Type rules: the result type of an op from its operands, attributes and (for ops whose type
// cannot be inferred) the declared type. Shared by the parser, the builder and the verifier.
#pragma once

#include "kernels/quant.h"

#include <optional>
#include <vector>

#include "ir/ir.h"

namespace ptox::ir {

// Returns the result type, or nullopt for ops without a result (tile.store).
// Throws a user error at `span` when the operands do not fit the op.
std::optional<Type> InferOpType(OpCode op, const std::vector<Operand>& args, const Attrs& attrs,
                                const std::optional<Type>& declared, const Span& span);

// The attributes each op accepts (name -> kind); anything else is a verify error.
void CheckOpAttrs(OpCode op, const Attrs& attrs, const Span& span);

}  // namespace ptox::ir

namespace ptox::ir {

// Tensor-level rules (tensor_rules.cc), also used by the passes that lower tensor ops.
std::optional<Type> InferTensorOpType(OpCode op, const std::vector<Operand>& args,
                                      const Attrs& attrs, const std::optional<Type>& declared,
                                      const Span& span);
// Numpy broadcasting of two shapes (right-aligned; 1 stretches); nullopt when they clash.
std::optional<std::vector<Dim>> BroadcastShapes(const std::vector<Dim>& a,
                                                const std::vector<Dim>& b);
// The dtype arith binary / compare ops evaluate their operands in: the first SSA operand's, or
// for two immediates index (f32 if either is a float).
DType ScalarOperandDType(const std::vector<Operand>& args);
// Whether a tensor.concat with these operands names its result type (its axis is symbolic in an
// operand, so the result's size along it is a new symbol or a checked static size).
bool ConcatNeedsType(const std::vector<Operand>& args, const Attrs& attrs);
// Whether `op`'s text form carries its result type (`: type`): the families whose type cannot be
// inferred, and concats along a symbolic axis.
bool DeclaresType(const OpStmt& op);
// An axis attribute in [-rank, rank) as [0, rank); a user error otherwise.
int NormalizeAxis(int64_t axis, int rank, std::string_view op, const Span& span);
// The eps of tensor.rmsnorm / tensor.layernorm: the attribute, else 1e-6 / 1e-5 (docs/ops.md). One
// definition for the interpreter and lower-composites (two once disagreed).
double NormEps(const OpStmt& op);
// Attribute values with defaults (the kinds are checked by CheckOpAttrs).
int64_t IntAttr(const Attrs& attrs, const std::string& name, int64_t fallback);
bool BoolAttr(const Attrs& attrs, const std::string& name, bool fallback);
double FloatAttr(const Attrs& attrs, const std::string& name, double fallback);
// The weight format of tensor.qmatmul / tile.qmatmul_acc (its `format` attribute, checked by the
// type rules) and the bytes of one of its blocks of 32 values.
quant::Format QuantFormat(const Attrs& attrs);

}  // namespace ptox::ir
