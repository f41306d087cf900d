// Conformance of tile.cast (every dtype to every dtype), load / store round trips and the layout
// ops (transpose, static and dynamic slice, assemble, reshape) on every CPU target: bit-identical
// to the interpreter.
#include "programs.h"

namespace ptox::conformance {
namespace {

constexpr DType kAllDTypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kI8,
                                DType::kI32, DType::kI64,  DType::kBool};

int64_t IntBits(DType d) {
  return d == DType::kI8 ? 8 : d == DType::kI32 ? 32 : d == DType::kI64 ? 64 : 1;
}

// From `d`: every float / bool cast from full-range values (with NaN, Inf, bf16 ties, f16
// overflow and subnormals for float sources), every integer cast that cannot overflow from the
// same values, and narrowing integer casts from values in the i8 range.
Spec CastSpec(DType d) {
  std::vector<Output> outs;
  for (DType to : kAllDTypes) {
    const bool always_fits = IsFloat(to) || to == DType::kBool || IsFloat(d) ||
                             IntBits(to) >= IntBits(d);
    const std::string src = always_fits ? "x" : "xs";
    outs.push_back({"to_" + std::string(DTypeName(to)), to, [src, to](FunctionBuilder& f, Vals& v) {
                      Val t = v.at(src);
                      return f.Op("tile.cast", {t}, FunctionBuilder::TileType{8, 32, to});
                    }});
  }
  return TiledSpec("cast_from_" + std::string(DTypeName(d)),
                   {{"x", d, Values::kGeneral}, {"xs", d, Values::kTiny}}, {}, outs, 8, 32);
}

// Tile shape and tile index arithmetic for the layout program.
constexpr int64_t kR = 8, kC = 16;

Val FullOf(FunctionBuilder& f, DType d, int64_t rows, int64_t cols) {
  // Bool takes no immediate: its fill value is the bool scalar (0 == 0).
  Operand v = IsFloat(d)           ? Operand(7.0)
              : d == DType::kBool ? Operand(f.Op("arith.eq", {int64_t{0}, int64_t{0}}))
                                  : Operand(int64_t{1});
  return f.Op("tile.full", {v}, FunctionBuilder::TileType{rows, cols, d});
}

// copy (load + store), transpose into an {M}x{N} output, static slice [2, 4] 4x8, dynamic slice
// at scalar offsets, assemble of the slice into a full tile at [3, 5], and reshape 8x16 -> 16x8
// of a full tile (the loaded tile assembled into a padded one) stored as tile t of a {T}x16x8
// tensor, t = (i / 8) * ceil(M / 16) + j / 16.
Spec LayoutSpec(DType d) {
  const std::string name = "layout_" + std::string(DTypeName(d));
  FunctionBuilder f(name);
  const std::string N = "N", M = "M";
  Val x = f.Param("x", ParamDirection::kIn, d, {N, M});
  Val p = f.ScalarParam("p", DType::kIndex), q = f.ScalarParam("q", DType::kIndex);
  Val copy = f.Param("copy", ParamDirection::kOut, d, {N, M});
  Val tr = f.Param("transposed", ParamDirection::kOut, d, {M, N});
  Val sl = f.Param("slice", ParamDirection::kOut, d, {N, M});
  Val dsl = f.Param("dyn_slice", ParamDirection::kOut, d, {N, M});
  Val as = f.Param("assembled", ParamDirection::kOut, d, {N, M});
  Val rs =
      f.Param("reshaped", ParamDirection::kOut, d, {std::string("T"), int64_t{16}, int64_t{8}});
  Val n = f.Dim(x, 0), m = f.Dim(x, 1);
  Val col_tiles = f.Op("arith.div", {f.Op("arith.add", {m, int64_t{kC - 1}}), int64_t{kC}});
  f.For(int64_t{0}, n, kR, [&](Val i) {
    f.For(int64_t{0}, m, kC, [&](Val j) {
      f.Incore([&] {
        Val t = f.Load(x, {i, j}, kR, kC);
        f.Store(t, copy, {i, j});
        f.Store(f.Op("tile.transpose", {t}), tr, {j, i});
        Val s = f.Op("tile.slice", {t, int64_t{2}, int64_t{4}}, FunctionBuilder::TileType{4, 8, d});
        f.Store(s, sl, {i, j});
        f.Store(f.Op("tile.slice", {t, p, q}, FunctionBuilder::TileType{4, 8, d}), dsl, {i, j});
        f.Store(f.Op("tile.assemble", {FullOf(f, d, kR, kC), s, int64_t{3}, int64_t{5}}), as,
                {i, j});
        Val full = f.Op("tile.assemble", {FullOf(f, d, kR, kC), t, int64_t{0}, int64_t{0}});
        Val r = f.Op("tile.reshape", {full}, FunctionBuilder::TileType{16, 8, d});
        Val ti = f.Op("arith.add", {f.Op("arith.mul", {f.Op("arith.div", {i, kR}), col_tiles}),
                                    f.Op("arith.div", {j, kC})});
        f.Store(r, rs, {ti, int64_t{0}, int64_t{0}});
      });
    });
  });
  Spec spec;
  spec.name = name;
  spec.program = BuildOrDie(f);
  spec.scalars = {{"p", int64_t{3}}, {"q", int64_t{7}}};
  return spec;
}

std::vector<RunConfig> LayoutConfigs(DType d) {
  std::vector<RunConfig> out = GridConfigs(d, kR, kC);
  for (RunConfig& c : out) {
    const int64_t n = c.dims.at("N"), m = c.dims.at("M");
    c.dims["T"] = (n + kR - 1) / kR * ((m + kC - 1) / kC);
  }
  return out;
}

const std::vector<Family>& Families() {
  static const std::vector<Family> kFamilies = {
      {"cast", std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes)), CastSpec,
       [](DType d) { return GridConfigs(d, 8, 32); }},
      {"layout", std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes)), LayoutSpec,
       LayoutConfigs},
  };
  return kFamilies;
}

class CastLayoutTest : public FamilyTest {};

TEST_P(CastLayoutTest, MatchesInterpreterBitForBit) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, CastLayoutTest, ::testing::ValuesIn(Expand(Families())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
