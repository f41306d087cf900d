// Tile liveness and arena placement (src/analysis/tile_plan): buffers shared only by tiles never
// live at once, loops extend lifetimes, fused (inlined) values take no bytes.
#include "analysis/tile_plan.h"

#include <gtest/gtest.h>

#include "ir/parser.h"

namespace ptox::analysis {
namespace {

// The first incore scope of the single function in `text` (kept alive by the module).
struct Scope {
  ir::Module module;
  const ir::IncoreStmt* scope = nullptr;
  std::map<std::string, const ir::ValueNode*> values;  // tile values by name
};

void Collect(const ir::Block& b, std::map<std::string, const ir::ValueNode*>& out) {
  for (const auto& s : b) {
    if (s->kind() == ir::StmtKind::kOp)
      for (const auto& r : ir::As<ir::OpStmt>(*s).results()) out[r->name] = r.get();
    if (s->kind() == ir::StmtKind::kFor) {
      const auto& f = ir::As<ir::ForStmt>(*s);
      for (const auto& r : f.results()) out[r->name] = r.get();
      Collect(f.body(), out);
    }
  }
}

Scope Find(const std::string& text) {
  Scope sc;
  sc.module = ir::Parse(text, "test.pto");
  for (const auto& s : sc.module.funcs[0]->body)
    if (s->kind() == ir::StmtKind::kIncore) sc.scope = &ir::As<ir::IncoreStmt>(*s);
  Collect(sc.scope->body(), sc.values);
  return sc;
}

bool Overlap(const TilePlan& p, const ir::ValueNode* a, const ir::ValueNode* b, int64_t bytes) {
  const int64_t x = p.offset.at(a), y = p.offset.at(b);
  return x < y + bytes && y < x + bytes;
}

constexpr int64_t kTile = 8 * 8 * 4 + 16 + 48;  // 8x8 f32 + valid shape, 64-byte aligned

TEST(TilePlan, TileBytesMatchTheCpuTileLayout) {
  EXPECT_EQ(TileBytes(ir::Type::Tile(8, 8, DType::kF32)), kTile);
  EXPECT_EQ(TileBytes(ir::Type::Tile(16, 32, DType::kBF16)), 16 * 32 * 4 + 64);  // f32 compute
  EXPECT_EQ(TileBytes(ir::Type::Tile(1, 1, DType::kI8)), 64);
}

TEST(TilePlan, DeadTilesShareBuffers) {
  Scope s = Find(R"(func @f(%x: in tensor<8x8xf32>, %y: out tensor<8x8xf32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x8xf32>
    %b = tile.exp %a
    %c = tile.exp %b
    tile.store %c, %y[0, 0]
  }
})");
  TilePlan p = PlanTiles(*s.scope);
  EXPECT_EQ(p.total_bytes, 3 * kTile);
  EXPECT_EQ(p.peak_bytes, 2 * kTile);
  EXPECT_EQ(p.arena_bytes, 2 * kTile);
  EXPECT_EQ(p.offset.at(s.values["a"]), p.offset.at(s.values["c"]));  // a is dead when c is made
  EXPECT_FALSE(Overlap(p, s.values["a"], s.values["b"], kTile));      // b reads a
  EXPECT_FALSE(Overlap(p, s.values["b"], s.values["c"], kTile));
}

TEST(TilePlan, ValuesUsedInALoopLiveUntilItsEnd) {
  Scope s = Find(R"(func @f(%x: in tensor<8x64xf32>, %y: out tensor<8x64xf32>) {
  incore {
    %w = tile.load %x[0, 0] : tile<8x8xf32>
    %zero = tile.full 0.0 : tile<8x8xf32>
    %acc = for %k = 0 to 64 step 8 iter(%p = %zero) {
      %t = tile.load %x[0, %k] : tile<8x8xf32>
      %u = tile.mul %t, %w
      %n = tile.add %p, %u
      yield %n
    }
    tile.store %acc, %y[0, 0]
  }
})");
  TilePlan p = PlanTiles(*s.scope);
  // w is read by every iteration: nothing made inside the loop may take its bytes; the carried
  // accumulator likewise lives through the whole loop.
  for (const char* inner : {"t", "u", "n"}) {
    EXPECT_FALSE(Overlap(p, s.values["w"], s.values[inner], kTile)) << inner;
    EXPECT_FALSE(Overlap(p, s.values["acc"], s.values[inner], kTile)) << inner;
  }
  EXPECT_FALSE(Overlap(p, s.values["w"], s.values["acc"], kTile));
}

TEST(TilePlan, InlinedValuesTakeNoBytesAndTheirOperandsLiveToTheUse) {
  Scope s = Find(R"(func @f(%x: in tensor<8x8xf32>, %y: out tensor<8x8xf32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x8xf32>
    %b = tile.exp %a
    %c = tile.row_sum %b
    %d = tile.row_expand_sub %a, %c
    tile.store %d, %y[0, 0]
  }
})");
  // As if the target computed b inside the row_sum: a is read at c's position too.
  std::unordered_set<const ir::ValueNode*> inlined = {s.values["b"]};
  TilePlan p = PlanTiles(*s.scope, &inlined);
  EXPECT_FALSE(p.offset.count(s.values["b"]));
  EXPECT_FALSE(Overlap(p, s.values["a"], s.values["c"], 64));
  EXPECT_FALSE(Overlap(p, s.values["a"], s.values["d"], kTile));
}

}  // namespace
}  // namespace ptox::analysis
