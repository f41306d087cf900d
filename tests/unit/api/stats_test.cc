// Program::Stats: a program with a symbolic dim compiles once per target, whatever the sizes it
// runs at; refused arguments are no run; copies of a program share its executables and counts.
#include <gtest/gtest.h>

#include <vector>

#include "ptox/ptox.h"

namespace ptox {
namespace {

constexpr const char* kScale = R"(
func @scale(%x: in tensor<{N}x16xf32>, %y: out tensor<{N}x16xf32>) {
  %s = tensor.mul %x, 2.0
  tensor.store %s, %y
}
)";

Status RunAt(const Program& prog, int64_t n, const std::string& target) {
  std::vector<float> x(n * 16, 1.0f), y(n * 16);
  return ptox::Run(prog,
                   {Tensor::Contiguous(x.data(), DType::kF32, {n, 16}),
                    Tensor::Contiguous(y.data(), DType::kF32, {n, 16})},
                   {.target = target});
}

CompileStats StatsOf(const Program& prog, const std::string& target) {
  for (const auto& [name, stats] : prog.Stats())
    if (name == target) return stats;
  return {};
}

TEST(Stats, OneCompilePerTargetWhateverTheSizes) {
  auto prog = Program::Parse(kScale);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  EXPECT_TRUE(prog->Stats().empty());
  for (int64_t n : {1, 5, 300}) ASSERT_TRUE(RunAt(*prog, n, "interp").ok());
  CompileStats s = StatsOf(*prog, "interp");
  EXPECT_EQ(s.runs, 3);
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.builds + s.cache_hits, 0) << "the interpreter builds nothing";
  // Arguments the signature refuses are not a run.
  std::vector<float> x(16);
  EXPECT_FALSE(ptox::Run(*prog, {Tensor::Contiguous(x.data(), DType::kF32, {1, 16})},
                         {.target = "interp"})
                   .ok());
  EXPECT_EQ(StatsOf(*prog, "interp").runs, 3);
  // A copy shares the executables, so the counts too.
  Program copy = *prog;
  ASSERT_TRUE(RunAt(copy, 2, "interp").ok());
  EXPECT_EQ(StatsOf(*prog, "interp").runs, 4);
  EXPECT_EQ(StatsOf(*prog, "interp").compiles, 1);
}

TEST(Stats, ACompiledTargetCountsABuildOrACacheHit) {
  std::vector<std::string> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  const std::string cpu = targets.front();  // the best compiled target ("interp" alone: skip)
  if (cpu == "interp") GTEST_SKIP() << "no compiled target on this host";
  auto prog = Program::Parse(kScale);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  for (int64_t n : {3, 64}) ASSERT_TRUE(RunAt(*prog, n, cpu).ok());
  CompileStats s = StatsOf(*prog, cpu);
  EXPECT_EQ(s.runs, 2);
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.builds + s.cache_hits, 1) << "built now, or found in the compile cache";
}

}  // namespace
}  // namespace ptox
