// What fuse-tiles decided, for the passes and targets after it.
#pragma once

#include "ir/ir.h"

namespace ptox::passes {

// Whether fuse-tiles marked `op`'s result {fused = true}: its consumers compute it per element,
// it is never materialized (no tile, no arena bytes).
bool Fused(const ir::OpStmt& op);

// Whether `op` can be evaluated per element inside a fused loop (a float elementwise op, or a
// cast that cannot fail).
bool FusibleOp(const ir::OpStmt& op);

// `scope` with exactly the values fuse-tiles fuses marked {fused = true}, for a pass that changes
// a scope after fuse-tiles ran.
ir::StmtRef MarkFused(const ir::IncoreStmt& scope);

}  // namespace ptox::passes
