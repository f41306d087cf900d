// tile.load / tile.store / tile.full: moving tiles between caller tensors (any strides, any
// alignment) and the interpreter, with bounds checks and the valid region of edge tiles.
#include <algorithm>
#include <cstring>
#include <string>

#include "interp/eval.h"
#include "interp/numeric.h"
#include "kernels/scalar.h"

namespace ptox::interp {

Tile Tile::Make(int64_t rows, int64_t cols, DType dtype) {
  Tile t;
  t.rows = rows;
  t.cols = cols;
  t.dtype = dtype;
  t.valid_rows = rows;
  t.valid_cols = cols;
  if (IsFloat(dtype))
    t.f.assign(rows * cols, 0.0f);
  else
    t.i.assign(rows * cols, 0);
  return t;
}

namespace {

// The 2-D window of a tensor that a tile at `offsets` covers.
struct Window {
  char* base = nullptr;                    // element at the offsets
  int64_t row_stride = 0, col_stride = 0;  // in bytes
  int64_t rows = 0, cols = 0;  // tensor extent from the offsets to the end of each tile dim
};

std::string List(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

// Evaluates and bounds-checks the offsets at args[first..]; every offset must be in [0, dim).
Window Locate(const ir::OpStmt& op, const Env& env, const Tensor& t, size_t first) {
  std::vector<int64_t> off;
  for (size_t k = first; k < op.args().size(); ++k) off.push_back(env.GetIndex(op.args()[k]));
  const int r = t.rank();
  bool ok = static_cast<int>(off.size()) == r;
  for (int d = 0; ok && d < r; ++d) ok = off[d] >= 0 && off[d] < t.shape[d];
  PTOX_RUNTIME_CHECK(ok) << OpWhere(op) << ": offsets " << List(off)
                         << " are out of bounds for a tensor of shape " << t.ShapeString()
                         << " (each offset must be in [0, dim))";
  std::vector<int64_t> st = t.EffectiveStrides();
  const int64_t bytes = DTypeBytes(t.dtype);
  int64_t elem = 0;
  for (int d = 0; d < r; ++d) elem += off[d] * st[d];
  Window w;
  w.base = static_cast<char*>(t.data) + elem * bytes;
  w.col_stride = st[r - 1] * bytes;
  w.cols = t.shape[r - 1] - off[r - 1];
  w.row_stride = r >= 2 ? st[r - 2] * bytes : 0;
  w.rows = r >= 2 ? t.shape[r - 2] - off[r - 2] : 1;
  return w;
}

double PadValue(const ir::OpStmt& op) {
  auto it = op.attrs().find("pad");
  return it == op.attrs().end() ? 0.0 : std::get<double>(it->second);
}

RtValue EvalLoad(const ir::OpStmt& op, const Env& env) {
  const Tensor& t = env.GetTensor(op.args()[0]);
  const ir::Type& type = op.result()->type;
  Window w = Locate(op, env, t, 1);
  Tile tile = Tile::Make(type.rows(), type.cols(), type.dtype());
  tile.valid_rows = std::min(tile.rows, w.rows);
  tile.valid_cols = std::min(tile.cols, w.cols);
  Scalar pad;
  Cast(Scalar::Float(DType::kF32, static_cast<float>(PadValue(op))), tile.dtype, &pad);
  for (int64_t r = 0; r < tile.rows; ++r) {
    for (int64_t c = 0; c < tile.cols; ++c) {
      const bool in = tile.IsValid(r, c);
      const char* p = in ? w.base + r * w.row_stride + c * w.col_stride : nullptr;
      if (tile.is_float())
        tile.F(r, c) = in ? ReadFloat(t.dtype, p) : pad.f;
      else
        tile.I(r, c) = in ? ReadInt(t.dtype, p) : pad.i;
    }
  }
  return std::make_shared<const Tile>(std::move(tile));
}

void EvalStore(const ir::OpStmt& op, const Env& env) {
  const Tile& tile = env.GetTile(op.args()[0]);
  const Tensor& t = env.GetTensor(op.args()[1]);
  Window w = Locate(op, env, t, 2);
  const int64_t rows = std::min(tile.valid_rows, w.rows);
  const int64_t cols = std::min(tile.valid_cols, w.cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      char* p = w.base + r * w.row_stride + c * w.col_stride;
      if (tile.is_float())
        WriteFloat(t.dtype, p, tile.F(r, c));
      else
        WriteInt(t.dtype, p, tile.I(r, c));
    }
  }
}

RtValue EvalFull(const ir::OpStmt& op, const Env& env) {
  const ir::Type& type = op.result()->type;
  Scalar s = env.GetScalar(op.args()[0], type.dtype(), OpWhere(op));
  Tile tile = Tile::Make(type.rows(), type.cols(), type.dtype());
  if (tile.is_float())
    std::fill(tile.f.begin(), tile.f.end(), s.f);
  else
    std::fill(tile.i.begin(), tile.i.end(), s.i);
  return std::make_shared<const Tile>(std::move(tile));
}

}  // namespace

std::optional<RtValue> EvalMemoryOp(const ir::OpStmt& op, const Env& env) {
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kLoad: return EvalLoad(op, env);
    case ir::OpFamily::kStore: EvalStore(op, env); return std::nullopt;
    case ir::OpFamily::kFull: return EvalFull(op, env);
    default: PTOX_ICHECK(false) << "not a memory op: " << OpWhere(op);
  }
  return std::nullopt;
}

}  // namespace ptox::interp
