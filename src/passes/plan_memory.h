// The memory plan plan-memory records, for the targets that place tiles by it.
#pragma once

#include "analysis/tile_plan.h"
#include "passes/policy.h"

namespace ptox::passes {

// The tile plan of a tile-level scope on a target with `policy`: values fuse-tiles fused and
// matmul operands the policy reads in place take no bytes; the rest are placed by liveness at
// the policy's tile sizes. plan-memory checks its arena against the budget and records it as
// {onchip_bytes = N}; a target allocates exactly that arena and places its tiles at the offsets.
analysis::TilePlan PlanScope(const ir::IncoreStmt& scope, const TargetPolicy& policy);

}  // namespace ptox::passes
