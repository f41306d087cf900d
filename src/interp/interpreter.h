// The reference interpreter: runs a function at any IR level on caller memory. It defines what
// every op means; every target is compared against it.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "ptox/tensor.h"

namespace ptox::interp {

// Runs `func` over `args` (one per parameter, in order). Binds and checks the arguments
// (ir::BindArgs), then executes. Throws ptox::Error: kInvalid for bad arguments, kRuntime for
// failures while running (out-of-bounds access, integer overflow, division by zero).
// `in` tensors are never written. `comm` places the run among the ranks of a distributed run
// (interp/comm.h); null: rank 0 of 1.
class Comm;
void Run(const ir::Func& func, const std::vector<Arg>& args, Comm* comm = nullptr);

}  // namespace ptox::interp
