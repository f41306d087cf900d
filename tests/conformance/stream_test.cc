// Streamed stores (kernels/cpu/memory.h StreamsStores / StreamOut, targets/cpu/fusion.cc): a
// fused f32 store after another pass over its rows writes each chunk to a buffer and copies
// it out with non-temporal stores when its tensor is at least PTOX_STREAM_BYTES (default: the
// L3's size). These tests set it to 1, so that every such store streams, and check the results
// bit for bit against the interpreter: rows of 300 columns (a whole chunk and a partial one),
// edge sizes, unaligned and strided layouts (StreamOut's plain head and tail lines), and NaNs that
// make a chunk run again in exact mode before it is copied out.
#include <cstdlib>

#include "programs.h"

namespace ptox::conformance {
namespace {

constexpr int64_t kTr = 4, kTc = 300;

// centred = x - row_max(x) (a store after a reduction pass over the same rows), and
// mixed = centred * y + x (the same, in fast mode, with NaN chunks rerun).
Spec StreamSpec(DType d) {
  std::vector<Output> outs;
  auto centred = [](FunctionBuilder& f, Vals& v) {
    return f.Op("tile.row_expand_sub", {v.at("x"), f.Op("tile.row_max", {v.at("x")})});
  };
  outs.push_back({"centred", d, centred});
  outs.push_back(
      {"mixed", d, [centred](FunctionBuilder& f, Vals& v) {
         return f.Op("tile.add", {f.Op("tile.mul", {centred(f, v), v.at("y")}), v.at("x")});
       }});
  return TiledSpec("stream_" + std::string(DTypeName(d)),
                   {{"x", d, Values::kNaNEven}, {"y", d, Values::kNaNOdd}}, {}, outs, kTr, kTc);
}

const std::vector<Family>& Families() {
  static const std::vector<Family> kFamilies = {
      {"streamed_store",
       {DType::kF32},
       StreamSpec,
       [](DType d) { return GridConfigs(d, kTr, kTc); }},
  };
  return kFamilies;
}

class StreamTest : public FamilyTest {
 protected:
  // Read once per loaded kernel, when it first stores: set before this test's kernels run.
  void SetUp() override { setenv("PTOX_STREAM_BYTES", "1", 1); }
  void TearDown() override { unsetenv("PTOX_STREAM_BYTES"); }
};

TEST_P(StreamTest, MatchesInterpreterBitForBit) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, StreamTest, ::testing::ValuesIn(Expand(Families())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
