// convert-tensor-to-tile: lowers every tensor-level group (an incore scope of tensor ops, see
// fuse-elementwise) to a nest of parallel loops over the group's domain in tiles, around one
// tile-level incore scope: leaves are tile.loads (broadcast operands load a 1-row or 1-column
// tile and combine through row_expand / col_expand), elementwise ops become tile ops of the same
// name, row reductions tile.row_*, a matmul a K loop of tile.matmul_acc with its epilogue applied
// to the accumulator, and each group output a tile.store. Ops outside any group are first put in
// groups of their own, so the pass also works with fusion off.
//
// Tile shapes come from the target's capabilities, never its name: elementwise groups size
// tiles so the values live at once fit the on-chip budget; row groups hold whole rows (the last
// dim must be static); matmul tiles set the task grain where the target reads matmul operands
// in place, else they are the largest square T (K slice 4T) whose A, B, packed-B and C tiles
// fit in L2. Partial tiles at the end of every dim (static or symbolic) are handled
// by the tiles' valid regions. Requires: no composites. Establishes: no tensor ops except
// tensor.empty, tensor.dim and the slices, reshapes and order-keeping transposes read in place
// (views, passes/views.h), a slice after the checks of its offsets. Complexity: O(ops) per group.
#include "passes/convert_tensor_to_tile.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ops/type_rules.h"
#include "passes/checks.h"
#include "passes/tensor_groups.h"

namespace ptox::passes {
namespace convert {

using ir::OpCode;
using ir::OpFamily;

int64_t FloorPow2(int64_t x) {
  int64_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

void Nest(BlockWriter& w, const std::vector<NestDim>& dims, const NestBody& body) {
  std::vector<ir::Operand> offsets;
  std::function<void(size_t, BlockWriter&)> level = [&](size_t k, BlockWriter& bw) {
    if (k == dims.size()) return body(offsets, bw);
    if (dims[k].whole) {
      offsets.push_back(ir::Operand::Int(0));
      level(k + 1, bw);
      offsets.pop_back();
      return;
    }
    bw.For(ir::Operand::Int(0), dims[k].extent, ir::Operand::Int(dims[k].step),
           ir::LoopKind::kParallel, [&](const ir::Value& iv, BlockWriter& inner) {
             offsets.push_back(iv);
             level(k + 1, inner);
             offsets.pop_back();
           });
  };
  level(0, w);
}

std::vector<NestDim> DomainNest(BlockWriter& w, Extents& ext, const std::vector<ir::Dim>& domain,
                                Tiling t, bool whole_cols) {
  const int r = static_cast<int>(domain.size());
  std::vector<NestDim> dims;
  for (int d = 0; d < r; ++d) {
    NestDim n{ext.Of(w, domain[d]), 1, false};
    if (d == r - 1) n.step = t.cols, n.whole = whole_cols;
    if (d == r - 2) n.step = t.rows;
    // A static dim one tile covers needs no loop.
    if (domain[d].is_static() && domain[d].size <= n.step && domain[d].size > 0) n.whole = true;
    dims.push_back(n);
  }
  return dims;
}

Window WindowOf(const std::vector<ir::Dim>& shape, const std::vector<ir::Dim>& domain,
                const std::vector<ir::Operand>& offsets, Tiling t) {
  const int r = static_cast<int>(domain.size()), s = static_cast<int>(shape.size());
  Window win;
  for (int k = 0; k < s; ++k) {
    const int d = k + r - s;
    const bool bc = shape[k] == ir::Dim::Static(1) && domain[d] != ir::Dim::Static(1);
    win.offsets.push_back(bc ? ir::Operand::Int(0) : offsets[d]);
    if (k == s - 1) win.cols = bc ? 1 : t.cols;
    if (k == s - 2 && d == r - 2) win.rows = bc ? 1 : t.rows;
  }
  return win;
}

Tiling MatmulTiling(const Capabilities& caps, int64_t m, int64_t n, int64_t k, int64_t* tk) {
  const MatmulTiles tiles = caps.policy->Matmul(caps, m, n, k);
  Tiling t{tiles.rows, tiles.cols};
  *tk = tiles.k;
  if (m > 0) t.rows = std::min(t.rows, m);
  if (n > 0) t.cols = std::min(t.cols, n);
  if (k > 0) *tk = std::min(*tk, k);
  return t;
}

}  // namespace convert

namespace {

using convert::Tiling;
using ir::OpCode;
using ir::OpFamily;

std::optional<OpCode> TileOp(std::string_view tensor_name, std::string_view prefix) {
  return ir::LookupOp(std::string(prefix) + std::string(tensor_name.substr(7)));
}

// Builds the tile-level body of one group at one point of its domain.
class TileBody {
 public:
  TileBody(BlockWriter& w, const std::vector<ir::Dim>& domain,
           const std::vector<ir::Operand>& offsets, Tiling t)
      : w_(w), domain_(domain), offsets_(offsets), t_(t) {}

  void Bind(const ir::Value& tensor, ir::Value tile) { tiles_[tensor.get()] = std::move(tile); }

  // The tile of a tensor value: computed in the group, or loaded (a leaf).
  ir::Value Get(const ir::Value& v) {
    if (auto it = tiles_.find(v.get()); it != tiles_.end()) return it->second;
    convert::Window win = convert::WindowOf(v->type.shape(), domain_, offsets_, t_);
    std::vector<ir::Operand> args = {v};
    args.insert(args.end(), win.offsets.begin(), win.offsets.end());
    ir::Value tile = w_.Op(OpCode::kTileLoad, args, {},
                           ir::Type::Tile(win.rows, win.cols, v->type.dtype()), v->name);
    tiles_[v.get()] = tile;
    return tile;
  }

  void Apply(const ir::OpStmt& op) {
    const ir::Value& res = op.result();
    ir::Value tile;
    switch (ir::FamilyOf(op.op())) {
      case OpFamily::kTensorBinary: tile = Binary(op); break;
      case OpFamily::kTensorCompare:
      case OpFamily::kTensorSelect: tile = Elementwise(op); break;
      case OpFamily::kTensorCausalMask: tile = CausalMask(op); break;
      case OpFamily::kTensorUnary:
        tile = w_.Op(*TileOp(ir::OpName(op.op()), "tile."), {Get(op.args()[0].value())}, {}, {},
                     res->name);
        break;
      case OpFamily::kTensorCast: {
        ir::Value a = Get(op.args()[0].value());
        tile = w_.Op(OpCode::kTileCast, {a}, {},
                     ir::Type::Tile(a->type.rows(), a->type.cols(), res->type.dtype()), res->name);
        break;
      }
      case OpFamily::kTensorReduce: {
        static const std::map<OpCode, OpCode> kRow = {{OpCode::kTensorSum, OpCode::kTileRowSum},
                                                      {OpCode::kTensorReduceMax, OpCode::kTileRowMax},
                                                      {OpCode::kTensorReduceMin, OpCode::kTileRowMin}};
        tile = w_.Op(kRow.at(op.op()), {Get(op.args()[0].value())}, {}, {}, res->name);
        break;
      }
      default: PTOX_ICHECK(false) << ir::OpName(op.op()) << " in an elementwise group";
    }
    Bind(res, tile);
  }

  // Stores value v into dst at this point. A non-keepdims row reduction (dst one rank lower
  // than the domain) is a column per tile: transposed into a row of dst.
  void Store(const ir::Value& v, const ir::Value& dst) {
    ir::Value tile = Get(v);
    std::vector<ir::Operand> args;
    if (dst->type.rank() + 1 == static_cast<int>(domain_.size()) && tile->type.cols() == 1) {
      tile = w_.Op(OpCode::kTileTranspose, {tile});
      args.assign(offsets_.begin(), offsets_.end() - 1);
    } else {
      args = convert::WindowOf(dst->type.shape(), domain_, offsets_, t_).offsets;
    }
    args.insert(args.begin(), {tile, dst});
    w_.Op(OpCode::kTileStore, args);
  }

 private:
  // A scalar operand of a tensor op as its tile op takes it: an SSA scalar of another dtype (an
  // f32 scalar with a bf16 tensor) is cast first, the conversion the tensor op defines.
  ir::Operand ScalarAs(const ir::Operand& s, DType dtype) {
    if (!s.is_value() || s.type().dtype() == dtype) return s;
    return w_.Op(OpCode::kArithCast, {s}, {}, ir::Type::Scalar(dtype), s.value()->name);
  }

  std::pair<int64_t, int64_t> Shape(const ir::Value& tile) const {
    return {tile->type.rows(), tile->type.cols()};
  }

  // Broadcasts a tile to rows x cols for an arithmetic op: -0.0 + x is x for every x but a
  // signalling NaN, which it makes quiet as the op would, so expanding through row_expand_add /
  // col_expand_add of a -0.0 tile is exact where it is used.
  ir::Value Expand(ir::Value a, int64_t rows, int64_t cols) {
    if (a->type.rows() == rows && a->type.cols() == cols) return a;
    const DType d = a->type.dtype();
    auto neg_zero = [&](int64_t r, int64_t c) {
      return w_.Op(OpCode::kTileFull, {ir::Operand::Float(-0.0)}, {}, ir::Type::Tile(r, c, d));
    };
    if (a->type.rows() != rows) {  // a is 1 x c: repeat it down the rows
      a = w_.Op(OpCode::kTileColExpandAdd, {neg_zero(rows, a->type.cols()), a});
    }
    if (a->type.cols() != cols) {  // a is r x 1: repeat it along the columns
      a = w_.Op(OpCode::kTileRowExpandAdd, {neg_zero(rows, cols), a});
    }
    return a;
  }

  ir::Value Binary(const ir::OpStmt& op) {
    const ir::Value& res = op.result();
    const convert::Window want = convert::WindowOf(res->type.shape(), domain_, offsets_, t_);
    ir::Value a = Get(op.args()[0].value());
    const ir::Operand& rhs = op.args()[1];
    const std::string_view name = ir::OpName(op.op());
    const OpCode tile_op = *TileOp(name, "tile.");
    if (!rhs.is_value() || !rhs.type().is_tensor())
      return w_.Op(tile_op, {Expand(a, want.rows, want.cols), ScalarAs(rhs, a->type.dtype())}, {},
                   {}, res->name);
    ir::Value b = Get(rhs.value());
    const std::pair<int64_t, int64_t> target = {want.rows, want.cols};
    if (Shape(a) == target && Shape(b) != target) {
      // x op per-row / per-column operand: the expand ops combine without a broadcast copy.
      std::optional<OpCode> row = TileOp(name, "tile.row_expand_");
      std::optional<OpCode> col = TileOp(name, "tile.col_expand_");
      if (row && Shape(b) == std::make_pair(want.rows, int64_t{1}))
        return w_.Op(*row, {a, b}, {}, {}, res->name);
      if (col && Shape(b) == std::make_pair(int64_t{1}, want.cols))
        return w_.Op(*col, {a, b}, {}, {}, res->name);
    }
    return w_.Op(tile_op, {Expand(a, want.rows, want.cols), Expand(b, want.rows, want.cols)}, {},
                 {}, res->name);
  }

  // A compare or select: the tensor operands expanded to the result's tile, scalars converted
  // to the compared / selected dtype.
  ir::Value Elementwise(const ir::OpStmt& op) {
    const ir::Value& res = op.result();
    const convert::Window want = convert::WindowOf(res->type.shape(), domain_, offsets_, t_);
    const bool select = op.op() == OpCode::kTensorSelect;
    const DType dtype = op.args()[select ? 1 : 0].type().dtype();
    std::vector<ir::Operand> args;
    for (const ir::Operand& a : op.args()) {
      if (!a.is_value() || !a.type().is_tensor()) {
        args.push_back(ScalarAs(a, dtype));
        continue;
      }
      // tile.broadcast copies (select's values are exact, masks are bool).
      ir::Value t = Get(a.value());
      if (t->type.rows() != want.rows || t->type.cols() != want.cols)
        t = w_.Op(OpCode::kTileBroadcast, {t}, {},
                  ir::Type::Tile(want.rows, want.cols, t->type.dtype()));
      args.push_back(t);
    }
    return w_.Op(*TileOp(ir::OpName(op.op()), "tile."), args, {}, {}, res->name);
  }

  // tensor.causal_mask at this tile: element (i, j) of x's window is (t, s) = (r0 + i, c0 + j),
  // masked when s > t + offset, i.e. j - i > offset + r0 - c0 (tile.causal_mask's diagonal). The
  // offset is clamped to +-2^50 first: |s - t| < 2^48, so that changes no element and the sum
  // cannot overflow.
  ir::Value CausalMask(const ir::OpStmt& op) {
    const ir::Value& res = op.result();
    const convert::Window win = convert::WindowOf(res->type.shape(), domain_, offsets_, t_);
    const size_t r = win.offsets.size();
    constexpr int64_t kLimit = int64_t{1} << 50;
    ir::Operand k = op.args()[1];
    if (k.is_int()) {
      k = ir::Operand::Int(std::clamp(k.int_value(), -kLimit, kLimit));
    } else {
      if (k.type().dtype() != DType::kIndex)
        k = w_.Op(OpCode::kArithCast, {k}, {}, ir::Type::Scalar(DType::kIndex), "offset");
      k = w_.Op(OpCode::kArithMin, {k, ir::Operand::Int(kLimit)}, {}, {}, "offset");
      k = w_.Op(OpCode::kArithMax, {k, ir::Operand::Int(-kLimit)}, {}, {}, "offset");
    }
    const ir::Operand& r0 = win.offsets[r - 2];
    const ir::Operand& c0 = win.offsets[r - 1];
    if (!(r0.is_int() && r0.int_value() == 0))
      k = w_.Op(OpCode::kArithAdd, {k, r0}, {}, {}, "diag");
    if (!(c0.is_int() && c0.int_value() == 0))
      k = w_.Op(OpCode::kArithSub, {k, c0}, {}, {}, "diag");
    return w_.Op(OpCode::kTileCausalMask, {Get(op.args()[0].value()), k}, {}, {}, res->name);
  }

  BlockWriter& w_;
  const std::vector<ir::Dim>& domain_;
  const std::vector<ir::Operand>& offsets_;
  Tiling t_;
  std::unordered_map<const ir::ValueNode*, ir::Value> tiles_;
};

struct GroupOps {
  std::vector<const ir::OpStmt*> ops;     // compute ops in order
  std::vector<const ir::OpStmt*> stores;  // tensor.store of the group's outputs
};

GroupOps Split(const ir::Block& body) {
  GroupOps g;
  for (const auto& s : body) {
    PTOX_SUPPORTED(s->kind() == ir::StmtKind::kOp, s->span())
        << "an incore scope of tensor ops holds only ops (write loops around it, or at tile level)";
    const auto& op = ir::As<ir::OpStmt>(*s);
    PTOX_SUPPORTED(op.op() != OpCode::kTensorStore || op.args().size() == 2, s->span())
        << "an incore scope of tensor ops stores whole tensors only (write a tensor.store at "
           "offsets outside the scope)";
    (op.op() == OpCode::kTensorStore ? g.stores : g.ops).push_back(&op);
  }
  return g;
}

class Converter {
 public:
  Converter(const ir::Func& func, const Capabilities& caps) : ext_(func), caps_(caps) {}

  // Lowers a block; symbols its tensor.empty ops bind end with it.
  ir::Block Block(const ir::Block& block) {
    const size_t mark = ext_.Mark();
    ir::Block out = Stmts(block);
    ext_.EndScope(mark);
    return out;
  }

 private:
  ir::Block Stmts(const ir::Block& block) {
    BlockWriter w;
    for (const ir::StmtRef& s : block) {
      w.set_span(s->span());
      switch (s->kind()) {
        case ir::StmtKind::kIncore: {
          const auto& in = ir::As<ir::IncoreStmt>(*s);
          if (IsTensorGroup(in.body())) Group(w, Split(in.body()));
          else w.Append(s);
          break;
        }
        case ir::StmtKind::kFor:
        case ir::StmtKind::kIf:
        case ir::StmtKind::kWhile:
          w.Append(MapBodies(s, [this](const ir::Block& b) { return Block(b); }));
          break;
        case ir::StmtKind::kOp: {
          const auto& op = ir::As<ir::OpStmt>(*s);
          if (op.op() == OpCode::kTensorStore && op.args().size() > 2)
            convert::LowerStoreAt(w, ext_, caps_, op);
          else if (op.op() == OpCode::kTensorStore)
            convert::LowerCopy(w, ext_, caps_, op.args()[0].value(), op.args()[1].value());
          else if (op.op() == OpCode::kTensorEmpty)
            Empty(w, s);
          else if (op.op() == OpCode::kTensorSlice || op.op() == OpCode::kTensorReshape ||
                   op.op() == OpCode::kTensorTranspose)
            convert::LowerView(w, ext_, s);
          else
            w.Append(s);
          if (op.op() == OpCode::kTensorDim) NoteDim(op);
          break;
        }
        case ir::StmtKind::kYield: w.Append(s); break;
        case ir::StmtKind::kCall: PTOX_ICHECK(false) << "calls are inlined first (inline-calls)"; break;
      }
    }
    return w.Take();
  }

  // Remembers which symbol a tensor.dim reads, so a tensor.empty sized by it needs no check.
  void NoteDim(const ir::OpStmt& op) {
    const ir::Dim& d = op.args()[0].type().shape()[op.args()[1].int_value()];
    if (!d.is_static()) dim_of_[op.result().get()] = d.sym;
  }

  // tensor.empty binds the symbols of its type to its sizes, or checks each against the size
  // its symbol has in scope (docs/ir.md) before it allocates.
  void Empty(BlockWriter& w, const ir::StmtRef& s) {
    const auto& op = ir::As<ir::OpStmt>(*s);
    size_t next = 0;
    for (const ir::Dim& d : op.result()->type.shape()) {
      if (d.is_static()) continue;
      const ir::Operand& size = op.args()[next++];
      auto known = size.is_value() ? dim_of_.find(size.value().get()) : dim_of_.end();
      if (known != dim_of_.end() && known->second == d.sym) continue;  // its own size
      if (!ext_.Bound(d.sym)) {
        ext_.Bind(d.sym, size);
        continue;
      }
      checks::SameSize(w, "tensor.empty", size, ext_.Of(w, d),
                       "size {} for symbol " + d.sym + ", which is {} here");
    }
    w.Append(s);
  }

  // A scope of tensor compute ops (fuse-elementwise's groups), not a tile-level one.
  static bool IsTensorGroup(const ir::Block& body) {
    return ir::AnyStmt(body, [](const ir::Stmt& s) {
      if (s.kind() != ir::StmtKind::kOp) return false;
      const ir::OpFamily f = ir::FamilyOf(ir::As<ir::OpStmt>(s).op());
      return ir::IsTensorLevel(f) && f != OpFamily::kTensorEmpty && f != OpFamily::kTensorStore;
    });
  }

  void Group(BlockWriter& w, const GroupOps& g) {
    if (g.ops.empty()) return;  // a group whose values nobody uses
    const ir::OpStmt& first = *g.ops[0];
    const OpFamily f = ir::FamilyOf(first.op());
    if ((f == OpFamily::kTensorReduce && !ReducesWholeRows(first)) ||
        f == OpFamily::kTensorReshape || f == OpFamily::kTensorTranspose ||
        f == OpFamily::kTensorSlice || f == OpFamily::kTensorConcat ||
        f == OpFamily::kTensorArgmax || f == OpFamily::kTensorGather)
      return Alone(w, g);
    // Every value of an elementwise, row or matmul group over a statically empty domain is empty
    // (a row group's domain has a non-empty last dim): nothing to compute or store.
    if (StaticallyEmpty(GroupDomain(g.ops))) return;
    if (f == OpFamily::kTensorMatmul) return Matmul(w, g);
    Elementwise(w, g);
  }

  void Alone(BlockWriter& w, const GroupOps& g) {
    PTOX_ICHECK(g.ops.size() == 1 && g.stores.size() <= 1) << "a standalone op has one output";
    // An empty result needs only the op's run-time checks.
    const bool store = !g.stores.empty() && !StaticallyEmpty(g.ops[0]->result()->type.shape());
    convert::LowerAlone(w, ext_, caps_, *g.ops[0], store ? g.stores[0] : nullptr);
  }

  // Bytes of tiles a task should hold: half the L2 (what stays in cache), and never more than
  // half the on-chip budget (plan-memory's hard limit; the estimate of live tiles is rough).
  int64_t WorkingSet() const { return std::min(caps_.l2_bytes, caps_.onchip_budget_bytes) / 2; }

  // Tile extents for an elementwise / row group: whole rows when `row`, else up to 2048
  // columns; rows so that the values live at once (inputs plus two) fit the on-chip budget,
  // never more than a static dim has, and fewer while there are under 8 tasks, down to tasks of
  // caps.min_task_elements (a decode step's per-head ops, 9 x 32, ran as 9 tasks of one row).
  Tiling ElementwiseTiling(const std::vector<ir::Dim>& domain, const GroupOps& g, bool row) const {
    const int r = static_cast<int>(domain.size());
    const ir::Dim& c = domain.back();
    Tiling t;
    t.cols = row ? c.size : (c.is_static() ? std::clamp<int64_t>(c.size, 1, 2048) : 1024);
    if (r == 1) return t;
    const int64_t elems = std::max<int64_t>(1, WorkingSet() / (4 * LiveTiles(g)));
    int64_t task_rows = std::max<int64_t>(1, elems / t.cols);
    // A row group's task walks its rows a pass at a time (RowsPerPass), so its tiles do not grow
    // with its rows: only the submission cost bounds it from below. Tasks of 4096-column rows
    // sized by the working set held 4 rows (16 Ki elements) and the runtime's share was a
    // quarter of the kernel's on 2 threads; at 64 Ki elements 2-thread layernorm ran 1.2x faster,
    // and at 64 rows of 4096 (256 Ki elements; 4096 x 4096 from memory, a 32 MiB L3) the
    // 2-thread medians of 5 alternating pairs of tensor_bench --cold runs against 16 rows were
    // faster for rmsnorm and layernorm in all 20 (up to 17 %) and softmax in 7 of 10 (f32 up to
    // 18 %; bf16 slower in 2 pairs). So long rows go at least 64 to a task, up
    // to kLongRowTaskFactor x the minimum; not more for short rows, whose run-time row count
    // (a prefill's T tokens of 576) must still split for the workers. Tensors with few static
    // rows still split into 8 tasks (below).
    if (row)
      task_rows = std::max({task_rows, kRowTaskFactor * caps_.min_task_elements / t.cols,
                            std::min<int64_t>(kRowTaskRows, kLongRowTaskFactor *
                                                                caps_.min_task_elements / t.cols)});
    t.rows = std::clamp<int64_t>(convert::FloorPow2(task_rows), 1, 1024);
    int64_t outer = 1;  // static tasks outside the row dim
    for (int d = 0; d + 2 < r; ++d) outer *= domain[d].is_static() ? domain[d].size : 8;
    if (!row && c.is_static()) outer *= (c.size + t.cols - 1) / t.cols;
    const ir::Dim& rows = domain[r - 2];
    if (rows.is_static() && rows.size > 0) {
      t.rows = std::min(t.rows, rows.size);
      while (t.rows > 1 && outer * ((rows.size + t.rows - 1) / t.rows) < 8 &&
             t.rows / 2 * t.cols >= caps_.min_task_elements)
        t.rows /= 2;
    }
    return t;
  }

  // A row group's task holds at least this many times caps.min_task_elements (see above).
  static constexpr int64_t kRowTaskFactor = 4;
  // ... and at least kRowTaskRows rows while that is at most this factor (see above).
  static constexpr int64_t kLongRowTaskFactor = 16;
  static constexpr int64_t kRowTaskRows = 64;

  // Tiles live at once in a group's task, roughly: its tensor inputs plus two.
  static int64_t LiveTiles(const GroupOps& g) {
    std::unordered_set<const ir::ValueNode*> defined, leaves;
    for (const auto* op : g.ops) defined.insert(op->result().get());
    for (const auto* op : g.ops)
      for (const auto& a : op->args())
        if (a.is_value() && a.type().is_tensor() && !defined.count(a.value().get()))
          leaves.insert(a.value().get());
    return 2 + static_cast<int64_t>(leaves.size());
  }

  // Rows a row group's task computes at a time: a row reduction makes several passes over each
  // row (softmax: max, exp, sum, scale), and rows whose live tiles fit in kRowPassBytes are still
  // in L1 for the next pass (on one core, 4096-column softmax ran 1.1x faster one row at a time
  // than 16 rows at a time, with the store's lines prefetched). A fixed size rather than the
  // host's L1, so the IR is the same on every machine; it fits half of a 32 KiB L1.
  static int64_t RowsPerPass(const GroupOps& g, Tiling t) {
    constexpr int64_t kRowPassBytes = 16 << 10;
    const int64_t row_bytes = 4 * t.cols * LiveTiles(g);
    return std::clamp<int64_t>(convert::FloorPow2(std::max<int64_t>(1, kRowPassBytes / row_bytes)),
                               1, t.rows);
  }

  void Elementwise(BlockWriter& w, const GroupOps& g) {
    const std::vector<ir::Dim> domain = GroupDomain(g.ops);
    bool row = false;  // a row reduction needs whole rows in each tile
    for (const auto* op : g.ops) row |= ir::FamilyOf(op->op()) == OpFamily::kTensorReduce;
    PTOX_SUPPORTED(!row || domain.back().is_static(), w.span())
        << "a row group needs a static last dim, got "
        << ir::Type::Tensor(domain, DType::kF32).ToString();
    const Tiling t = ElementwiseTiling(domain, g, row);
    const int r = static_cast<int>(domain.size());
    const int64_t pass = row && r >= 2 ? RowsPerPass(g, t) : t.rows;
    auto dims = convert::DomainNest(w, ext_, domain, t, row);
    auto compute = [&](BlockWriter& body, const std::vector<ir::Operand>& offsets, Tiling tt) {
      TileBody tb(body, domain, offsets, tt);
      for (const auto* op : g.ops) tb.Apply(*op);
      for (const auto* st : g.stores) tb.Store(st->args()[0].value(), st->args()[1].value());
    };
    convert::Nest(w, dims, [&](const std::vector<ir::Operand>& offsets, BlockWriter& outer) {
      BlockWriter body(w.span());
      if (pass < t.rows) {
        // for %j = 0 to min(rows - %i, t.rows) step pass: the task's rows, `pass` at a time. The
        // bound is computed outside the scope, so the task's access regions stay its rows.
        const ir::Operand& at = offsets[r - 2];
        ir::Value left = outer.Op(OpCode::kArithSub, {dims[r - 2].extent, at});
        ir::Value n = outer.Op(OpCode::kArithMin, {left, ir::Operand::Int(t.rows)});
        body.For(ir::Operand::Int(0), n, ir::Operand::Int(pass), ir::LoopKind::kSequential,
                 [&](const ir::Value& j, BlockWriter& inner) {
                   std::vector<ir::Operand> offs = offsets;
                   offs[r - 2] = inner.Op(OpCode::kArithAdd, {at, j});
                   compute(inner, offs, Tiling{pass, t.cols});
                 });
      } else {
        compute(body, offsets, t);
      }
      outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
    });
  }

  void Matmul(BlockWriter& w, const GroupOps& g) {
    const ir::OpStmt& mm = *g.ops[0];
    const ir::Value& a = mm.args()[0].value();
    const ir::Value& b = mm.args()[1].value();
    const bool tb = ir::BoolAttr(mm.attrs(), "transpose_b", false);
    const std::vector<ir::Dim>& domain = mm.result()->type.shape();
    const int r = static_cast<int>(domain.size());
    const ir::Dim& kd = a->type.shape().back();
    auto size = [](const ir::Dim& d) { return d.is_static() ? d.size : int64_t{0}; };
    int64_t tk = 0;
    const Tiling t =
        convert::MatmulTiling(caps_, size(domain[r - 2]), size(domain[r - 1]), size(kd), &tk);
    // A quantized product sums each output over its whole K in one tile (kernels/quant.h).
    const bool quantized = mm.op() == OpCode::kTensorQMatmul;
    if (quantized) tk = kd.size;
    const ir::Operand k_extent = ext_.Of(w, kd);
    auto dims = convert::DomainNest(w, ext_, domain, t, false);
    convert::Nest(w, dims, [&](const std::vector<ir::Operand>& offsets, BlockWriter& outer) {
      BlockWriter body(w.span());
      ir::Value zero = body.Op(OpCode::kTileFull, {ir::Operand::Float(0.0)}, {},
                               ir::Type::Tile(t.rows, t.cols, DType::kF32), "zero");
      ir::Value acc = ir::MakeValue(zero->type, "acc"), partial = ir::MakeValue(zero->type, "p");
      ir::Value kv = ir::MakeValue(ir::Type::Scalar(DType::kIndex), "k");
      BlockWriter kloop(w.span());
      std::vector<ir::Operand> ao(offsets.begin(), offsets.end() - 1), bo;
      ao.push_back(kv);
      if (b->type.rank() > 2) bo.assign(offsets.begin(), offsets.end() - 2);
      bo.push_back(tb ? offsets[r - 1] : ir::Operand(kv));
      bo.push_back(tb ? ir::Operand(kv) : offsets[r - 1]);
      ao.insert(ao.begin(), a);
      bo.insert(bo.begin(), b);
      ir::Value ta = kloop.Op(OpCode::kTileLoad, ao, {}, ir::Type::Tile(t.rows, tk, a->type.dtype()), "ta");
      ir::Attrs attrs;
      ir::Type b_tile = tb ? ir::Type::Tile(t.cols, tk, b->type.dtype())
                           : ir::Type::Tile(tk, t.cols, b->type.dtype());
      if (quantized) {  // w's rows of blocks, whole: [n, 0]
        bo = {b, offsets[r - 1], ir::Operand::Int(0)};
        b_tile = ir::Type::Tile(t.cols, b->type.shape()[1].size, DType::kI8);
        attrs["format"] = mm.attrs().at("format");
      } else if (tb) {
        attrs["transpose_b"] = true;
      }
      ir::Value tbv = kloop.Op(OpCode::kTileLoad, bo, {}, b_tile, "tb");
      ir::Value next = kloop.Op(quantized ? OpCode::kTileQMatmulAcc : OpCode::kTileMatmulAcc,
                                {partial, ta, tbv}, attrs, {}, "next");
      kloop.Append(ir::YieldStmt::Make({next}, w.span()));
      body.Append(ir::ForStmt::Make(kv, ir::Operand::Int(0), k_extent, ir::Operand::Int(tk),
                                    ir::LoopKind::kSequential, {partial}, {zero}, kloop.Take(),
                                    {acc}, w.span()));
      TileBody epilogue(body, domain, offsets, t);
      epilogue.Bind(mm.result(), acc);
      for (size_t i = 1; i < g.ops.size(); ++i) epilogue.Apply(*g.ops[i]);
      for (const auto* st : g.stores) epilogue.Store(st->args()[0].value(), st->args()[1].value());
      outer.Append(ir::IncoreStmt::Make(body.Take(), w.span()));
    });
  }

  Extents ext_;
  const Capabilities& caps_;
  std::unordered_map<const ir::ValueNode*, std::string> dim_of_;  // tensor.dim -> its symbol
};

}  // namespace

ir::Module ConvertTensorToTile(const ir::Module& module, const PassContext& ctx) {
  return MapFuncs(module, [&](const ir::Func& f) {
    ir::Func grouped = f;
    grouped.body = FormGroups(f, /*fuse=*/false);  // what fusion left outside a group
    return Converter(grouped, ctx.caps).Block(grouped.body);
  });
}

}  // namespace ptox::passes
