// Type rules: the result type of an op from its operands, attributes and (for ops whose type
// cannot be inferred) the declared type. Shared by the parser, the builder and the verifier.
#pragma once

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
