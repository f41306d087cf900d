// Tile liveness and arena placement (src/analysis/tile_plan): buffers shared only by tiles never
// live at once, loops extend lifetimes, fused (inlined) values take no bytes, an accumulator
// works in the bytes of its zero and its matmul_acc in the accumulator's.
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

// The bytes of a tile come from the target; these tests give the f32 tiles the CPU layout
// (elements, valid shape, 64-byte aligned).
int64_t Bytes(const ir::Type& t) { return (t.rows() * t.cols() * 4 + 16 + 63) / 64 * 64; }
constexpr int64_t kTile = 8 * 8 * 4 + 16 + 48;  // an 8x8 tile

TilePlan PlanTiles(const ir::IncoreStmt& scope,
                   const std::unordered_set<const ir::ValueNode*>* inlined = nullptr) {
  return analysis::PlanTiles(scope, Bytes, inlined);
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

// A matmul K loop: `zero`, the loop result `acc` and the matmul_acc result `next` share one
// buffer when nothing else reads them; `extra` (optional) is appended to the scope.
std::string KLoop(const std::string& before_loop, const std::string& in_loop,
                  const std::string& extra) {
  return R"(func @f(%x: in tensor<8x64xf32>, %w: in tensor<64x8xf32>, %y: out tensor<8x8xf32>) {
  incore {
    %zero = tile.full 0.0 : tile<8x8xf32>
)" + before_loop + R"(
    %acc = for %k = 0 to 64 step 8 iter(%p = %zero) {
      %ta = tile.load %x[0, %k] : tile<8x8xf32>
      %tb = tile.load %w[%k, 0] : tile<8x8xf32>
      %next = tile.matmul_acc %p, %ta, %tb
)" + in_loop + R"(
      yield %next
    }
    tile.store %acc, %y[0, 0]
)" + extra + R"(
  }
})";
}

TEST(TilePlan, AnAccumulatorWorksInTheBytesOfItsZero) {
  Scope s = Find(KLoop("", "", ""));
  TilePlan p = PlanTiles(*s.scope);
  EXPECT_EQ(p.takes_over.at(s.values["acc"]), s.values["zero"]);
  EXPECT_EQ(p.takes_over.at(s.values["next"]), s.values["zero"]);
  EXPECT_EQ(p.offset.at(s.values["acc"]), p.offset.at(s.values["zero"]));
  EXPECT_EQ(p.offset.at(s.values["next"]), p.offset.at(s.values["zero"]));
  EXPECT_EQ(p.arena_bytes, 3 * kTile);  // zero (= acc = next), ta, tb
  for (const char* inner : {"ta", "tb"})
    EXPECT_FALSE(Overlap(p, s.values["zero"], s.values[inner], kTile)) << inner;
}

TEST(TilePlan, NoTakeOverWhereTheOldValueIsStillRead) {
  // zero is stored after the loop: the loop must start on a copy of it.
  Scope used = Find(KLoop("", "", "    tile.store %zero, %y[0, 0]"));
  TilePlan p = PlanTiles(*used.scope);
  EXPECT_FALSE(p.takes_over.count(used.values["acc"]));
  EXPECT_TRUE(p.takes_over.count(used.values["next"]));  // the accumulation is still in place
  EXPECT_FALSE(Overlap(p, used.values["zero"], used.values["acc"], kTile));

  // the carried tile is read besides the matmul_acc: next needs its own bytes.
  Scope read = Find(KLoop("", "      %q = tile.add %p, %next\n", ""));
  p = PlanTiles(*read.scope);
  EXPECT_TRUE(p.takes_over.count(read.values["acc"]));
  EXPECT_FALSE(p.takes_over.count(read.values["next"]));
  EXPECT_FALSE(Overlap(p, read.values["acc"], read.values["next"], kTile));
}

TEST(TilePlan, NoTakeOverOfAZeroMadeOutsideAnEnclosingLoop) {
  // Every iteration of the outer loop starts the inner one from zero again.
  Scope s =
      Find(R"(func @f(%x: in tensor<8x64xf32>, %w: in tensor<64x8xf32>, %y: out tensor<16x8xf32>) {
  incore {
    %zero = tile.full 0.0 : tile<8x8xf32>
    for %i = 0 to 16 step 8 {
      %acc = for %k = 0 to 64 step 8 iter(%p = %zero) {
        %ta = tile.load %x[0, %k] : tile<8x8xf32>
        %tb = tile.load %w[%k, 0] : tile<8x8xf32>
        %next = tile.matmul_acc %p, %ta, %tb
        yield %next
      }
      tile.store %acc, %y[%i, 0]
    }
  }
})");
  TilePlan p = PlanTiles(*s.scope);
  EXPECT_FALSE(p.takes_over.count(s.values["acc"]));
  EXPECT_FALSE(Overlap(p, s.values["zero"], s.values["acc"], kTile));
}

}  // namespace
}  // namespace ptox::analysis
