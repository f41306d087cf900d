// Matmul operands read in place: which tile.load results a target with
// TargetPolicy::MatmulOperandsInPlace never materializes (the CPU target reads them as views
// of the tensor; plan-memory gives them no arena bytes).
#pragma once

#include <unordered_set>

#include "ir/ir.h"

namespace ptox::analysis {

// The float tile.load results in `body` (an incore scope's) whose every use is a matmul A / B
// operand in the load's own block, with no tile.store between the load and its last use: a
// view reads the tensor when the matmul runs, so a store in between (to that tensor or one
// aliasing it) would otherwise be seen.
std::unordered_set<const ir::ValueNode*> InPlaceMatmulOperands(const ir::Block& body);

}  // namespace ptox::analysis
