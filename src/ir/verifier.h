// Verifier: whole-program invariants the parser and builder cannot see one op at a time.
#pragma once

#include "ir/ir.h"

namespace ptox::ir {

// Checks SSA scoping, op types, yields, loop bounds, parameter directions, tile-level placement
// and provably out-of-bounds accesses. Throws a user error at the offending statement's span.
void Verify(const Module& module);
void Verify(const Func& func);

}  // namespace ptox::ir
