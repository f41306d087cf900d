// Conformance of reductions (row / col sum, max, min, row_argmax), row / col expand broadcasts and
// matmul / matmul_acc on every CPU target against the interpreter. Max, min, argmax and expand
// are bit-identical; float sums and matmul are checked against the documented error bound.
#include "programs.h"

namespace ptox::conformance {
namespace {

using Dims = std::map<std::string, int64_t>;
const std::vector<DimSpec> kNxM = {std::string("N"), std::string("M")};

Val Op1(FunctionBuilder& f, const char* op, Val t) { return f.Op(op, {t}); }

// Row reductions over tile<8x64> (rows tiled, columns partial), column reductions over
// tile<64x16> (columns tiled, rows partial), and every expand op over tile<8x16> with per-row and
// per-column vectors. Float sums come with the same sum over |x| for their error bound.
Spec ReduceSpec(DType d) {
  const bool is_float = IsFloat(d);
  const std::string name = "reduce_" + std::string(DTypeName(d));
  FunctionBuilder f(name);
  Spec spec;
  spec.name = name;
  Val x = f.Param("x", ParamDirection::kIn, d, kNxM);
  Val rv = f.Param("rv", ParamDirection::kIn, d, {std::string("N"), int64_t{1}});
  Val cv = f.Param("cv", ParamDirection::kIn, d, {int64_t{1}, std::string("M")});
  // x holds NaNs; the vectors hold none, so no element combines two NaNs (ErrorsTest.NanPayload*).
  const Values vec = is_float ? Values::kNoNaN : Values::kNonZero;
  spec.values = {{"x", Values::kReduce}, {"rv", vec}, {"cv", vec}};
  std::map<std::string, Val> out;
  std::vector<std::string> row_ops = {"row_sum", "row_max", "row_min"};
  std::vector<std::string> col_ops = {"col_sum", "col_max", "col_min"};
  for (const std::string& op : row_ops)
    out[op] = f.Param(op, ParamDirection::kOut, d, {std::string("N"), int64_t{1}});
  out["row_argmax"] =
      f.Param("row_argmax", ParamDirection::kOut, DType::kI32, {std::string("N"), int64_t{1}});
  for (const std::string& op : col_ops)
    out[op] = f.Param(op, ParamDirection::kOut, d, {int64_t{1}, std::string("M")});
  if (is_float) {
    out["row_abs"] = f.Param("row_abs", ParamDirection::kOut, d, {std::string("N"), int64_t{1}});
    out["col_abs"] = f.Param("col_abs", ParamDirection::kOut, d, {int64_t{1}, std::string("M")});
    auto cols = [](const Dims& m) { return m.at("M"); };
    auto rows = [](const Dims& m) { return m.at("N"); };
    spec.rules["row_sum"] = {Rule::kSumBound, "row_abs", cols};
    spec.rules["col_sum"] = {Rule::kSumBound, "col_abs", rows};
    spec.rules["row_abs"] = {Rule::kSumBound, "row_abs", cols};
    spec.rules["col_abs"] = {Rule::kSumBound, "col_abs", rows};
  }
  std::vector<std::string> expand_ops;
  for (const char* kind : {"row", "col"})
    for (const char* op : {"add", "sub", "mul", "div"}) {
      expand_ops.push_back(std::string(kind) + "_expand_" + op);
      out[expand_ops.back()] = f.Param(expand_ops.back(), ParamDirection::kOut, d, kNxM);
    }
  Val n = f.Dim(x, 0), m = f.Dim(x, 1);
  // Rows: one column tile (64 wide), so a row reduction sees the whole row.
  f.For(int64_t{0}, n, int64_t{8}, [&](Val i) {
    f.For(int64_t{0}, m, int64_t{64}, [&](Val j) {
      f.Incore([&] {
        Val t = f.Load(x, {i, j}, 8, 64);
        for (const std::string& op : row_ops)
          f.Store(Op1(f, ("tile." + op).c_str(), t), out[op], {i, j});
        f.Store(Op1(f, "tile.row_argmax", t), out["row_argmax"], {i, j});
        if (is_float)
          f.Store(Op1(f, "tile.row_sum", Op1(f, "tile.abs", t)), out["row_abs"], {i, j});
      });
    });
  });
  // Columns: one row tile (64 high).
  f.For(int64_t{0}, n, int64_t{64}, [&](Val i) {
    f.For(int64_t{0}, m, int64_t{16}, [&](Val j) {
      f.Incore([&] {
        Val t = f.Load(x, {i, j}, 64, 16);
        for (const std::string& op : col_ops)
          f.Store(Op1(f, ("tile." + op).c_str(), t), out[op], {i, j});
        if (is_float)
          f.Store(Op1(f, "tile.col_sum", Op1(f, "tile.abs", t)), out["col_abs"], {i, j});
      });
    });
  });
  f.For(int64_t{0}, n, int64_t{8}, [&](Val i) {
    f.For(int64_t{0}, m, int64_t{16}, [&](Val j) {
      f.Incore([&] {
        Val t = f.Load(x, {i, j}, 8, 16);
        Val r = f.Load(rv, {i, int64_t{0}}, 8, 1), c = f.Load(cv, {int64_t{0}, j}, 1, 16);
        for (const std::string& op : expand_ops)
          f.Store(f.Op("tile." + op, {t, op[0] == 'r' ? r : c}), out[op], {i, j});
      });
    });
  });
  spec.program = BuildOrDie(f);
  return spec;
}

std::vector<RunConfig> ReduceConfigs(DType d) {
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1},   {7, 15},  {8, 16}, {9, 17},
                                               {19, 35}, {35, 19}, {63, 64}, {64, 63},
                                               {0, 7},   {7, 0},   {64, 1},  {1, 64}};
  std::vector<RunConfig> out;
  uint32_t seed = 100;
  for (const Layout& layout : LayoutsFor(d))
    for (auto [n, m] : sizes) out.push_back({{{"N", n}, {"M", m}}, layout, seed++});
  return out;
}

// C = A * B over K tiles with matmul_acc (and with transpose_b against Bt = B^T), and as a sum of
// per-tile matmul products; each with the same product of |A| and |B| for its error bound.
Spec MatmulSpec(DType d) {
  const std::string name = "matmul_" + std::string(DTypeName(d));
  FunctionBuilder f(name);
  Spec spec;
  spec.name = name;
  const std::string M = "M", K = "K", N = "N";
  Val a = f.Param("a", ParamDirection::kIn, d, {M, K});
  Val b = f.Param("b", ParamDirection::kIn, d, {K, N});
  Val bt = f.Param("bt", ParamDirection::kIn, d, {N, K});
  spec.values = {{"a", Values::kReduce}, {"b", Values::kReduce}, {"bt", Values::kReduce}};
  const std::vector<std::string> names = {"c", "c_abs", "ct", "ct_abs", "cp"};
  std::vector<Val> outs;
  for (const std::string& o : names)
    outs.push_back(f.Param(o, ParamDirection::kOut, DType::kF32, {M, N}));
  auto k_of = [](const Dims& m) { return m.at("K"); };
  spec.rules["c"] = {Rule::kSumBound, "c_abs", k_of};
  spec.rules["ct"] = {Rule::kSumBound, "ct_abs", k_of};
  spec.rules["c_abs"] = {Rule::kSumBound, "c_abs", k_of};
  spec.rules["ct_abs"] = {Rule::kSumBound, "ct_abs", k_of};
  spec.rules["cp"] = {Rule::kSumBound, "c_abs",
                      [](const Dims& m) { return m.at("K") + (m.at("K") + 15) / 16; }};
  Val mm = f.Dim(a, 0), kk = f.Dim(a, 1), nn = f.Dim(b, 1);
  f.For(int64_t{0}, mm, int64_t{8}, [&](Val i) {
    f.For(int64_t{0}, nn, int64_t{8}, [&](Val j) {
      f.Incore([&] {
        Val zero = f.Full(0.0, 8, 8, DType::kF32);
        std::vector<Val> acc = f.For(
            int64_t{0}, kk, int64_t{16}, {zero, zero, zero, zero, zero},
            [&](Val k, const std::vector<Val>& c) -> std::vector<Operand> {
              Val ta = f.Load(a, {i, k}, 8, 16), tb = f.Load(b, {k, j}, 16, 8);
              Val tbt = f.Load(bt, {j, k}, 8, 16);
              Val aa = Op1(f, "tile.abs", ta);
              return {f.MatmulAcc(c[0], ta, tb), f.MatmulAcc(c[1], aa, Op1(f, "tile.abs", tb)),
                      f.MatmulAcc(c[2], ta, tbt, true),
                      f.MatmulAcc(c[3], aa, Op1(f, "tile.abs", tbt), true),
                      f.Op("tile.add", {c[4], f.Matmul(ta, tb)})};
            });
        for (size_t o = 0; o < outs.size(); ++o) f.Store(acc[o], outs[o], {i, j});
      });
    });
  });
  spec.program = BuildOrDie(f);
  return spec;
}

std::vector<RunConfig> MatmulConfigs(DType d) {
  const int64_t sizes[][3] = {{1, 1, 1},    {7, 15, 7}, {8, 16, 8}, {9, 17, 9}, {19, 35, 19},
                              {35, 19, 35}, {0, 5, 5},  {5, 0, 5},  {5, 5, 0},  {8, 33, 1}};
  std::vector<RunConfig> out;
  uint32_t seed = 200;
  for (const Layout& layout : LayoutsFor(d))
    for (const auto& s : sizes)
      out.push_back({{{"M", s[0]}, {"K", s[1]}, {"N", s[2]}}, layout, seed++});
  return out;
}

const std::vector<Family>& Families() {
  static const std::vector<Family> kFamilies = {
      {"reduce",
       {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kI8, DType::kI64},
       ReduceSpec, ReduceConfigs},
      {"matmul", {DType::kF32, DType::kBF16, DType::kF16}, MatmulSpec, MatmulConfigs},
  };
  return kFamilies;
}

class ReduceTest : public FamilyTest {};

TEST_P(ReduceTest, MatchesInterpreter) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, ReduceTest, ::testing::ValuesIn(Expand(Families())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
