// What an incore scope needs from and does to the world outside it: the values it uses that
// are defined outside (its task arguments), the tensor accesses it makes (its task regions), and
// the loops inside it whose induction variables index those accesses.
#pragma once

#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace ptox::analysis {

struct AccessSite {
  const ir::OpStmt* op;  // a tile.load or tile.store
  ir::Value tensor;      // the tensor it reads or writes: a parameter, or a value made outside
                         // the scope (tensor.empty)
  int param;             // index of that parameter, or -1 when the tensor is not a parameter
  bool write;
};

struct IncoreInfo {
  std::vector<ir::Value> live_ins;  // in order of first use
  std::vector<AccessSite> accesses;
  // Induction variable -> its loop, for loops inside the scope whose bounds and step are
  // defined outside it (so the iv's range is known when the task is submitted).
  std::unordered_map<const ir::ValueNode*, const ir::ForStmt*> outer_bounded_ivs;
};

// Analyzes one incore scope of `func`. Accessed tensors are live-ins: parameters or tensors the
// orchestration made (tensor.empty).
IncoreInfo AnalyzeIncore(const ir::Func& func, const ir::IncoreStmt& scope);

}  // namespace ptox::analysis
