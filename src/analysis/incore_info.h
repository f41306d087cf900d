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
  // arith.add ops inside the scope, by result (an offset may be an induction variable plus a
  // shift).
  std::unordered_map<const ir::ValueNode*, const ir::OpStmt*> sums;
};

// Where one access may touch its tensor along one dimension, in values the orchestration has
// when it submits the task (the task's region, from which the runtime infers dependencies): an
// offset that is an immediate or a live-in is a point (kAt: [lo, lo + extent)); the induction
// variable of a loop inside the scope whose bounds are known outside spans the loop's range
// (kLoopRange: [lb, ub - 1 + extent), empty when ub <= lb), moved by `shift` when the offset
// is such a variable plus an immediate or a live-in; anything else the whole dimension
// (kWholeDim; conservative: it only adds dependencies). `extent` is the tile's along the tiled
// dims, 1 along the others.
struct AccessBound {
  enum Kind { kAt, kLoopRange, kWholeDim } kind;
  ir::Operand lo;  // kAt: the offset; kLoopRange: the loop's lower bound
  ir::Operand ub;  // kLoopRange: the loop's upper bound
  int64_t extent;
  ir::Operand shift = ir::Operand::Int(0);  // kLoopRange: added to both ends
};
// One bound per dimension of the accessed tensor.
std::vector<AccessBound> AccessBounds(const IncoreInfo& info, const AccessSite& site);

// Analyzes one incore scope of `func`. Accessed tensors are live-ins: parameters or tensors the
// orchestration made (tensor.empty).
IncoreInfo AnalyzeIncore(const ir::Func& func, const ir::IncoreStmt& scope);

}  // namespace ptox::analysis
