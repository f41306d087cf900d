// Binding run-time arguments to a function's parameters: counts, dtypes, ranks, static dims,
// consistent symbolic dims, and no output aliasing another argument (unless it is `inout` and the
// same view). Shared by the interpreter and every target, so they all reject the same inputs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ptox/tensor.h"

namespace ptox::ir {

// Symbol name -> size, as bound by the arguments.
using SymbolBindings = std::map<std::string, int64_t>;

// Throws a user error (kInvalid) naming the parameter when an argument does not fit.
SymbolBindings BindArgs(const Func& func, const std::vector<Arg>& args);

}  // namespace ptox::ir
