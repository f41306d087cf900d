// Conformance of reductions (row / col sum, max, min, row_argmax), row / col expand broadcasts and
// matmul / matmul_acc on every CPU target against the interpreter. Max, min, argmax and expand
// are bit-identical; float sums and matmul are checked against the documented error bound.
#include <array>

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

// Tile shapes of a matmul conformance program: TM x TK times TK x TN.
struct MatmulTiles {
  int64_t tm, tk, tn;
  const char* tag;
};

// C = A * B over K tiles with matmul_acc (and with transpose_b against Bt = B^T), and as a sum of
// per-tile matmul products; each with the same product of |A| and |B| for its error bound.
Spec MatmulSpec(DType d, MatmulTiles t, Values values = Values::kReduce) {
  const std::string name = "matmul" + std::string(t.tag) + "_" + std::string(DTypeName(d));
  FunctionBuilder f(name);
  Spec spec;
  spec.name = name;
  const std::string M = "M", K = "K", N = "N";
  Val a = f.Param("a", ParamDirection::kIn, d, {M, K});
  Val b = f.Param("b", ParamDirection::kIn, d, {K, N});
  Val bt = f.Param("bt", ParamDirection::kIn, d, {N, K});
  spec.values = {{"a", values}, {"b", values}, {"bt", values}};
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
                      [t](const Dims& m) { return m.at("K") + (m.at("K") + t.tk - 1) / t.tk; }};
  Val mm = f.Dim(a, 0), kk = f.Dim(a, 1), nn = f.Dim(b, 1);
  f.For(int64_t{0}, mm, t.tm, [&](Val i) {
    f.For(int64_t{0}, nn, t.tn, [&](Val j) {
      f.Incore([&] {
        Val zero = f.Full(0.0, t.tm, t.tn, DType::kF32);
        std::vector<Val> acc = f.For(
            int64_t{0}, kk, t.tk, {zero, zero, zero, zero, zero},
            [&](Val k, const std::vector<Val>& c) -> std::vector<Operand> {
              // ta / tb / tbt feed only matmuls, so the CPU target reads them in place
              // (views); the |a| |b| products go through tiles.
              Val ta = f.Load(a, {i, k}, t.tm, t.tk), tb = f.Load(b, {k, j}, t.tk, t.tn);
              Val tbt = f.Load(bt, {j, k}, t.tn, t.tk);
              Val aa = Op1(f, "tile.abs", f.Load(a, {i, k}, t.tm, t.tk));
              Val ab = Op1(f, "tile.abs", f.Load(b, {k, j}, t.tk, t.tn));
              Val abt = Op1(f, "tile.abs", f.Load(bt, {j, k}, t.tn, t.tk));
              return {f.MatmulAcc(c[0], ta, tb), f.MatmulAcc(c[1], aa, ab),
                      f.MatmulAcc(c[2], ta, tbt, true), f.MatmulAcc(c[3], aa, abt, true),
                      f.Op("tile.add", {c[4], f.Matmul(ta, tb)})};
            });
        for (size_t o = 0; o < outs.size(); ++o) f.Store(acc[o], outs[o], {i, j});
      });
    });
  });
  spec.program = BuildOrDie(f);
  return spec;
}

std::vector<RunConfig> MatmulSizes(DType d, const std::vector<std::array<int64_t, 3>>& sizes,
                                   uint32_t seed) {
  std::vector<RunConfig> out;
  for (const Layout& layout : LayoutsFor(d))
    for (const auto& s : sizes)
      out.push_back({{{"M", s[0]}, {"K", s[1]}, {"N", s[2]}}, layout, seed++});
  return out;
}

// 8 x 16 x 8 tiles: K = 0 / 1, odd M / N / K, partial tiles in every dim.
std::vector<RunConfig> MatmulConfigs(DType d) {
  return MatmulSizes(d, {{1, 1, 1}, {7, 15, 7}, {8, 16, 8}, {9, 17, 9}, {19, 35, 19}, {35, 19, 35},
                         {0, 5, 5}, {5, 0, 5}, {5, 5, 0}, {8, 33, 1}}, 200);
}

// Tiles that reach every path of the CPU GEMM (kernels/cpu/matmul.h): 36 x 288 x 264 packs A
// and B (36 rows = 4 full 8- or 6-row panels + a partial one), blocks K (264 > the AVX-512 k
// block of 256 for a 48 KiB L1) and ends N in a partial panel; 5 x 40 x 100 streams B in place
// (and takes dot products along k for the transposed B) with partial vectors; 16 x 100 x 150
// packs only A and reads B in place in the micro-kernel (full and partial row and column
// panels, two k blocks on AVX-512); 1 x 64 x 72 is the GEMV shape.
std::vector<RunConfig> MatmulBlockedConfigs(DType d) {
  return MatmulSizes(d, {{36, 288, 264}, {37, 300, 270}, {35, 287, 263}, {1, 1, 1}, {5, 257, 9},
                         {0, 5, 5}, {5, 0, 5}}, 300);
}
std::vector<RunConfig> MatmulNarrowConfigs(DType d) {
  return MatmulSizes(d, {{5, 40, 100}, {4, 39, 99}, {11, 81, 201}, {1, 1, 1}, {3, 0, 7}}, 400);
}
// (N = 80 and 64 end in a 32- / 16-column panel of whole vectors, which AVX-512 reads in place
// up to the tensor's last column.)
std::vector<RunConfig> MatmulRowsConfigs(DType d) {
  return MatmulSizes(d, {{16, 150, 100}, {13, 301, 99}, {9, 7, 49}, {1, 1, 1}, {16, 150, 80},
                         {12, 40, 64}}, 450);
}
// Tiles wider than the GEMM's 4096-column B block: two column blocks, the second partial.
std::vector<RunConfig> MatmulWideConfigs(DType d) {
  return MatmulSizes(d, {{20, 40, 4200}, {17, 33, 4150}}, 480);
}
// Without subnormals bf16 products take AVX512_BF16 dot products where the host has them:
// packed pairs with an odd K, partial panels (128 columns = two 48-column panels and a 32-column
// one for the narrower kernel), 4..16-row and larger blocks.
std::vector<RunConfig> MatmulDpConfigs(DType d) {
  return MatmulSizes(d, {{36, 101, 130}, {9, 64, 49}, {10, 37, 70}, {40, 1, 3}, {17, 300, 97}},
                     490);
}
std::vector<RunConfig> MatmulGemvConfigs(DType d) {
  return MatmulSizes(d, {{1, 64, 72}, {1, 63, 71}, {2, 130, 145}, {1, 1, 1}}, 500);
}

// The epilogue codegen fuses after a matmul (fusion.cc): y = cast(silu(A*B + bias) + res) to the
// input dtype, one loop over the materialized product. silu's slope stays below 1.1 and the sum
// with res adds one rounding, so the matmul bound (doubled by the harness) plus one ulp of the
// output covers y; c_abs carries sum |a||b| for it.
Spec MatmulEpilogueSpec(DType d) {
  const std::string name = "matmul_epilogue_" + std::string(DTypeName(d));
  FunctionBuilder f(name);
  Spec spec;
  spec.name = name;
  const std::string M = "M", K = "K", N = "N";
  Val a = f.Param("a", ParamDirection::kIn, d, {M, K});
  Val b = f.Param("b", ParamDirection::kIn, d, {K, N});
  Val bias = f.Param("bias", ParamDirection::kIn, DType::kF32, {int64_t{1}, N});
  Val res = f.Param("res", ParamDirection::kIn, DType::kF32, {M, N});
  Val y = f.Param("y", ParamDirection::kOut, d, {M, N});
  Val c_abs = f.Param("c_abs", ParamDirection::kOut, DType::kF32, {M, N});
  // Finite inputs of moderate size: silu and the residual add keep the error proportional.
  spec.values = {{"a", Values::kReduce}, {"b", Values::kReduce}, {"bias", Values::kNoNaN},
                 {"res", Values::kNoNaN}};
  auto k_of = [](const Dims& m) { return m.at("K"); };
  spec.rules["y"] = {Rule::kSumBound, "c_abs", k_of};
  spec.rules["c_abs"] = {Rule::kSumBound, "c_abs", k_of};
  Val mm = f.Dim(a, 0), kk = f.Dim(a, 1), nn = f.Dim(b, 1);
  f.For(int64_t{0}, mm, int64_t{32}, [&](Val i) {
    f.For(int64_t{0}, nn, int64_t{48}, [&](Val j) {
      f.Incore([&] {
        Val zero = f.Full(0.0, 32, 48, DType::kF32);
        std::vector<Val> acc = f.For(
            int64_t{0}, kk, int64_t{40}, {zero, zero},
            [&](Val k, const std::vector<Val>& c) -> std::vector<Operand> {
              Val ta = f.Load(a, {i, k}, 32, 40), tb = f.Load(b, {k, j}, 40, 48);
              return {f.MatmulAcc(c[0], ta, tb),
                      f.MatmulAcc(c[1], Op1(f, "tile.abs", ta), Op1(f, "tile.abs", tb))};
            });
        Val tbias = f.Load(bias, {int64_t{0}, j}, 1, 48), tres = f.Load(res, {i, j}, 32, 48);
        Val s = Op1(f, "tile.silu", f.Op("tile.col_expand_add", {acc[0], tbias}));
        Val z = f.Op("tile.add", {s, tres});
        f.Store(f.Op("tile.cast", {z}, FunctionBuilder::TileType{32, 48, d}), y, {i, j});
        f.Store(acc[1], c_abs, {i, j});
      });
    });
  });
  spec.program = BuildOrDie(f);
  return spec;
}

std::vector<RunConfig> MatmulEpilogueConfigs(DType d) {
  return MatmulSizes(d, {{32, 40, 48}, {33, 81, 50}, {7, 39, 95}, {1, 1, 1}, {5, 0, 5}}, 600);
}

const std::vector<Family>& Families() {
  static const std::vector<DType> kFloats = {DType::kF32, DType::kBF16, DType::kF16};
  static const std::vector<Family> kFamilies = {
      {"reduce",
       {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kI8, DType::kI64},
       ReduceSpec, ReduceConfigs},
      {"matmul", kFloats, [](DType d) { return MatmulSpec(d, {8, 16, 8, ""}); }, MatmulConfigs},
      {"matmul_blocked", kFloats,
       [](DType d) { return MatmulSpec(d, {36, 288, 264, "_blocked"}); }, MatmulBlockedConfigs},
      {"matmul_narrow", kFloats, [](DType d) { return MatmulSpec(d, {5, 40, 100, "_narrow"}); },
       MatmulNarrowConfigs},
      {"matmul_rows", kFloats, [](DType d) { return MatmulSpec(d, {16, 150, 100, "_rows"}); },
       MatmulRowsConfigs},
      {"matmul_wide", kFloats, [](DType d) { return MatmulSpec(d, {20, 40, 4200, "_wide"}); },
       MatmulWideConfigs},
      {"matmul_dp", kFloats,
       [](DType d) { return MatmulSpec(d, {36, 100, 128, "_dp"}, Values::kReduceNormal); },
       MatmulDpConfigs},
      {"matmul_gemv", kFloats, [](DType d) { return MatmulSpec(d, {1, 64, 72, "_gemv"}); },
       MatmulGemvConfigs},
      {"matmul_epilogue", kFloats, MatmulEpilogueSpec, MatmulEpilogueConfigs},
  };
  return kFamilies;
}

class ReduceTest : public FamilyTest {};

TEST_P(ReduceTest, MatchesInterpreter) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, ReduceTest, ::testing::ValuesIn(Expand(Families())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
