// fuse-elementwise: partitions each block's tensor ops into groups that each run as one kernel:
// chains of elementwise ops, elementwise prologues / epilogues of row reductions (the whole row
// in one tile), and elementwise epilogues of matmuls. Each group becomes a tensor-level `incore`
// scope; values that leave a group are stored to a tensor.empty buffer (or straight into the
// `out` parameter they are stored to).
//
// Requires: verified IR without composites (run lower-composites first). Establishes: every
// tensor compute op outside tile-level code is inside a tensor-level incore group.
// Algorithm and rules: tensor_groups.cc (greedy, program order, acyclic by construction).
// Complexity: O(ops x groups) per block.
#include "passes/pass.h"
#include "passes/rewrite.h"
#include "passes/tensor_groups.h"

namespace ptox::passes {

ir::Module FuseElementwise(const ir::Module& module, const PassContext&) {
  return MapFuncs(module, [](const ir::Func& f) { return FormGroups(f, /*fuse=*/true); });
}

}  // namespace ptox::passes
