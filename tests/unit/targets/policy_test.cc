// Target policies (passes/policy.h): the generic passes take tile sizes, tile bytes and in-place
// matmul operands from the target they lower for; the CPU targets' policy differs from the
// generic one in each.
#include "passes/policy.h"

#include <gtest/gtest.h>

#include <tuple>

#include "ir/parser.h"
#include "passes/convert_tensor_to_tile.h"
#include "passes/pass.h"
#include "targets/cpu/policy.h"
#include "targets/target.h"

namespace ptox::targets {
namespace {

TEST(Policy, CpuTileBytesAreTheTileLibraryLayout) {
  const passes::TargetPolicy& cpu = cpu::CpuPolicy::Get();
  EXPECT_EQ(cpu.TileBytes(ir::Type::Tile(8, 8, DType::kF32)), 8 * 8 * 4 + 64);  // + valid shape
  EXPECT_EQ(cpu.TileBytes(ir::Type::Tile(16, 32, DType::kBF16)), 16 * 32 * 4 + 64);  // f32 compute
  EXPECT_EQ(cpu.TileBytes(ir::Type::Tile(1, 1, DType::kI8)), 64);
  const passes::TargetPolicy& generic = passes::GenericPolicy();
  EXPECT_EQ(generic.TileBytes(ir::Type::Tile(8, 8, DType::kF32)), 8 * 8 * 4);
  EXPECT_EQ(generic.TileBytes(ir::Type::Tile(16, 32, DType::kBF16)), 16 * 32 * 2);
}

TEST(Policy, EveryCpuTargetHandsThePassesItsPolicy) {
  for (const Target* t : AllTargets()) {
    const passes::TargetPolicy* expected =
        t->family() == "cpu" ? &cpu::CpuPolicy::Get() : &passes::GenericPolicy();
    EXPECT_EQ(t->caps().policy, expected) << t->name();
  }
  EXPECT_TRUE(cpu::CpuPolicy::Get().MatmulOperandsInPlace());
  EXPECT_FALSE(passes::GenericPolicy().MatmulOperandsInPlace());
}

TEST(Policy, MatmulTilesComeFromThePolicyAndAreClampedToTheProblem) {
  passes::Capabilities generic;
  generic.l2_bytes = 1 << 20;
  int64_t tk = 0;
  // Generic: the largest T with 13 (2T)^2 f32 in L2 (T = 64 for 1 MiB), K slices of 4T.
  passes::convert::Tiling t = passes::convert::MatmulTiling(generic, 1024, 1024, 1024, &tk);
  EXPECT_EQ(t.rows, 64);
  EXPECT_EQ(t.cols, 64);
  EXPECT_EQ(tk, 256);
  // CPU: 512 x 1024 outputs over 2048-deep slices, halved to 8 tiles for 2048^3.
  passes::Capabilities cpu = generic;
  cpu.policy = &cpu::CpuPolicy::Get();
  t = passes::convert::MatmulTiling(cpu, 2048, 2048, 2048, &tk);
  EXPECT_EQ(t.rows, 512);
  EXPECT_EQ(t.cols, 1024);
  EXPECT_EQ(tk, 2048);
  t = passes::convert::MatmulTiling(cpu, 4, 100, 30, &tk);  // skinny: clamped to n and k
  EXPECT_EQ(t.rows, 4);
  EXPECT_EQ(t.cols, 100);
  EXPECT_EQ(tk, 30);
  // Skinny products take whole-K stripes, one per MiB of f32 B, an even count, at most 4.
  for (auto [n, k, stripes] : {std::tuple<int64_t, int64_t, int64_t>{192, 576, 1}, {576, 576, 2},
                               {1536, 576, 4}, {576, 1536, 4}, {49152, 576, 4}}) {
    t = passes::convert::MatmulTiling(cpu, 1, n, k, &tk);
    EXPECT_EQ(t.rows, 1);
    EXPECT_EQ(tk, k);
    EXPECT_EQ((n + t.cols - 1) / t.cols, stripes) << n << " x " << k;
    EXPECT_EQ(t.cols % 16 == 0 || t.cols == n, true) << n << " x " << k;
  }
}

// plan-memory counts a matmul's loaded operands only where the policy does not read them in
// place, in the policy's tile bytes.
TEST(Policy, PlanMemoryUsesThePolicysBytesAndInPlaceOperands) {
  const ir::Module m = ir::Parse(R"(func @f(%a: in tensor<8x8xf32>, %b: in tensor<8x8xf32>, %c: out tensor<8x8xf32>) {
  incore {
    %ta = tile.load %a[0, 0] : tile<8x8xf32>
    %tb = tile.load %b[0, 0] : tile<8x8xf32>
    %tc = tile.matmul %ta, %tb
    tile.store %tc, %c[0, 0]
  }
})",
                                 "t.pto");
  auto onchip = [&](const passes::TargetPolicy& policy) {
    passes::PassContext ctx;
    ctx.caps.policy = &policy;
    const ir::Module planned = passes::PlanMemory(m, ctx);
    const auto& scope = ir::As<ir::IncoreStmt>(*planned.funcs[0]->body[0]);
    return std::get<int64_t>(scope.attrs().at("onchip_bytes"));
  };
  EXPECT_EQ(onchip(passes::GenericPolicy()), 3 * 8 * 8 * 4);  // a, b and c, densely
  EXPECT_EQ(onchip(cpu::CpuPolicy::Get()), 8 * 8 * 4 + 64);  // only c: a and b are views
}

}  // namespace
}  // namespace ptox::targets
