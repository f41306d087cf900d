// How many terms the sums of a function may have that a compiled target may add in another order
// than the interpreter (ptox::ReorderBound turns this into an error bound).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"
#include "ptox/tensor.h"

namespace ptox::driver {

// The longest tile-level sum plus every tensor-level one (their lowerings compound), 0 when
// every op is exact. Symbolic sizes come from `args` and from the tensor.empty / concat ops that
// bind symbols, where their sizes follow from the arguments; a user error names a symbol whose
// size is only known when the program runs.
int64_t ReorderedTerms(const ir::Func& func, const std::vector<Arg>& args);

}  // namespace ptox::driver
