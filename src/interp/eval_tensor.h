// Dense tensor values and the primitive tensor-level steps of the reference interpreter, shared by
// eval_tensor.cc (the ops) and eval_tensor_composite.cc (composites built from these steps).
#pragma once

#include <cstdint>
#include <vector>

#include "interp/eval.h"
#include "interp/numeric.h"

namespace ptox::interp {

// A tensor value being computed: row-major f32 elements, each exactly representable in `dtype`
// (every step rounds its result to the dtype). Rank 0 (one element) is a scalar operand.
struct Dense {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<float> f;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const { return static_cast<int64_t>(f.size()); }
};

// A zero-filled value; a runtime error naming `op` when the element count overflows or cannot be
// allocated.
Dense MakeDense(const ir::OpStmt& op, DType dtype, std::vector<int64_t> shape);
// A scalar operand of `dtype`: the f32 value of `v`, rounded to the dtype (like a float
// immediate of a tile op).
Dense ScalarOf(DType dtype, double v);

// Elementwise steps. Binary broadcasts numpy-style (right-aligned, a dim of size 1 stretches);
// shapes that do not broadcast are a runtime error.
Dense Binary(const ir::OpStmt& op, Fn fn, const Dense& a, const Dense& b);
Dense Unary(Fn fn, const Dense& a);
Dense CastTo(DType to, const Dense& a);

// Sum (sequential in f32 from +0, in index order), max or min (from the first element; an
// empty axis is a runtime error) over `axis` (in [0, rank)).
Dense Reduce(const ir::OpStmt& op, Fn fn, const Dense& a, int axis, bool keepdims);

// Layout steps: a box of `sizes` at `offsets` (runtime error when out of bounds); the
// concatenation of `parts` along `axis` (other dims must agree).
Dense Slice(const ir::OpStmt& op, const Dense& a, const std::vector<int64_t>& offsets,
            const std::vector<int64_t>& sizes);
Dense Concat(const ir::OpStmt& op, const std::vector<Dense>& parts, int axis);

// A composite op (tensor.softmax ...) on its evaluated operands (tensors, or rank-0 scalars).
Dense EvalComposite(const ir::OpStmt& op, const std::vector<Dense>& args);

}  // namespace ptox::interp
