// convert-tensor-to-tile, ops that run as kernels of their own: reductions along an axis other
// than a static last one (a loop inside the task accumulates tiles), transpose (tile.transpose of
// the last two dims, or permuted offsets of leading dims), slice and concat (copies at shifted
// offsets), reshape (rows regrouped with index arithmetic, or the last dim split / merged by
// tile.reshape), and copies: whole tensors, and tensor.store at offsets (argmax and gather:
// convert_index.cc).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/type_rules.h"
#include "passes/checks.h"
#include "passes/convert_tensor_to_tile.h"

namespace ptox::passes::convert {

using ir::OpCode;

// Copy tiles: up to 2048 columns, rows so that two tiles fill half of L2 (and of the on-chip
// budget), never more rows than a static dim has.
Tiling CopyTiling(const std::vector<ir::Dim>& shape, const Capabilities& caps) {
  Tiling t;
  const ir::Dim& c = shape.back();
  t.cols = c.is_static() ? std::clamp<int64_t>(c.size, 1, 2048) : 1024;
  if (shape.size() < 2) return t;
  const int64_t bytes = std::min(caps.l2_bytes, caps.onchip_budget_bytes) / 4;
  t.rows = std::clamp<int64_t>(FloorPow2(std::max<int64_t>(1, bytes / (4 * t.cols))), 1, 256);
  const ir::Dim& r = shape[shape.size() - 2];
  if (r.is_static() && r.size > 0) t.rows = std::min(t.rows, r.size);
  return t;
}

namespace {

checks::Shape ExtentsOf(const std::vector<NestDim>& dims) {
  checks::Shape shape;
  for (const NestDim& d : dims) shape.push_back(d.extent);
  return shape;
}

ir::Value LoadAt(BlockWriter& w, const ir::Value& t, std::vector<ir::Operand> offsets, int64_t rows,
                 int64_t cols) {
  offsets.insert(offsets.begin(), t);
  return w.Op(OpCode::kTileLoad, offsets, {}, ir::Type::Tile(rows, cols, t->type.dtype()));
}

void StoreAt(BlockWriter& w, const ir::Value& tile, const ir::Value& t,
             std::vector<ir::Operand> offsets) {
  offsets.insert(offsets.begin(), {tile, t});
  w.Op(OpCode::kTileStore, offsets);
}

ir::Operand Add(BlockWriter& w, const ir::Operand& a, const ir::Operand& b) {
  if (b.is_int() && b.int_value() == 0) return a;
  if (a.is_int() && a.int_value() == 0) return b;
  if (a.is_int() && b.is_int()) return ir::Operand::Int(a.int_value() + b.int_value());
  return w.Op(OpCode::kArithAdd, {a, b});
}

// Copies a region of `dom`'s shape from `src` to `dst`; each side's offsets are the domain's
// plus its shift (empty: none): a slice shifts the source, a concat piece the destination.
void Copy(BlockWriter& w, Extents& ext, const Capabilities& caps, const std::vector<ir::Dim>& dom,
          const ir::Value& src, const std::vector<ir::Operand>& src_shift, const ir::Value& dst,
          const std::vector<ir::Operand>& dst_shift) {
  const Tiling t = CopyTiling(dom, caps);
  Nest(w, DomainNest(w, ext, dom, t, false), [&](const std::vector<ir::Operand>& off, BlockWriter& outer) {
    std::vector<ir::Operand> from = off, to = off;
    for (size_t d = 0; d < src_shift.size(); ++d) from[d] = Add(outer, off[d], src_shift[d]);
    for (size_t d = 0; d < dst_shift.size(); ++d) to[d] = Add(outer, off[d], dst_shift[d]);
    BlockWriter body(w.span());
    Window win = WindowOf(dom, dom, off, t);
    StoreAt(body, LoadAt(body, src, from, win.rows, win.cols), dst, to);
    outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
  });
}

// The accumulator's identity: +0 for sums, -inf / +inf for max / min.
double Identity(OpCode op) {
  if (op == OpCode::kTensorSum) return 0.0;
  return op == OpCode::kTensorReduceMax ? -INFINITY : INFINITY;
}

// Reduction along `axis` of x: the domain is x's shape without the axis loop; each task runs a
// sequential loop over the axis accumulating tiles (row_* / col_* for the last two dims).
void Reduce(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
            const ir::Value& dst) {
  const ir::Value& x = op.args()[0].value();
  const auto& shape = x->type.shape();
  const int r = x->type.rank();
  const int axis = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1), r, "", op.span());
  const bool keep = ir::BoolAttr(op.attrs(), "keepdims", false);
  const std::string suffix(ir::OpName(op.op()).substr(7));  // sum, reduce_max, reduce_min
  const std::string fn = suffix == "sum" ? "add" : suffix.substr(7);
  const OpCode combine = *ir::LookupOp("tile." + fn);
  Tiling t = CopyTiling(shape, caps);
  if (r == 1) t.rows = 1;
  // The domain loops skip the reduced axis: it is whole (offset 0) and the task walks it.
  std::vector<NestDim> dims = DomainNest(w, ext, shape, t, false);
  const ir::Operand axis_extent = dims[axis].extent;
  if (fn != "add") checks::NonEmptyAxis(w, ir::OpName(op.op()), fn, axis, ExtentsOf(dims));
  if (!dst) return;
  dims[axis].whole = true;
  const bool rows = axis == r - 1, cols = r >= 2 && axis == r - 2;
  const std::string part_fn = fn == "add" ? "sum" : fn;
  // Accumulators: a column of rows (row_*), a row of columns (col_*), or whole tiles.
  const int64_t ar = cols ? 1 : t.rows, ac = rows ? 1 : t.cols;
  const int64_t step = rows ? t.cols : (cols ? t.rows : 1);
  // A sum accumulates in f32 and rounds once (docs/ops.md): bf16 / f16 partial sums are f32
  // tiles, cast to the dtype at the end. Max / min are exact in any dtype.
  const DType dtype = x->type.dtype();
  const DType acc_dtype = fn == "add" ? DType::kF32 : dtype;
  Nest(w, dims, [&](const std::vector<ir::Operand>& off, BlockWriter& outer) {
    BlockWriter body(w.span());
    ir::Value init = body.Op(OpCode::kTileFull, {ir::Operand::Float(Identity(op.op()))}, {},
                             ir::Type::Tile(ar, ac, acc_dtype), "init");
    ir::Value kv = ir::MakeValue(ir::Type::Scalar(DType::kIndex), "k");
    ir::Value carried = ir::MakeValue(init->type, "p"), acc = ir::MakeValue(init->type, "acc");
    BlockWriter loop(w.span());
    std::vector<ir::Operand> lo = off;
    lo[axis] = kv;
    ir::Value part = LoadAt(loop, x, lo, t.rows, t.cols);
    if (acc_dtype != dtype)
      part = loop.Op(OpCode::kTileCast, {part}, {}, ir::Type::Tile(t.rows, t.cols, acc_dtype));
    if (rows) part = loop.Op(*ir::LookupOp("tile.row_" + part_fn), {part});
    if (cols) part = loop.Op(*ir::LookupOp("tile.col_" + part_fn), {part});
    ir::Value next = loop.Op(combine, {carried, part});
    loop.Append(ir::YieldStmt::Make({next}, w.span()));
    body.Append(ir::ForStmt::Make(kv, ir::Operand::Int(0), axis_extent, ir::Operand::Int(step),
                                  ir::LoopKind::kSequential, {carried}, {init}, loop.Take(), {acc},
                                  w.span()));
    std::vector<ir::Operand> so = off;
    ir::Value out = acc;
    if (acc_dtype != dtype) out = body.Op(OpCode::kTileCast, {acc}, {}, acc->type.WithDType(dtype));
    if (!keep) {
      so.erase(so.begin() + axis);
      if (rows) out = body.Op(OpCode::kTileTranspose, {out});  // a column becomes a row of dst
    }
    StoreAt(body, out, dst, so);
    outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
  });
}

// Transpose of a leading dim d0 with the row dim: row `i` of an output tile is a row of x at
// swapped offsets, so a task copies its tile's rows one by one (1 x C tiles). The row loop runs
// from the tile's offset to a bound computed outside the task, so its region stays that tile.
void TransposeRows(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::Value& x,
                   int d0, const ir::Value& dst) {
  const auto& dom = dst->type.shape();
  const int r = static_cast<int>(dom.size());
  const Tiling t = CopyTiling(dom, caps);
  const std::vector<NestDim> dims = DomainNest(w, ext, dom, t, false);
  const ir::Operand rows = dims[r - 2].extent;
  Nest(w, dims, [&](const std::vector<ir::Operand>& off, BlockWriter& outer) {
    ir::Operand end = outer.Op(OpCode::kArithMin, {Add(outer, off[r - 2], ir::Operand::Int(t.rows)), rows});
    BlockWriter body(w.span());
    body.For(off[r - 2], end, ir::Operand::Int(1), ir::LoopKind::kSequential,
             [&](const ir::Value& row, BlockWriter& loop) {
               std::vector<ir::Operand> yo = off;
               yo[r - 2] = row;
               std::vector<ir::Operand> xo = yo;
               std::swap(xo[d0], xo[r - 2]);
               StoreAt(loop, LoadAt(loop, x, xo, 1, t.cols), dst, yo);
             });
    outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
  });
}

// A transpose of dims (d0, d1), d0 < d1, into dst: tiles of the last two dims loaded at swapped
// offsets (transposed by tile.transpose when the two are the last two), rows of x when d1 is the
// row dim; a leading dim with the column dim is that row case between two transposes of the
// last two dims, (d0 c) = (r c)(d0 r)(r c), through two intermediate tensors.
void TransposeDims(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::Value& x,
                   int d0, int d1, const ir::Value& dst) {
  const int r = x->type.rank();
  if (d0 < r - 2 && d1 == r - 2) return TransposeRows(w, ext, caps, x, d0, dst);
  if (d0 < r - 2 && d1 == r - 1) {
    auto swapped = [&](const ir::Value& v, int a, int b) {
      std::vector<ir::Dim> shape = v->type.shape();
      std::swap(shape[a], shape[b]);
      ir::Type type = ir::Type::Tensor(shape, v->type.dtype());
      std::vector<ir::Operand> sizes;
      for (const ir::Dim& d : shape)
        if (!d.is_static()) sizes.push_back(ext.Of(w, d));
      return w.Op(OpCode::kTensorEmpty, sizes, {}, type, "tr");
    };
    ir::Value a = swapped(x, r - 2, r - 1);
    TransposeDims(w, ext, caps, x, r - 2, r - 1, a);
    ir::Value b = swapped(a, d0, r - 2);
    TransposeDims(w, ext, caps, a, d0, r - 2, b);
    return TransposeDims(w, ext, caps, b, r - 2, r - 1, dst);
  }
  const auto& dom = dst->type.shape();
  const bool last_two = r >= 2 && d0 == r - 2 && d1 == r - 1;
  Tiling t = CopyTiling(dom, caps);
  if (last_two) t.rows = t.cols = std::min<int64_t>(64, t.cols);
  Nest(w, DomainNest(w, ext, dom, t, false), [&](const std::vector<ir::Operand>& off, BlockWriter& outer) {
    BlockWriter body(w.span());
    std::vector<ir::Operand> xo = off;
    std::swap(xo[d0], xo[d1]);
    Window win = WindowOf(dom, dom, off, t);
    ir::Value tile = last_two ? LoadAt(body, x, xo, win.cols, win.rows)
                              : LoadAt(body, x, xo, win.rows, win.cols);
    if (last_two) tile = body.Op(OpCode::kTileTranspose, {tile});
    StoreAt(body, tile, dst, off);
    outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
  });
}

void Transpose(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
               const ir::Value& dst) {
  const ir::Value& x = op.args()[0].value();
  const int r = x->type.rank();
  int d0 = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "dim0", -2), r, "", op.span());
  int d1 = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "dim1", -1), r, "", op.span());
  if (d0 > d1) std::swap(d0, d1);
  TransposeDims(w, ext, caps, x, d0, d1, dst);
}

// Reshape: the last dim split into / merged from the last two (tile.reshape), or rows copied in
// chunks whose sources are found by index arithmetic (any other reshape).
void Reshape(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
             const ir::Value& dst) {
  const ir::Value& x = op.args()[0].value();
  const auto& in = x->type.shape();
  const auto& out = dst->type.shape();
  const int ri = static_cast<int>(in.size()), ro = static_cast<int>(out.size());
  const bool split = ro == ri + 1 && std::equal(in.begin(), in.end() - 1, out.begin()) &&
                     in.back().is_static() && out[ro - 1].is_static() && out[ro - 2].is_static();
  const bool merge = ri == ro + 1 && std::equal(out.begin(), out.end() - 1, in.begin()) &&
                     out.back().is_static() && in[ri - 1].is_static() && in[ri - 2].is_static();
  if (split || merge) {
    const auto& lead = split ? in : out;  // leading dims shared by both, plus the flat dim
    std::vector<NestDim> dims;
    for (size_t d = 0; d + 1 < lead.size(); ++d) dims.push_back({ext.Of(w, lead[d]), 1, false});
    Nest(w, dims, [&](const std::vector<ir::Operand>& off, BlockWriter& outer) {
      BlockWriter body(w.span());
      std::vector<ir::Operand> flat = off, pair = off;
      flat.push_back(ir::Operand::Int(0));
      pair.insert(pair.end(), {ir::Operand::Int(0), ir::Operand::Int(0)});
      const int64_t a = (split ? out : in).end()[-2].size, b = (split ? out : in).back().size;
      ir::Value tile = split ? LoadAt(body, x, flat, 1, a * b) : LoadAt(body, x, pair, a, b);
      tile = body.Op(OpCode::kTileReshape, {tile}, {},
                     split ? ir::Type::Tile(a, b, x->type.dtype())
                           : ir::Type::Tile(1, a * b, x->type.dtype()));
      StoreAt(body, tile, dst, split ? pair : flat);
      outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
    });
    return;
  }
  // Otherwise each output row is copied in chunks that also lie within one row of x: tiles of
  // up to t.cols when the last dims are equal, else of the gcd of the two last sizes (1 when
  // one is symbolic). Each chunk finds its source by index arithmetic on the flat offset.
  const bool same_last = in.back() == out.back();
  Tiling t = CopyTiling(out, caps);
  t.rows = 1;
  if (!same_last)
    t.cols = in.back().is_static() && out.back().is_static()
                 ? std::max<int64_t>(1, std::gcd(in.back().size, out.back().size))
                 : 1;
  std::vector<NestDim> dims;
  for (int d = 0; d + 1 < ro; ++d) dims.push_back({ext.Of(w, out[d]), 1, false});
  dims.push_back({ext.Of(w, out.back()), t.cols, out.back().is_static() && out.back().size <= t.cols});
  std::vector<ir::Operand> in_ext;
  for (int d = 0; d < ri; ++d) in_ext.push_back(ext.Of(w, in[d]));
  Nest(w, dims, [&](const std::vector<ir::Operand>& off, BlockWriter& outer) {
    // The row-major flat index of the output row (of the chunk's first element when the last
    // dims differ), then the source position it comes from.
    ir::Operand flat = ir::Operand::Int(0);
    for (int d = 0; d + 1 < ro; ++d) {
      ir::Operand scaled = d == 0 ? ir::Operand::Int(0) : outer.Op(OpCode::kArithMul, {flat, dims[d].extent});
      flat = Add(outer, scaled, off[d]);
    }
    std::vector<ir::Operand> src(ri);
    if (same_last) {
      src[ri - 1] = off[ro - 1];
    } else {
      flat = Add(outer, outer.Op(OpCode::kArithMul, {flat, dims[ro - 1].extent}), off[ro - 1]);
      src[ri - 1] = outer.Op(OpCode::kArithRem, {flat, in_ext[ri - 1]});
      flat = outer.Op(OpCode::kArithDiv, {flat, in_ext[ri - 1]});
    }
    for (int d = ri - 2; d >= 1; --d) {
      src[d] = outer.Op(OpCode::kArithRem, {flat, in_ext[d]});
      flat = outer.Op(OpCode::kArithDiv, {flat, in_ext[d]});
    }
    if (ri >= 2) src[0] = flat;  // what is left is in range: the element counts are equal
    BlockWriter body(w.span());
    ir::Value tile = LoadAt(body, x, src, 1, t.cols);
    StoreAt(body, tile, dst, off);
    outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
  });
}

}  // namespace

void TransposeInto(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::Value& x,
                   int d0, int d1, const ir::Value& dst) {
  TransposeDims(w, ext, caps, x, std::min(d0, d1), std::max(d0, d1), dst);
}

void LowerStoreAt(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op) {
  const ir::Value& v = op.args()[0].value();
  const ir::Value& dst = op.args()[1].value();
  std::vector<ir::Operand> at;
  for (size_t k = 2; k < op.args().size(); ++k) {  // as index: compared with sizes below
    const ir::Operand& o = op.args()[k];
    const bool index = !o.is_value() || o.type().dtype() == DType::kIndex;
    at.push_back(index ? o : w.Op(OpCode::kArithCast, {o}, {}, ir::Type::Scalar(DType::kIndex)));
  }
  checks::Shape shape;
  for (const ir::Dim& d : dst->type.shape()) shape.push_back(ext.Of(w, d));
  for (int d = 0; d < dst->type.rank(); ++d)
    checks::Window(w, "tensor.store", d, at[d], ext.Of(w, v->type.shape()[d]), shape);
  Copy(w, ext, caps, v->type.shape(), v, {}, dst, at);
}

void LowerCopy(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::Value& src,
               const ir::Value& dst) {
  Copy(w, ext, caps, src->type.shape(), src, {}, dst, {});
}

// The run-time checks of a tensor.slice: every offset in range for its size (a dim taken whole
// too: its offset must be 0).
void SliceChecks(BlockWriter& w, Extents& ext, const ir::OpStmt& op) {
  const ir::Value& x = op.args()[0].value();
  const ir::Type& type = op.result()->type;
  checks::Shape shape;
  for (const ir::Dim& d : x->type.shape()) shape.push_back(ext.Of(w, d));
  for (int d = 0; d < x->type.rank(); ++d) {
    const ir::Operand& offset = op.args()[1 + d];
    const bool whole = type.shape()[d] == x->type.shape()[d];
    if (whole && offset.is_int() && offset.int_value() == 0) continue;
    checks::Window(w, "tensor.slice", d, offset,
                   whole ? shape[d] : ir::Operand::Int(type.shape()[d].size), shape);
  }
}

void LowerView(BlockWriter& w, Extents& ext, const ir::StmtRef& view) {
  const auto& op = ir::As<ir::OpStmt>(*view);
  if (op.op() == OpCode::kTensorSlice) SliceChecks(w, ext, op);
  w.Append(view);
}

void LowerAlone(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
                const ir::OpStmt* store) {
  // Without a store the result is unused: only the op's run-time checks remain (a dead op still
  // fails where the interpreter fails).
  const ir::Value dst = store ? store->args()[1].value() : nullptr;
  PTOX_ICHECK(!store || store->args()[0].value() == op.result())
      << "a standalone op stores its own result";
  const ir::Type& type = op.result()->type;
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kTensorReduce: return Reduce(w, ext, caps, op, dst);
    case ir::OpFamily::kTensorArgmax: return LowerArgmax(w, ext, caps, op, dst);
    case ir::OpFamily::kTensorGather: return LowerGather(w, ext, caps, op, dst);
    case ir::OpFamily::kTensorTranspose:
      if (dst) Transpose(w, ext, caps, op, dst);
      return;
    case ir::OpFamily::kTensorReshape:
      if (dst) Reshape(w, ext, caps, op, dst);
      return;
    case ir::OpFamily::kTensorSlice: {  // the domain is the slice; the source is shifted
      SliceChecks(w, ext, op);
      std::vector<ir::Operand> shift(op.args().begin() + 1, op.args().end());
      if (dst) Copy(w, ext, caps, type.shape(), op.args()[0].value(), shift, dst, {});
      return;
    }
    case ir::OpFamily::kTensorConcat: {  // each operand shifted along the axis by the ones before
      const int r = type.rank();
      const int axis = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1), r, "", op.span());
      std::vector<ir::Operand> at = {ir::Operand::Int(0)};
      for (const ir::Operand& a : op.args())
        at.push_back(Add(w, at.back(), ext.Of(w, a.type().shape()[axis])));
      const ir::Dim& size = type.shape()[axis];
      if (size.is_static() || ext.Bound(size.sym))
        checks::SameSize(w, "tensor.concat", at.back(), ext.Of(w, size),
                         "the operands add up to {} along axis " + std::to_string(axis) +
                             ", the result has {}");
      for (size_t k = 0; dst && k < op.args().size(); ++k) {
        std::vector<ir::Operand> shift(r, ir::Operand::Int(0));
        shift[axis] = at[k];
        const ir::Operand& a = op.args()[k];
        Copy(w, ext, caps, a.type().shape(), a.value(), {}, dst, shift);
      }
      return;
    }
    default: PTOX_ICHECK(false) << ir::OpName(op.op()) << " does not run alone";
  }
}

}  // namespace ptox::passes::convert
