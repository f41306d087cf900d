// Tensor-level kernel groups: partitions the tensor ops of each block into groups that each
// become one `incore` scope (one kernel), materializing values that cross groups in
// tensor.empty buffers. Shared by fuse-elementwise (fusing policy) and convert-tensor-to-tile
// (one op per group, for whatever fusion left outside a scope).
#pragma once

#include "ir/ir.h"

namespace ptox::passes {

// Rewrites `func`'s body so every tensor compute op outside an incore scope sits in a
// tensor-level incore group. With `fuse`, an op joins the group of one of its operands when the
// group can compute it in the same tile loop (docs/passes/fuse-elementwise.md); otherwise every
// op is a group of its own.
ir::Block FormGroups(const ir::Func& func, bool fuse);

// The iteration domain of one op: a matmul's or elementwise op's result shape, a reduction's
// input shape.
const std::vector<ir::Dim>& OpDomain(const ir::OpStmt& op);
// The domain of a group (ops in order): its matmul's output, else the broadcast of its ops'
// domains (a per-feature op that started the group stretches to the rows that joined it).
std::vector<ir::Dim> GroupDomain(const std::vector<const ir::OpStmt*>& ops);
// Whether a reduction runs along its operand's last axis.
bool ReducesLastAxis(const ir::OpStmt& op);
// Whether a reduction runs along a static, non-empty last axis, so that tiles of whole rows can
// compute it (a row group); other reductions run alone.
bool ReducesWholeRows(const ir::OpStmt& op);
// Whether a shape has a static dim of size 0 (a tensor of it has no element).
bool StaticallyEmpty(const std::vector<ir::Dim>& shape);

}  // namespace ptox::passes
