// hoist-invariant-tiles: a sequential loop inside an incore scope that computes the same tile on
// every trip computes it once, before the loop. A layernorm's row loop widens its bf16 weight and
// bias to f32 for every row; after this pass the scope widens them once and each row reads the
// f32 tiles (one task of 64 rows widens them once instead of 64 times).
//
// An op at the top level of a sequential loop's body moves out when it is loop-invariant and
// cannot fail (so running it where the loop would have run zero trips changes nothing):
//   - a `tile.load` of a float tile from a tensor the scope only loads from, whose offsets are
//     immediates inside the tensor's static dims (a load that cannot be out of bounds);
//   - an op on float tiles that fuse-tiles may fuse (FusibleOp: elementwise, cast, broadcast,
//     causal mask; never fails) whose operands are defined before the loop or by ops that move;
// and it is worth moving: a load moves only with a computation that uses it (alone, it would just
// copy the tensor into the scope's arena), so what leaves the loop is computation.
// Inner loops go first, so a tile invariant in two nested loops leaves both.
//
// fuse-tiles' marks are recomputed for a scope that changed: a hoisted value read inside the loop
// is materialized once (fuse-tiles fuses only within a block), and a load feeding only a hoisted
// cast stays fused into it. A scope whose arena would then exceed the target's on-chip budget
// keeps its loops as they were. Results are unchanged bit for bit: every element is computed by
// the same ops from the same inputs, only once.
//
// Requires: tile-level scopes after fuse-tiles. Establishes: no loop of an incore scope
// recomputes a hoistable tile; fused marks as fuse-tiles sets them. O(ops) per loop, per pass
// over its invariant candidates.
#include <unordered_set>

#include "analysis/tile_plan.h"
#include "analysis/uses.h"
#include "passes/fuse_tiles.h"
#include "passes/pass.h"
#include "passes/plan_memory.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

using Values = std::unordered_set<const ir::ValueNode*>;
using Stmts = std::unordered_set<const ir::Stmt*>;

bool IsFloatTile(const ir::Type& t) { return t.is_tile() && IsFloat(t.dtype()); }

// Tensors that the scope mentions only as the source of a load: nothing in it writes them.
Values LoadOnlyTensors(const ir::IncoreStmt& scope) {
  Values loaded, other;
  ir::ForEachOp(scope.body(), [&](const ir::OpStmt& op) {
    const bool load = ir::FamilyOf(op.op()) == ir::OpFamily::kLoad;
    for (size_t k = 0; k < op.args().size(); ++k) {
      const ir::Operand& a = op.args()[k];
      if (a.is_value() && a.type().is_tensor())
        (load && k == 0 ? loaded : other).insert(a.value().get());
    }
  });
  for (const ir::ValueNode* v : other) loaded.erase(v);
  return loaded;
}

// A load whose every offset is an immediate inside its static dim: it cannot fail.
bool InBounds(const ir::OpStmt& load) {
  const auto& shape = load.args()[0].type().shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    const ir::Operand& o = load.args()[d + 1];
    if (!o.is_int() || !shape[d].is_static() || o.int_value() < 0 || o.int_value() >= shape[d].size)
      return false;
  }
  return true;
}

// An op fuse-tiles may evaluate per element (so it never fails) on float tiles only: computed
// from its operands, never an error.
bool NeverFails(const ir::OpStmt& op) {
  if (!FusibleOp(op) || !IsFloatTile(op.result()->type)) return false;
  for (const ir::Operand& a : op.args())
    if (a.is_value() && a.type().is_tile() && !IsFloatTile(a.type())) return false;
  return true;
}

class Hoister {
 public:
  explicit Hoister(const ir::IncoreStmt& scope) : load_only_(LoadOnlyTensors(scope)) {}

  // `block` with the invariant ops of its sequential loops placed before them.
  ir::Block Block(const ir::Block& block) {
    return HoistFromSequentialLoops(
        block, [this](const ir::StmtRef& loop, ir::Block& out) { Hoist(loop, out); });
  }

  bool changed() const { return changed_; }

 private:
  // The top-level ops of `f`'s body that move out of it.
  Stmts Invariant(const ir::ForStmt& f) {
    Values inside = {f.iv().get()};
    for (const ir::Value& v : f.iter_args()) inside.insert(v.get());
    ir::ForEachDefinition(f.body(), [&](const ir::Value& v) { inside.insert(v.get()); });
    const ir::Block& body = f.body();
    Stmts moving;
    Values moved;  // results of `moving`
    auto outside = [&](const ir::Operand& a) {
      return !a.is_value() || !inside.count(a.value().get()) || moved.count(a.value().get());
    };
    for (const ir::StmtRef& s : body) {
      if (s->kind() != ir::StmtKind::kOp) continue;
      const auto& op = ir::As<ir::OpStmt>(*s);
      const bool load = ir::FamilyOf(op.op()) == ir::OpFamily::kLoad;
      bool ok = load ? IsFloatTile(op.result()->type) &&
                           load_only_.count(op.args()[0].value().get()) && InBounds(op)
                     : NeverFails(op);
      for (const ir::Operand& a : op.args()) ok = ok && outside(a);
      if (!ok) continue;
      moving.insert(s.get());
      moved.insert(op.result().get());
    }
    // Drop loads that a staying statement reads, and what then reads a staying value, until
    // nothing changes.
    analysis::UseMap uses;
    analysis::ProducerMap producers;
    analysis::CollectUses(body, uses, &producers);
    for (bool again = true; again;) {
      again = false;
      for (const ir::StmtRef& s : body) {
        if (!moving.count(s.get())) continue;
        const auto& op = ir::As<ir::OpStmt>(*s);
        bool keep = true;
        if (ir::FamilyOf(op.op()) == ir::OpFamily::kLoad) {
          const auto& sites = uses[op.result().get()];
          keep = !sites.empty();
          for (const analysis::UseSite& u : sites) keep = keep && moving.count(u.stmt);
        } else {
          for (const ir::Operand& a : op.args()) {
            auto p = a.is_value() ? producers.find(a.value().get()) : producers.end();
            keep = keep && (p == producers.end() || moving.count(p->second));
          }
        }
        if (!keep) {
          moving.erase(s.get());
          again = true;
        }
      }
    }
    return moving;
  }

  // Appends the ops of `f` that move, then the loop without them, to `out`.
  void Hoist(const ir::StmtRef& loop, ir::Block& out) {
    const auto& f = ir::As<ir::ForStmt>(*loop);
    const Stmts moving = Invariant(f);
    if (moving.empty()) {
      out.push_back(loop);
      return;
    }
    ir::Block body;
    for (const ir::StmtRef& s : f.body()) (moving.count(s.get()) ? out : body).push_back(s);
    out.push_back(f.WithBody(std::move(body)));
    changed_ = true;
  }

  const Values load_only_;
  bool changed_ = false;
};

class Scopes {
 public:
  explicit Scopes(const Capabilities& caps) : caps_(caps) {}

  ir::Block Block(const ir::Block& block) {
    ir::Block out;
    for (const ir::StmtRef& s : block) {
      if (s->kind() != ir::StmtKind::kIncore) {
        out.push_back(ir::MapBodies(s, [this](const ir::Block& b) { return Block(b); }));
        continue;
      }
      const auto& scope = ir::As<ir::IncoreStmt>(*s);
      Hoister hoister(scope);
      ir::Block body = hoister.Block(scope.body());
      if (!hoister.changed()) {
        out.push_back(s);
        continue;
      }
      ir::StmtRef hoisted =
          MarkFused(*ir::IncoreStmt::Make(std::move(body), scope.span(), scope.attrs()));
      const bool fits = PlanScope(ir::As<ir::IncoreStmt>(*hoisted), *caps_.policy).arena_bytes <=
                        caps_.onchip_budget_bytes;
      out.push_back(fits ? hoisted : s);
    }
    return out;
  }

 private:
  const Capabilities& caps_;
};

}  // namespace

ir::Module HoistInvariantTiles(const ir::Module& module, const PassContext& ctx) {
  return MapFuncs(module, [&](const ir::Func& f) { return Scopes(ctx.caps).Block(f.body); });
}

}  // namespace ptox::passes
