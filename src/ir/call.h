// Calls: matching a call's arguments to the callee's parameters. The parser types a call's results
// with it, the verifier checks calls with it and inline-calls retypes the callee's body with it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ptox::ir {

// What the callee's dimension symbols stand for in one call: the caller's dims.
using DimBinding = std::map<std::string, Dim>;

// Checks `args` against the parameters of `callee` (count; scalars and tiles of the same type;
// tensors of the same rank and dtype whose static dims agree) and binds each symbolic dim of a
// tensor parameter to the argument's dim, one dim per symbol. Errors are at `span`, the call's.
DimBinding BindCall(const Func& callee, const std::vector<Operand>& args, const Span& span);

// `type` as the caller sees it: bound symbols replaced by their dims. A symbol the callee's
// parameters do not bind (one its body derives, such as concat's N_plus_M) is renamed apart
// with the callee's name, so that it cannot meet a caller's symbol of the same name.
Type BindType(const Type& type, const DimBinding& dims, const std::string& callee);

// The types of the values a call of `callee` with `args` defines (checks the arguments).
std::vector<Type> CallResultTypes(const Func& callee, const std::vector<Operand>& args,
                                  const Span& span);

}  // namespace ptox::ir
