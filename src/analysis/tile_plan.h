// Where the tiles of one incore scope live: a byte offset in a per-task arena for every tile
// value, chosen from tile liveness so that tiles that are never live at once share bytes.
// plan-memory checks the arena against the target's on-chip budget; the CPU target places its
// tiles at these offsets. Tile sizes come from the target (TileBytesFn).
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "ir/ir.h"

namespace ptox::analysis {

struct TilePlan {
  std::unordered_map<const ir::ValueNode*, int64_t> offset;  // tile value -> arena offset
  // Values written in another's buffer -> that value (same offset): a loop result whose carried
  // tile starts on its init's bytes (an init read nowhere else: no copy into the loop),
  // a matmul_acc yielded as the carried tile it accumulates into (no copy out of the op).
  std::unordered_map<const ir::ValueNode*, const ir::ValueNode*> takes_over;
  int64_t arena_bytes = 0;  // the arena the offsets need (buffers shared by disjoint lifetimes)
  int64_t peak_bytes = 0;   // the most bytes of tiles live at one point (a lower bound)
  int64_t total_bytes = 0;  // every tile in its own buffer (no reuse)
};

// The bytes one tile takes on the target (passes::TargetPolicy::TileBytes).
using TileBytesFn = std::function<int64_t(const ir::Type& tile)>;

// Plans the tiles of `scope`. A loop's carried tile shares its results' buffer; a value defined
// before a loop and used inside it stays live until the loop ends. O(n log n) in the tiles.
// `inlined` (optional) are values a target computes where they are used (fused elementwise
// chains): they take no bytes, and their operands are read where they are used.
TilePlan PlanTiles(const ir::IncoreStmt& scope, const TileBytesFn& tile_bytes,
                   const std::unordered_set<const ir::ValueNode*>* inlined = nullptr);

}  // namespace ptox::analysis
