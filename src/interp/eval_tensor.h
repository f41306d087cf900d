// Dense tensor values and the primitive tensor-level steps of the reference interpreter, shared by
// eval_tensor.cc (the ops) and eval_tensor_composite.cc (composites built from these steps).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "interp/eval.h"
#include "interp/numeric.h"

namespace ptox::interp {

// A tensor value being computed, row-major: float dtypes hold f32 elements in `f`, each exactly
// representable in `dtype` (every step rounds its result to the dtype); integer and bool dtypes
// (compare results, argmax indices, gather ids) hold `i`. Rank 0 (one element) is a scalar
// operand.
struct Dense {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<float> f;
  std::vector<int64_t> i;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const { return static_cast<int64_t>(IsFloat(dtype) ? f.size() : i.size()); }
};

// "3x4" ("scalar" for rank 0), for messages.
std::string ShapeStr(const std::vector<int64_t>& shape);
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape);

// Calls f(offsets) for every index of `shape` in row-major order; offsets[i] is base[i] plus the
// dot product of the index with strides[i] (in elements; a 0 stride broadcasts).
template <size_t N, typename F>
void Walk(const std::vector<int64_t>& shape, const std::array<std::vector<int64_t>, N>& strides,
          std::array<int64_t, N> off, F&& f) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return;
  std::vector<int64_t> idx(shape.size(), 0);
  for (;;) {
    f(off);
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Numpy broadcasting of operands: the result shape and, per operand, its element strides in that
// shape (0 along stretched and missing dims). Shapes that do not broadcast are an internal error
// (the type rules and symbol binding rule them out).
struct Broadcast {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;
};
Broadcast BroadcastOf(const ir::OpStmt& op, const std::vector<const Dense*>& xs);

// A zero-filled value; a runtime error naming `op` when the element count overflows or cannot be
// allocated.
Dense MakeDense(const ir::OpStmt& op, DType dtype, std::vector<int64_t> shape);
// A tensor view (any strides) as a dense value, and a dense value into a view of its shape.
Dense ReadTensor(const ir::OpStmt& op, const Tensor& t);
void WriteTensor(const Dense& v, const Tensor& t);
// A zero-filled tensor of `shape` that the environment owns.
const Tensor* OwnedTensor(const ir::OpStmt& op, Env& env, DType dtype,
                          const std::vector<int64_t>& shape);
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

// Compare / select / index steps (eval_tensor_index.cc). Compare gives a bool value (`fn` one of
// the comparisons); Select takes a where cond is true, else b (all three broadcast); CausalMask
// sets -inf where s > t + offset in the last two dims [..., t, s]; Argmax gives the i32 index of
// the first maximum along `axis` (argmax's order: NaN first, +0 above -0); Gather the rows of a
// 2-D table at integer ids. Runtime errors: an empty argmax axis, an index past i32, an id out of
// range.
Dense Compare(const ir::OpStmt& op, Fn fn, const Dense& a, const Dense& b);
Dense Select(const ir::OpStmt& op, const Dense& cond, const Dense& a, const Dense& b);
Dense CausalMask(const Dense& x, int64_t offset);
Dense Argmax(const ir::OpStmt& op, const Dense& a, int axis, bool keepdims);
Dense Gather(const ir::OpStmt& op, const Dense& table, const Dense& ids);

// A composite op (tensor.softmax ...) on its evaluated operands (tensors, or rank-0 scalars).
Dense EvalComposite(const ir::OpStmt& op, const std::vector<Dense>& args);

}  // namespace ptox::interp
