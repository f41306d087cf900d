// plan-memory: plans where the tiles of every tile-level incore scope live (PlanScope over
// analysis/tile_plan: liveness intervals, buffers shared by tiles never live at once; fused
// values and in-place matmul operands take none), records the arena size as
// `incore {onchip_bytes = N}`, and rejects a scope whose arena exceeds the target's on-chip
// budget with an error naming the scope and its largest tiles.
//
// Requires: tile-level scopes (run after convert-tensor-to-tile, and after fuse-tiles for the
// arena a fusing target allocates). Establishes: every incore
// scope carries onchip_bytes <= the budget. Complexity: O(n log n) in the tiles of each scope.
#include <algorithm>
#include <string>
#include <vector>

#include "analysis/matmul_operands.h"
#include "analysis/tile_plan.h"
#include "passes/fuse_tiles.h"
#include "passes/pass.h"
#include "passes/plan_memory.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

// "%t tile<2048x2048xf32> (16 MiB), ..." for the largest tiles defined in a block.
void CollectTiles(const ir::Block& block, std::vector<ir::Value>& out) {
  ir::ForEachOp(block, [&](const ir::OpStmt& op) {
    for (const auto& r : op.results())
      if (r->type.is_tile()) out.push_back(r);
  });
}

std::string LargestTiles(const ir::Block& body, const TargetPolicy& policy) {
  std::vector<ir::Value> tiles;
  CollectTiles(body, tiles);
  std::stable_sort(tiles.begin(), tiles.end(), [&](const ir::Value& a, const ir::Value& b) {
    return policy.TileBytes(a->type) > policy.TileBytes(b->type);
  });
  std::string s;
  for (size_t i = 0; i < tiles.size() && i < 3; ++i)
    s += (i ? ", " : "") + std::string("%") + tiles[i]->name + " " + tiles[i]->type.ToString();
  return s;
}

class Planner {
 public:
  explicit Planner(const Capabilities& caps) : caps_(caps) {}

  ir::Block Block(const ir::Block& block) {
    ir::Block out;
    for (const ir::StmtRef& s : block) out.push_back(Stmt(s));
    return out;
  }

 private:
  ir::StmtRef Stmt(const ir::StmtRef& s) {
    if (s->kind() == ir::StmtKind::kIncore) return Scope(ir::As<ir::IncoreStmt>(*s));
    return MapBodies(s, [this](const ir::Block& b) { return Block(b); });
  }

  ir::StmtRef Scope(const ir::IncoreStmt& scope) {
    const analysis::TilePlan plan = PlanScope(scope, *caps_.policy);
    PTOX_SUPPORTED(plan.arena_bytes <= caps_.onchip_budget_bytes, scope.span())
        << "incore scope needs " << plan.arena_bytes << " bytes of tiles (largest: "
        << LargestTiles(scope.body(), *caps_.policy) << "), over the target's on-chip budget of "
        << caps_.onchip_budget_bytes << " bytes; use smaller tiles";
    ir::Attrs attrs = scope.attrs();
    attrs["onchip_bytes"] = plan.arena_bytes;
    return scope.WithAttrs(std::move(attrs));
  }

  const Capabilities& caps_;
};

}  // namespace

analysis::TilePlan PlanScope(const ir::IncoreStmt& scope, const TargetPolicy& policy) {
  std::unordered_set<const ir::ValueNode*> unplaced;
  if (policy.MatmulOperandsInPlace()) unplaced = analysis::InPlaceMatmulOperands(scope.body());
  ir::ForEachOp(scope.body(), [&](const ir::OpStmt& op) {
    if (Fused(op)) unplaced.insert(op.result().get());
  });
  return analysis::PlanTiles(
      scope, [&](const ir::Type& t) { return policy.TileBytes(t); }, &unplaced);
}

ir::Module PlanMemory(const ir::Module& module, const PassContext& ctx) {
  return MapFuncs(module, [&](const ir::Func& f) { return Planner(ctx.caps).Block(f.body); });
}

}  // namespace ptox::passes
