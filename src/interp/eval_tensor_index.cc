// Tensor-level compares, select, causal_mask, argmax and gather in the reference interpreter:
// the ops whose values are not (only) floats — bool masks, i32 indices, integer ids.
#include <climits>
#include <cmath>
#include <string>

#include "interp/eval_tensor.h"
#include "kernels/quant.h"
#include "ops/type_rules.h"

namespace ptox::interp {
namespace {

int64_t Product(const std::vector<int64_t>& shape, size_t lo, size_t hi) {
  int64_t n = 1;
  for (size_t d = lo; d < hi; ++d) n *= shape[d];
  return n;
}

// "[1, 2]": the multi-index of element `linear` of `shape`.
std::string IndexStr(const std::vector<int64_t>& shape, int64_t linear) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

}  // namespace

Dense Compare(const ir::OpStmt& op, Fn fn, const Dense& a, const Dense& b) {
  const Broadcast bc = BroadcastOf(op, {&a, &b});
  Dense out = MakeDense(op, DType::kBool, bc.shape);
  int64_t k = 0;
  Walk<2>(bc.shape, {bc.strides[0], bc.strides[1]}, {0, 0}, [&](const std::array<int64_t, 2>& o) {
    out.i[k++] = FloatCompare(fn, a.f[o[0]], b.f[o[1]]) ? 1 : 0;
  });
  return out;
}

Dense Select(const ir::OpStmt& op, const Dense& cond, const Dense& a, const Dense& b) {
  const Broadcast bc = BroadcastOf(op, {&cond, &a, &b});
  Dense out = MakeDense(op, a.dtype, bc.shape);
  int64_t k = 0;
  Walk<3>(bc.shape, {bc.strides[0], bc.strides[1], bc.strides[2]}, {0, 0, 0},
          [&](const std::array<int64_t, 3>& o) {
            out.f[k++] = cond.i[o[0]] != 0 ? a.f[o[1]] : b.f[o[2]];
          });
  return out;
}

// s - t is within (-2^48, 2^48) (element counts are bounded), so comparing it with the offset
// cannot overflow whatever the offset is.
Dense CausalMask(const Dense& x, int64_t offset) {
  Dense out = x;
  const int r = x.rank();
  const int64_t rows = x.shape[r - 2], cols = x.shape[r - 1];
  for (int64_t k = 0; k < out.numel(); ++k) {
    const int64_t s = k % cols, t = (k / cols) % rows;
    if (s - t > offset) out.f[k] = -INFINITY;
  }
  return out;
}

Dense Argmax(const ir::OpStmt& op, const Dense& a, int axis, bool keepdims) {
  const int64_t outer = Product(a.shape, 0, axis), len = a.shape[axis];
  const int64_t inner = Product(a.shape, axis + 1, a.shape.size());
  PTOX_RUNTIME_CHECK(len > 0 || outer == 0 || inner == 0)
      << OpWhere(op) << ": argmax over the empty axis " << axis << " of a tensor of shape "
      << ShapeStr(a.shape);
  PTOX_RUNTIME_CHECK(len - 1 <= INT32_MAX)
      << OpWhere(op) << ": the indices of axis " << axis << " of a tensor of shape "
      << ShapeStr(a.shape) << " do not fit in i32";
  std::vector<int64_t> shape = a.shape;
  if (keepdims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  Dense out = MakeDense(op, DType::kI32, shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* line = a.f.data() + o * len * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < len; ++k)
        if (FloatCompare(Fn::kArgmaxGt, line[k * inner], line[best * inner])) best = k;
      out.i[o * inner + i] = best;
    }
  }
  return out;
}

Dense Gather(const ir::OpStmt& op, const Dense& table, const Dense& ids) {
  const int64_t rows = table.shape[0], cols = table.shape[1];
  // Every id is checked, also when the rows are empty (cols = 0), as numpy's take does.
  for (int64_t k = 0; k < ids.numel(); ++k) {
    const int64_t id = ids.i[k];
    PTOX_RUNTIME_CHECK(id >= 0 && id < rows)
        << OpWhere(op) << ": id " << id << " at ids" << IndexStr(ids.shape, k)
        << " is out of range [0, " << rows << ") (the table has " << rows << " rows)";
  }
  std::vector<int64_t> shape = ids.shape;
  if (op.attrs().count("format")) {  // rows of GGUF blocks, dequantized
    const quant::Format f = ir::QuantFormat(op.attrs());
    const int64_t bb = quant::BlockBytes(f), width = cols / bb * quant::kBlock;
    shape.push_back(width);
    Dense out = MakeDense(op, DType::kF32, shape);
    std::vector<uint8_t> row(static_cast<size_t>(cols));
    for (int64_t k = 0; k < ids.numel(); ++k) {
      for (int64_t c = 0; c < cols; ++c) row[c] = static_cast<uint8_t>(table.i[ids.i[k] * cols + c]);
      quant::DequantizeRow(f, row.data(), width, out.f.data() + k * width);
    }
    return out;
  }
  shape.push_back(cols);
  Dense out = MakeDense(op, table.dtype, shape);
  for (int64_t k = 0; k < ids.numel(); ++k)
    std::copy_n(table.f.begin() + ids.i[k] * cols, cols, out.f.begin() + k * cols);
  return out;
}

}  // namespace ptox::interp
