// Building blocks for conformance programs (a tiled loop nest over symbolic {N}x{M} tensors that
// applies many ops per tile, one output each) and the parameterized test every family shares.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"

namespace ptox::conformance {

// The tiles and scalars an output is computed from, by parameter name.
using Vals = std::map<std::string, Val>;

struct Output {
  std::string name;
  DType dtype;
  std::function<Val(FunctionBuilder&, Vals&)> make;
};

struct Input {
  std::string name;
  DType dtype;
  Values values = Values::kGeneral;
  std::optional<double> pad;  // tile.load padding
};

// for i in [0, N) step tr { for j in [0, M) step tc { incore { load every input tile at [i, j];
// store every output at [i, j] } } }: every tensor is {N}x{M}; scalars are `in` parameters.
Spec TiledSpec(const std::string& name, const std::vector<Input>& inputs,
               const std::vector<std::pair<std::string, DType>>& scalars,
               const std::vector<Output>& outputs, int64_t tr, int64_t tc);

// Shorthand for an op on named values: Apply(f, v, "tile.add", {"x", "y"}).
Val Apply(FunctionBuilder& f, Vals& v, std::string_view op, const std::vector<std::string>& args);

// A family of programs: one per dtype, each run over its configurations on every CPU target.
struct Family {
  std::string name;
  std::vector<DType> dtypes;
  std::function<Spec(DType)> spec;
  std::function<std::vector<RunConfig>(DType)> configs;
};

// Every size pair of EdgeSizes(tr, tc) (as N, M) on every layout of `layout_dtype`.
std::vector<RunConfig> GridConfigs(DType layout_dtype, int64_t tr, int64_t tc);

struct FamilyCase {
  const Family* family;
  DType dtype;
  std::string target;
};
void PrintTo(const FamilyCase& c, std::ostream* os);
std::vector<FamilyCase> Expand(const std::vector<Family>& families);
std::string CaseName(const ::testing::TestParamInfo<FamilyCase>& info);

class FamilyTest : public ::testing::TestWithParam<FamilyCase> {
 protected:
  // Builds the spec once and checks every configuration.
  void RunAll() {
    const FamilyCase& c = GetParam();
    Spec spec = c.family->spec(c.dtype);
    for (const RunConfig& config : c.family->configs(c.dtype)) {
      CheckConforms(spec, config, c.target);
      if (HasFatalFailure()) return;
    }
  }
};

}  // namespace ptox::conformance
