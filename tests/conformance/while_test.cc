// Conformance of while loops on every CPU target against the interpreter, bit for bit:
//  - tile level: inside each incore task a while carries a counter and a tile, halving and
//    shifting the tile until the counter reaches a run-time bound or the tile's first row
//    maximum drops to 1 (a condition that reads the data, computed in an if of the condition
//    block);
//  - tensor level: a while in the orchestration carries a counter and two tensors it swaps every
//    trip (the condition is evaluated on the host between the trips' tasks);
// with 0 (the results are the inits), 1, 2 and 5 trips over symbolic sizes 0, 1, 7 and around
// the tiles, on every memory layout, with the dtype's edge values.
#include <regex>

#include "programs.h"

namespace ptox::conformance {
namespace {

Program ParseTyped(const std::string& text, DType d) {
  auto p = Program::Parse(std::regex_replace(text, std::regex("DT"), std::string(DTypeName(d))));
  if (!p.ok())
    throw std::runtime_error("a conformance program does not parse: " + p.status().message());
  return *p;
}

const char kTileWhile[] = R"(
func @f(%x: in tensor<{N}x{M}xDT>, %n: in index, %y: out tensor<{N}x{M}xDT>) {
  %rows = tensor.dim %x, 0
  %cols = tensor.dim %x, 1
  for %i = 0 to %rows step 8 parallel {
    for %j = 0 to %cols step 16 parallel {
      incore {
        %t = tile.load %x[%i, %j] : tile<8x16xDT>
        %c, %r = while iter(%q = 0, %acc = %t) {
          %lt = arith.lt %q, %n
          %go = if %lt -> bool {
            %mx = tile.row_max %acc
            %m0 = tile.extract %mx[0, 0]
            %big = arith.gt %m0, 1.0
            yield %big
          } else {
            yield %lt
          }
          condition %go
        } do {
          %h = tile.mul %acc, 0.5
          %s = tile.sub %h, 0.375
          %q2 = arith.add %q, 1
          yield %q2, %s
        }
        tile.store %r, %y[%i, %j]
      }
    }
  }
}
)";

const char kTensorWhile[] = R"(
func @f(%x: in tensor<{N}x{M}xDT>, %z: in tensor<{N}x{M}xDT>, %n: in index,
        %ya: out tensor<{N}x{M}xDT>, %yb: out tensor<{N}x{M}xDT>) {
  %k, %ra, %rb = while iter(%i = 0, %a = %x, %b = %z) {
    %c = arith.lt %i, %n
    condition %c
  } do {
    %t = tensor.mul %a, 0.75
    %v = tensor.sub %t, %b
    %i2 = arith.add %i, 1
    yield %i2, %v, %a
  }
  tensor.store %ra, %ya
  tensor.store %rb, %yb
}
)";

std::vector<RunConfig> Configs(DType d) {
  std::vector<RunConfig> out;
  uint32_t seed = 17;
  for (const Layout& layout : LayoutsFor(d))
    for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {7, 13}, {0, 5}, {5, 0}, {9, 17},
                        {8, 16}, {19, 35}})
      out.push_back({{{"N", n}, {"M", m}}, layout, seed++});
  return out;
}

std::vector<Family> Families() {
  std::vector<Family> out;
  for (int64_t trips : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{5}}) {
    const std::string tag = "_" + std::to_string(trips);
    for (const auto& [name, text, dtypes] :
         {std::tuple<std::string, const char*, std::vector<DType>>{
              "tile_while", kTileWhile, {DType::kF32, DType::kBF16}},
          {"tensor_while", kTensorWhile, {DType::kF32, DType::kF16}}}) {
      out.push_back({name + tag, dtypes,
                     [name, text, tag, trips](DType d) {
                       Spec s;
                       s.name = name + tag + "_" + std::string(DTypeName(d));
                       s.program = ParseTyped(text, d);
                       s.scalars = {{"n", trips}};
                       return s;
                     },
                     Configs});
    }
  }
  return out;
}

const std::vector<Family>& AllFamilies() {
  static const std::vector<Family> kFamilies = Families();
  return kFamilies;
}

class WhileTest : public FamilyTest {};

TEST_P(WhileTest, MatchesInterpreterBitForBit) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, WhileTest, ::testing::ValuesIn(Expand(AllFamilies())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
