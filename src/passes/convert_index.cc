// convert-tensor-to-tile for tensor.argmax and tensor.gather, which run as kernels of their own.
//
// argmax along the last axis: a task per block of rows walks the axis in column tiles; each tile's
// row_max and row_argmax (its first maximum in argmax's order) merge into the running best with
// tile.argmax_gt, which keeps the earlier tile on ties, so the result is the first maximum of the
// whole row (a NaN anywhere: the first NaN). Along another axis the tensor is first copied with the
// axis moved last (adjacent swaps, keeping the order of the other dims).
//
// gather: a task per block of ids loads them as one tile and, per id, extracts it (tile.extract),
// checks it against the table's rows (arith.assert naming tensor.gather: compiled code never reads
// outside the table) and copies that table row in column tiles. Every id is checked, also when the
// rows are empty, as the interpreter does.
#include <algorithm>
#include <climits>
#include <cmath>

#include "ops/type_rules.h"
#include "passes/checks.h"
#include "passes/convert_tensor_to_tile.h"

namespace ptox::passes::convert {
namespace {

using ir::OpCode;

ir::Operand Int(int64_t v) { return ir::Operand::Int(v); }
bool IsZero(const ir::Operand& o) { return o.is_int() && o.int_value() == 0; }

ir::Value LoadTile(BlockWriter& w, const ir::Value& t, std::vector<ir::Operand> offsets,
                   int64_t rows, int64_t cols) {
  offsets.insert(offsets.begin(), t);
  return w.Op(OpCode::kTileLoad, offsets, {}, ir::Type::Tile(rows, cols, t->type.dtype()));
}

void StoreTile(BlockWriter& w, const ir::Value& tile, const ir::Value& t,
               std::vector<ir::Operand> offsets) {
  offsets.insert(offsets.begin(), {tile, t});
  w.Op(OpCode::kTileStore, offsets);
}

// A new buffer of `shape` (tensor.empty sized by the symbols in scope).
ir::Value Buffer(BlockWriter& w, Extents& ext, const std::vector<ir::Dim>& shape, DType dtype) {
  std::vector<ir::Operand> sizes;
  for (const ir::Dim& d : shape)
    if (!d.is_static()) sizes.push_back(ext.Of(w, d));
  return w.Op(OpCode::kTensorEmpty, sizes, {}, ir::Type::Tensor(shape, dtype), "moved");
}

// x with dim `axis` moved last (the others keep their order), through one transposed copy per
// dim it passes.
ir::Value MoveLast(BlockWriter& w, Extents& ext, const Capabilities& caps, ir::Value x, int axis) {
  for (int d = axis; d + 1 < x->type.rank(); ++d) {
    std::vector<ir::Dim> shape = x->type.shape();
    std::swap(shape[d], shape[d + 1]);
    ir::Value next = Buffer(w, ext, shape, x->type.dtype());
    TransposeInto(w, ext, caps, x, d, d + 1, next);
    x = next;
  }
  return x;
}

// The first maximum of each row of a tile (R x 1 i32) at offsets `off` (last one 0) of v: one tile
// when the axis fits, else a loop over column tiles merging each tile's best into the running one.
ir::Value RowsArgmax(BlockWriter& body, const ir::Value& v, const std::vector<ir::Operand>& off,
                     Tiling t, const ir::Operand& len, bool one_tile) {
  if (one_tile)
    return body.Op(OpCode::kTileRowArgmax, {LoadTile(body, v, off, t.rows, t.cols)}, {}, {}, "idx");
  const DType dtype = v->type.dtype();
  // (-inf, 0) is the identity of the merge: a value that does not beat -inf is -inf, whose first
  // occurrence is index 0 unless an earlier tile had it.
  ir::Value init_v = body.Op(OpCode::kTileFull, {ir::Operand::Float(-INFINITY)}, {},
                             ir::Type::Tile(t.rows, 1, dtype), "best");
  ir::Value init_i =
      body.Op(OpCode::kTileFull, {Int(0)}, {}, ir::Type::Tile(t.rows, 1, DType::kI32), "at");
  ir::Value kv = ir::MakeValue(ir::Type::Scalar(DType::kIndex), "k");
  ir::Value bv = ir::MakeValue(init_v->type, "bv"), bi = ir::MakeValue(init_i->type, "bi");
  ir::Value rv = ir::MakeValue(init_v->type, "best"), ri = ir::MakeValue(init_i->type, "idx");
  BlockWriter loop(body.span());
  std::vector<ir::Operand> lo = off;
  lo.back() = kv;
  ir::Value part = LoadTile(loop, v, lo, t.rows, t.cols);
  ir::Value pv = loop.Op(OpCode::kTileRowMax, {part});
  ir::Value pi = loop.Op(OpCode::kTileRowArgmax, {part});
  ir::Value k32 = loop.Op(OpCode::kArithCast, {kv}, {}, ir::Type::Scalar(DType::kI32));
  ir::Value gi = loop.Op(OpCode::kTileAdd, {pi, k32});
  ir::Value take = loop.Op(OpCode::kTileArgmaxGt, {pv, bv});
  ir::Value nv = loop.Op(OpCode::kTileSelect, {take, pv, bv});
  ir::Value ni = loop.Op(OpCode::kTileSelect, {take, gi, bi});
  loop.Append(ir::YieldStmt::Make({nv, ni}, body.span()));
  body.Append(ir::ForStmt::Make(kv, Int(0), len, Int(t.cols), ir::LoopKind::kSequential, {bv, bi},
                                {init_v, init_i}, loop.Take(), {rv, ri}, body.span()));
  return ri;
}

}  // namespace

void LowerArgmax(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
                 const ir::Value& dst) {
  const ir::Value& x = op.args()[0].value();
  const int r = x->type.rank();
  const int axis = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1), r, "", op.span());
  const bool keep = ir::BoolAttr(op.attrs(), "keepdims", false);
  checks::Shape shape;
  for (const ir::Dim& d : x->type.shape()) shape.push_back(ext.Of(w, d));
  checks::NonEmptyAxis(w, "tensor.argmax", "argmax", axis, shape);
  if (!shape[axis].is_int()) {  // static sizes: the type rule
    ir::Value ok = w.Op(OpCode::kArithLe, {shape[axis], Int(int64_t{INT32_MAX} + 1)}, {}, {}, "ok");
    checks::Assert(w, ok, "tensor.argmax",
                   "the indices of axis " + std::to_string(axis) + " of a tensor of shape " +
                       checks::ShapeHoles(shape) + " do not fit in i32",
                   shape);
  }
  if (!dst) return;
  const ir::Value v = MoveLast(w, ext, caps, x, axis);
  const std::vector<ir::Dim>& vs = v->type.shape();
  Tiling t = CopyTiling(vs, caps);
  if (r == 1) t.rows = 1;
  const std::vector<NestDim> dims = DomainNest(w, ext, vs, t, /*whole_cols=*/true);
  const bool one_tile = vs.back().is_static() && vs.back().size <= t.cols;
  Nest(w, dims, [&](const std::vector<ir::Operand>& off, BlockWriter& outer) {
    BlockWriter body(w.span());
    ir::Value idx = RowsArgmax(body, v, off, t, dims.back().extent, one_tile);
    std::vector<ir::Operand> at(off.begin(), off.end() - 1);
    if (keep && axis == r - 1) {  // a column of dst [..., rows, 1]
      at.push_back(Int(0));
    } else {  // the rows lie along dst's last dim
      idx = body.Op(OpCode::kTileTranspose, {idx});
      if (keep) at.insert(at.begin() + axis, Int(0));
    }
    StoreTile(body, idx, dst, at);
    outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
  });
}

namespace {

// Ids per gather task: rows of at most a quarter of L2 (and of the on-chip budget) in all, 1..256.
int64_t IdsPerTask(const ir::Dim& cols, DType dtype, const Capabilities& caps) {
  if (!cols.is_static()) return 16;
  const int64_t bytes = std::min(caps.l2_bytes, caps.onchip_budget_bytes) / 4;
  const int64_t row = std::max<int64_t>(1, cols.size * DTypeBytes(dtype));
  return std::clamp<int64_t>(FloorPow2(std::max<int64_t>(1, bytes / row)), 1, 256);
}

// One id of a gather task: extract it, check it against the table's rows, copy its row in column
// tiles of `cols` to dst at (lead..., j, c). `where` are the id's indices for the message.
void GatherRow(BlockWriter& w, const ir::OpStmt& op, const ir::Value& ids_tile,
               const ir::Operand& col, const std::vector<ir::Operand>& where,
               const ir::Operand& rows, const ir::Operand& width, int64_t cols,
               const ir::Value& dst) {
  const ir::Value& table = op.args()[0].value();
  ir::Value id = w.Op(OpCode::kTileExtract, {ids_tile, Int(0), col}, {}, {}, "id");
  ir::Value at = w.Op(OpCode::kArithCast, {id}, {}, ir::Type::Scalar(DType::kIndex), "id");
  ir::Value nonneg = w.Op(OpCode::kArithGe, {at, Int(0)}, {}, {}, "ok");
  ir::Operand ok = checks::And(w, nonneg, w.Op(OpCode::kArithLt, {at, rows}, {}, {}, "ok"));
  std::string holes;
  for (size_t d = 0; d < where.size(); ++d) holes += d ? ", {}" : "{}";
  std::vector<ir::Operand> values = {at};
  values.insert(values.end(), where.begin(), where.end());
  values.insert(values.end(), {rows, rows});
  checks::Assert(w, ok, "tensor.gather",
                 "id {} at ids[" + holes + "] is out of range [0, {}) (the table has {} rows)",
                 values);
  if (!dst) return;
  if (op.attrs().count("format")) {  // the row's blocks, whole, dequantized
    const int64_t bytes = table->type.shape()[1].size;
    ir::Value row = LoadTile(w, table, {at, Int(0)}, 1, bytes);
    ir::Attrs attrs = {{"format", op.attrs().at("format")}};
    ir::Value values = w.Op(OpCode::kTileDequantize, {row}, attrs, {}, "row");
    std::vector<ir::Operand> to = where;
    to.push_back(Int(0));
    StoreTile(w, values, dst, to);
    return;
  }
  auto copy = [&](const ir::Operand& c, BlockWriter& b) {
    std::vector<ir::Operand> to = where;
    to.push_back(c);
    StoreTile(b, LoadTile(b, table, {at, c}, 1, cols), dst, to);
  };
  if (width.is_int() && width.int_value() <= cols) return copy(Int(0), w);
  w.For(Int(0), width, Int(cols), ir::LoopKind::kSequential,
        [&](const ir::Value& c, BlockWriter& b) { copy(c, b); });
}

}  // namespace

void LowerGather(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
                 const ir::Value& dst) {
  const ir::Value& table = op.args()[0].value();
  const ir::Value& ids = op.args()[1].value();
  const std::vector<ir::Dim>& id_shape = ids->type.shape();
  const int q = ids->type.rank();
  const ir::Operand rows = ext.Of(w, table->type.shape()[0]);
  const ir::Operand width = ext.Of(w, table->type.shape()[1]);
  const int64_t cols = CopyTiling(table->type.shape(), caps).cols;
  const Tiling t{1, IdsPerTask(table->type.shape()[1], table->type.dtype(), caps)};
  std::vector<NestDim> dims;
  for (int d = 0; d < q; ++d) {
    dims.push_back({ext.Of(w, id_shape[d]), d == q - 1 ? t.cols : 1, false});
    if (id_shape[d].is_static() && id_shape[d].size > 0 && id_shape[d].size <= dims.back().step)
      dims.back().whole = true;
  }
  const ir::Operand count = dims.back().extent;
  Nest(w, dims, [&](const std::vector<ir::Operand>& off, BlockWriter& outer) {
    // The ids [i, end) of this task; end is computed before the task, so its region is that box.
    const ir::Operand& i = off.back();
    ir::Operand end =
        i.is_int() && count.is_int()
            ? Int(std::min(i.int_value() + t.cols, count.int_value()))
            : outer.Op(
                  OpCode::kArithMin,
                  {IsZero(i) ? Int(t.cols) : outer.Op(OpCode::kArithAdd, {i, Int(t.cols)}), count});
    BlockWriter body(w.span());
    ir::Value tile = LoadTile(body, ids, off, 1, t.cols);
    body.For(i, end, Int(1), ir::LoopKind::kSequential, [&](const ir::Value& j, BlockWriter& b) {
      ir::Operand col = IsZero(i) ? ir::Operand(j) : b.Op(OpCode::kArithSub, {j, i});
      std::vector<ir::Operand> where(off.begin(), off.end() - 1);
      where.push_back(j);
      GatherRow(b, op, tile, col, where, rows, width, cols, dst);
    });
    outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
  });
}

}  // namespace ptox::passes::convert
