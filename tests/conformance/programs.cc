// Conformance program building blocks (see programs.h).
#include "programs.h"

namespace ptox::conformance {

Spec TiledSpec(const std::string& name, const std::vector<Input>& inputs,
               const std::vector<std::pair<std::string, DType>>& scalars,
               const std::vector<Output>& outputs, int64_t tr, int64_t tc) {
  FunctionBuilder f(name);
  Spec spec;
  spec.name = name;
  std::map<std::string, Val> tensors;
  Vals scalar_vals;
  for (const Input& in : inputs) {
    tensors[in.name] =
        f.Param(in.name, ParamDirection::kIn, in.dtype, {std::string("N"), std::string("M")});
    spec.values[in.name] = in.values;
  }
  for (const auto& [s, dt] : scalars) scalar_vals[s] = f.ScalarParam(s, dt);
  for (const Output& o : outputs)
    tensors[o.name] =
        f.Param(o.name, ParamDirection::kOut, o.dtype, {std::string("N"), std::string("M")});
  Val first = tensors.at(inputs.at(0).name);
  Val n = f.Dim(first, 0), m = f.Dim(first, 1);
  f.For(int64_t{0}, n, tr, [&](Val i) {
    f.For(int64_t{0}, m, tc, [&](Val j) {
      f.Incore([&] {
        Vals v = scalar_vals;
        for (const Input& in : inputs)
          v[in.name] = f.Load(tensors[in.name], {i, j}, tr, tc, in.pad);
        for (const Output& o : outputs) f.Store(o.make(f, v), tensors[o.name], {i, j});
      });
    });
  });
  spec.program = BuildOrDie(f);
  return spec;
}

Val Apply(FunctionBuilder& f, Vals& v, std::string_view op, const std::vector<std::string>& args) {
  std::vector<Operand> ops;
  for (const std::string& a : args) ops.push_back(v.at(a));
  return f.Op(op, ops);
}

std::vector<RunConfig> GridConfigs(DType layout_dtype, int64_t tr, int64_t tc) {
  std::vector<RunConfig> out;
  uint32_t seed = 1;
  for (const Layout& layout : LayoutsFor(layout_dtype))
    for (auto [n, m] : EdgeSizes(tr, tc)) out.push_back({{{"N", n}, {"M", m}}, layout, seed++});
  return out;
}

std::vector<FamilyCase> Expand(const std::vector<Family>& families) {
  std::vector<FamilyCase> out;
  for (const Family& f : families)
    for (DType d : f.dtypes)
      for (const std::string& t : CpuTargets()) out.push_back({&f, d, t});
  return out;
}

void PrintTo(const FamilyCase& c, std::ostream* os) {
  *os << c.family->name << " " << DTypeName(c.dtype) << " on " << c.target;
}

std::string CaseName(const ::testing::TestParamInfo<FamilyCase>& info) {
  const FamilyCase& c = info.param;
  return Sanitize(c.family->name + "_" + std::string(DTypeName(c.dtype)) + "_" + c.target);
}

}  // namespace ptox::conformance
