// What an incore scope needs and touches (src/analysis/incore_info): its live-ins, its accesses
// and the region each access may touch per dimension (the task region the runtime orders by).
#include "analysis/incore_info.h"

#include <gtest/gtest.h>

#include "ir/parser.h"

namespace ptox::analysis {
namespace {

TEST(IncoreInfo, AccessBoundsArePointsLoopRangesOrWholeDims) {
  const ir::Module m = ir::Parse(R"(func @f(%x: in tensor<64x64xf32>, %y: out tensor<64x64xf32>, %n: in index) {
  for %i = 0 to 64 step 16 {
    incore {
      %t = tile.load %x[%i, 0] : tile<16x64xf32>
      for %j = 0 to %n step 8 {
        %u = tile.load %x[%j, %i] : tile<8x16xf32>
        %k = arith.mul %j, 2
        tile.store %u, %y[%k, 0]
      }
      tile.store %t, %y[%i, 0]
    }
  }
})",
                                 "t.pto");
  const ir::Func& f = *m.funcs[0];
  const auto& loop = ir::As<ir::ForStmt>(*f.body[0]);
  const auto& scope = ir::As<ir::IncoreStmt>(*loop.body()[0]);
  const IncoreInfo info = AnalyzeIncore(f, scope);
  ASSERT_EQ(info.accesses.size(), 4u);

  // %x[%i, 0]: %i and 0 are known at submission; the tile spans 16 x 64.
  std::vector<AccessBound> b = AccessBounds(info, info.accesses[0]);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].kind, AccessBound::kAt);
  EXPECT_EQ(b[0].lo.value(), loop.iv());
  EXPECT_EQ(b[0].extent, 16);
  EXPECT_EQ(b[1].kind, AccessBound::kAt);
  EXPECT_EQ(b[1].extent, 64);

  // %x[%j, %i]: %j is the iv of a loop inside with bounds known outside: its range.
  b = AccessBounds(info, info.accesses[1]);
  EXPECT_EQ(b[0].kind, AccessBound::kLoopRange);
  EXPECT_TRUE(b[0].lo.is_int());
  EXPECT_EQ(b[0].ub.value()->name, "n");
  EXPECT_EQ(b[0].extent, 8);
  EXPECT_EQ(b[1].kind, AccessBound::kAt);
  EXPECT_EQ(b[1].extent, 16);

  // %y[%k, 0]: %k is computed inside: the whole dimension.
  b = AccessBounds(info, info.accesses[2]);
  EXPECT_TRUE(info.accesses[2].write);
  EXPECT_EQ(b[0].kind, AccessBound::kWholeDim);
  EXPECT_EQ(b[1].kind, AccessBound::kAt);
}

}  // namespace
}  // namespace ptox::analysis
