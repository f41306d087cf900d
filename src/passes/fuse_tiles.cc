// fuse-tiles: marks the tile values of each incore scope that are never materialized with
// {fused = true}. Such a value's every use is an elementwise op, a float row reduction (sum, max,
// min) or a store in the same block: its consumers compute it per element, so an elementwise
// chain ending in a store, a row reduction or a materialized elementwise result becomes one loop
// over the valid region that reads tensors and tiles once and writes once — memory-bound kernels
// stream, and a reduction of a loaded tile reads the tensor in place. Codegen emits those loops
// from the marks (targets/cpu/fusion.cc) and plan-memory gives fused values no bytes, so the
// arena the budget checks is the one the kernel allocates.
//
// A value used by several ops is computed once per consuming loop, so one that is costly per
// element (a transcendental, or a chain of divisions) and has several users is materialized
// instead: softmax's exp is computed once, kept, then summed and scaled.
//
// Semantics are unchanged: each element runs the same kernels/scalar.h functions with the same
// rounding as the tile op would, over exactly the result's valid region. Loads are fused only
// from tensors the scope never stores to, so deferring a read to the consuming store cannot
// observe a write. Integer elementwise ops (which can fail per element) stay materialized.
//
// Requires: tile-level scopes. Establishes: exactly the fusible values carry {fused = true}
// (marks already present are recomputed). O(ops) per scope.
#include "passes/fuse_tiles.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "analysis/uses.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

using Values = std::unordered_set<const ir::ValueNode*>;

bool IsFloatTile(const ir::Type& t) { return t.is_tile() && IsFloat(t.dtype()); }

// Operand positions a fused loop reads per element (the expand vector is read per row / column).
bool ElementwisePosition(const ir::OpStmt& op, int pos) {
  ir::OpFamily f = ir::FamilyOf(op.op());
  if (f == ir::OpFamily::kRowExpand || f == ir::OpFamily::kColExpand) return pos == 0;
  return f != ir::OpFamily::kBroadcast;  // its source is read at other positions
}

// Per-element cost of an op in simple arithmetic operations (a rough count of vector
// instructions) by its cost class in ops.def, and the most a value used by several ops may cost
// to be recomputed by each.
int OwnCost(const ir::OpStmt& op) {
  switch (ir::CostOf(op.op())) {
    case ir::OpCost::kCheap: return 1;
    case ir::OpCost::kModerate: return 4;
    case ir::OpCost::kCostly: return 20;
    case ir::OpCost::kNone: break;
  }
  PTOX_ICHECK(false) << ir::OpName(op.op()) << " is fusible, but its Cost in ops.def is None";
  return 0;
}
constexpr int kRecomputeLimit = 8;

// The values of `scope` to fuse.
Values Fusible(const ir::IncoreStmt& scope) {
  Values stored;
  ir::ForEachOp(scope.body(), [&](const ir::OpStmt& op) {
    if (ir::FamilyOf(op.op()) == ir::OpFamily::kStore) stored.insert(op.args()[1].value().get());
  });
  analysis::UseMap uses;
  analysis::CollectUses(scope.body(), uses);
  Values fused;
  std::unordered_map<const ir::ValueNode*, int> cost;  // of each fused value, operands included
  std::function<void(const ir::Block&)> plan = [&](const ir::Block& block) {
    for (const ir::StmtRef& s : block) {
      ir::ForEachBody(*s, plan);
      if (s->kind() != ir::StmtKind::kOp) continue;
      const auto& op = ir::As<ir::OpStmt>(*s);
      const bool load = ir::FamilyOf(op.op()) == ir::OpFamily::kLoad;
      if (load ? !(IsFloatTile(op.result()->type) && !stored.count(op.args()[0].value().get()))
               : !FusibleOp(op))
        continue;
      const auto& sites = uses[op.result().get()];
      bool all_fusible = !sites.empty();
      std::unordered_set<const ir::Stmt*> users;
      for (const analysis::UseSite& u : sites) {
        bool ok = u.block == &block && u.operand >= 0 && u.stmt->kind() == ir::StmtKind::kOp;
        if (ok) {
          const auto& user = ir::As<ir::OpStmt>(*u.stmt);
          switch (ir::FamilyOf(user.op())) {
            case ir::OpFamily::kStore: ok = u.operand == 0; break;
            case ir::OpFamily::kRowReduce: ok = IsFloatTile(user.result()->type); break;
            default: ok = FusibleOp(user) && ElementwisePosition(user, u.operand);
          }
        }
        all_fusible &= ok;
        users.insert(u.stmt);
      }
      int c = OwnCost(op);
      for (const ir::Operand& a : op.args())
        if (a.is_value() && fused.count(a.value().get())) c += cost[a.value().get()];
      if (all_fusible && (users.size() == 1 || c < kRecomputeLimit)) {
        fused.insert(op.result().get());
        cost[op.result().get()] = c;
      }
    }
  };
  plan(scope.body());
  return fused;
}

ir::Block Mark(const ir::Block& block, const Values& fused) {
  ir::Block out;
  for (const ir::StmtRef& s : block) {
    if (s->kind() != ir::StmtKind::kOp) {
      out.push_back(ir::MapBodies(s, [&](const ir::Block& b) { return Mark(b, fused); }));
      continue;
    }
    const auto& op = ir::As<ir::OpStmt>(*s);
    const bool fuse = !op.results().empty() && fused.count(op.result().get());
    if (fuse == Fused(op) && (fuse || !op.attrs().count("fused"))) {
      out.push_back(s);
      continue;
    }
    ir::Attrs attrs = op.attrs();
    if (fuse) attrs["fused"] = true;
    else attrs.erase("fused");
    out.push_back(ir::OpStmt::Make(op.op(), op.args(), std::move(attrs), op.results(), op.span()));
  }
  return out;
}

ir::Block Block(const ir::Block& block) {
  ir::Block out;
  for (const ir::StmtRef& s : block) {
    if (s->kind() == ir::StmtKind::kIncore) {
      out.push_back(MarkFused(ir::As<ir::IncoreStmt>(*s)));
    } else {
      out.push_back(ir::MapBodies(s, [](const ir::Block& b) { return Block(b); }));
    }
  }
  return out;
}

}  // namespace

bool FusibleOp(const ir::OpStmt& op) {
  const auto& a = op.args();
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kBinary:
    case ir::OpFamily::kUnary:
    case ir::OpFamily::kSelect:
    case ir::OpFamily::kCausalMask:
    case ir::OpFamily::kBroadcast:
    case ir::OpFamily::kRowExpand:
    case ir::OpFamily::kColExpand: return IsFloatTile(op.result()->type);
    case ir::OpFamily::kCompare: return IsFloatTile(a[0].type());
    case ir::OpFamily::kCast:  // never fails unless int -> int
      return IsFloat(a[0].type().dtype()) || IsFloat(op.result()->type.dtype());
    default: return false;
  }
}

ir::StmtRef MarkFused(const ir::IncoreStmt& scope) {
  return ir::IncoreStmt::Make(Mark(scope.body(), Fusible(scope)), scope.span(), scope.attrs());
}

bool Fused(const ir::OpStmt& op) {
  auto it = op.attrs().find("fused");
  return it != op.attrs().end() && std::get<bool>(it->second);
}

ir::Module FuseTiles(const ir::Module& module, const PassContext&) {
  return MapFuncs(module, [](const ir::Func& f) { return Block(f.body); });
}

}  // namespace ptox::passes
