// Def-use information for the statements of a function body: where each value is used.
#pragma once

#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace ptox::analysis {

// One use of a value: the statement using it, the operand position (-1 for non-op statements
// such as yields, loop bounds and inits, if conditions) and the block that statement is in.
struct UseSite {
  const ir::Stmt* stmt;
  int operand;
  const ir::Block* block;
};
using UseMap = std::unordered_map<const ir::ValueNode*, std::vector<UseSite>>;
using ProducerMap = std::unordered_map<const ir::ValueNode*, const ir::OpStmt*>;

// Adds every use in `block` and its nested blocks to `uses`, in statement order; `producers`
// (optional) gets the op defining each op result.
void CollectUses(const ir::Block& block, UseMap& uses, ProducerMap* producers = nullptr);

}  // namespace ptox::analysis
