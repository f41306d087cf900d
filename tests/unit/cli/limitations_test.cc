// Documented limitations are "unsupported" (exit 2) with the op's position, not "invalid input"
// (exit 1): the program is valid, this target cannot run it.
#include <gtest/gtest.h>

#include "tests/unit/cli/test_util.h"

namespace ptox::cli {
namespace {

using testing::Ptox;
using testing::TempDir;
using testing::WriteFile;

void ExpectUnsupported(const char* program, const std::vector<std::string>& flags,
                       const std::string& needle) {
  TempDir dir;
  WriteFile(dir / "p.pto", program);
  std::vector<std::string> args = {"run", dir / "p.pto"};
  args.insert(args.end(), flags.begin(), flags.end());
  ProcessResult r = Ptox(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("p.pto:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unsupported: " + needle), std::string::npos) << r.err;
}

// The exp feeds two reductions, so it is materialized: a 64 MiB tile, over the 32 MiB budget.
TEST(Limitations, OnChipBudgetIsUnsupported) {
  ExpectUnsupported(R"(
func @big(%a: in tensor<4096x4096xf32>, %c: out tensor<4096x1xf32>, %d: out tensor<4096x1xf32>) {
  incore {
    %t = tile.load %a[0, 0] : tile<4096x4096xf32>
    %e = tile.exp %t
    %s = tile.row_sum %e
    %m = tile.row_max %e
    tile.store %s, %c[0, 0]
    tile.store %m, %d[0, 0]
  }
}
)",
                    {"--target=cpu", "--check"}, "incore scope needs");
}

TEST(Limitations, LoopsInTensorLevelScopesAreUnsupported) {
  ExpectUnsupported(R"(
func @f(%x: in tensor<8x8xf32>, %y: out tensor<8x8xf32>) {
  incore {
    for %i = 0 to 2 step 1 {
      %e = tensor.exp %x
      tensor.store %e, %y
    }
  }
}
)",
                    {"--target=cpu"}, "an incore scope of tensor ops holds only ops");
}

// The CPU target carries tensors in its orchestration only: a loop inside a tile-level scope
// that carries one is a limitation of the target (the interpreter runs it).
TEST(Limitations, TensorsCarriedInsideIncoreScopesAreUnsupportedOnCpu) {
  ExpectUnsupported(R"(
func @f(%x: in tensor<8x8xf32>, %z: in tensor<8x8xf32>, %y: out tensor<8x8xf32>) {
  incore {
    %r = for %i = 0 to 2 step 1 iter(%a = %x) {
      yield %z
    }
    %t = tile.load %r[0, 0] : tile<8x8xf32>
    tile.store %t, %y[0, 0]
  }
}
)",
                    {"--target=cpu"}, "the CPU target carries tensors through loops and ifs only "
                                      "outside incore scopes (%r: tensor<8x8xf32>)");
}

}  // namespace
}  // namespace ptox::cli
