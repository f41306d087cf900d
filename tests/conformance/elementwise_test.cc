// Conformance of elementwise ops (unary, binary tile-tile and tile-scalar, compare, select) on
// every CPU target against the interpreter: bit-identical results for every dtype.
#include "programs.h"

namespace ptox::conformance {
namespace {

constexpr int64_t kTr = 8, kTc = 32;

Output Unary(const std::string& op, DType d) {
  return {op, d, [op](FunctionBuilder& f, Vals& v) { return Apply(f, v, "tile." + op, {"x"}); }};
}
// x OP an immediate.
Output Binary(const std::string& name, const std::string& op, DType d, Operand imm) {
  return {name, d, [op, imm](FunctionBuilder& f, Vals& v) {
            return f.Op("tile." + op, {v.at("x"), imm});
          }};
}
// Like Binary, with the right operand named (a tile or scalar parameter).
Output BinaryNamed(const std::string& name, const std::string& op, DType d, const std::string& a,
                   const std::string& b) {
  return {name, d, [=](FunctionBuilder& f, Vals& v) { return Apply(f, v, "tile." + op, {a, b}); }};
}
// Every float unary op, every binary op tile-tile and against a scalar parameter or an
// immediate (-0, 0 as a divisor, NaN, -inf), every comparison and select.
Spec FloatSpec(DType d) {
  std::vector<Output> outs;
  // Every tile op of the Unary family in ops.def (a new elementwise op needs no line here).
#define PTOX_OP(e, name, family, fn, ...) \
  if (std::string_view(#family) == "Unary") outs.push_back(Unary(std::string(name).substr(5), d));
#include "ops/ops.def"
#undef PTOX_OP
  for (const char* op : {"add", "sub", "mul", "div", "max", "min"})
    outs.push_back(BinaryNamed(std::string(op) + "_tt", op, d, "x", "y"));
  outs.push_back(BinaryNamed("add_s", "add", d, "x", "s"));
  outs.push_back(BinaryNamed("mul_s", "mul", d, "x", "s"));
  outs.push_back(Binary("sub_negzero", "sub", d, -0.0));
  outs.push_back(Binary("div_zero", "div", d, 0.0));
  outs.push_back(Binary("max_nan", "max", d, std::nan("")));
  outs.push_back(Binary("min_neginf", "min", d, -INFINITY));
  outs.push_back(Binary("div_third", "div", d, 3.0));
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"})
    outs.push_back(BinaryNamed(std::string(op), op, DType::kBool, "x", "y"));
  outs.push_back(Binary("gt_zero", "gt", DType::kBool, 0.0));
  outs.push_back(BinaryNamed("argmax_gt", "argmax_gt", DType::kBool, "x", "y"));
  outs.push_back(Binary("argmax_gt_negzero", "argmax_gt", DType::kBool, -0.0));
  // causal_mask fused into the store, and materialized (a slice reads it).
  outs.push_back(BinaryNamed("mask_k", "causal_mask", d, "x", "k"));
  outs.push_back({"mask_kept", d, [d](FunctionBuilder& f, Vals& v) {
                    Val m = f.Op("tile.causal_mask", {v.at("x"), int64_t{-2}});
                    return f.Op("tile.slice", {m, int64_t{0}, int64_t{0}},
                                FunctionBuilder::TileType{kTr, kTc, d});
                  }});
  // broadcast: exact copies of a row (signalling NaNs stay), a column and a bool mask.
  outs.push_back({"bcast_row", d, [d](FunctionBuilder& f, Vals& v) {
                    Val row = f.Op("tile.slice", {v.at("y"), int64_t{0}, int64_t{0}},
                                   FunctionBuilder::TileType{1, kTc, d});
                    return f.Op("tile.broadcast", {row}, FunctionBuilder::TileType{kTr, kTc, d});
                  }});
  outs.push_back({"bcast_col", d, [d](FunctionBuilder& f, Vals& v) {
                    Val col = f.Op("tile.row_max", {v.at("x")});
                    Val b = f.Op("tile.broadcast", {col}, FunctionBuilder::TileType{kTr, kTc, d});
                    return f.Op("tile.add", {b, v.at("y")});
                  }});
  outs.push_back(
      {"bcast_mask", d, [](FunctionBuilder& f, Vals& v) {
         Val row = f.Op("tile.slice", {v.at("c"), int64_t{0}, int64_t{0}},
                        FunctionBuilder::TileType{1, kTc, DType::kBool});
         Val m = f.Op("tile.broadcast", {row}, FunctionBuilder::TileType{kTr, kTc, DType::kBool});
         return f.Op("tile.select", {m, v.at("x"), v.at("y")});
       }});
  // extract: the first element of the tile at a constant and at a run-time position.
  outs.push_back({"extract", d, [d](FunctionBuilder& f, Vals& v) {
                    Val e = f.Op("tile.extract", {v.at("x"), v.at("k"), int64_t{0}});
                    return f.Op("tile.full", {e}, FunctionBuilder::TileType{kTr, kTc, d});
                  }});
  outs.push_back({"sel_lt", d, [](FunctionBuilder& f, Vals& v) {
                    return f.Op("tile.select", {Apply(f, v, "tile.lt", {"x", "y"}), v.at("x"),
                                                v.at("y")});
                  }});
  outs.push_back({"sel_bool", d, [](FunctionBuilder& f, Vals& v) {
                    return f.Op("tile.select", {v.at("c"), v.at("x"), v.at("s")});
                  }});
  outs.push_back({"sel_imm", d, [](FunctionBuilder& f, Vals& v) {
                    return f.Op("tile.select", {v.at("c"), v.at("y"), -1.5});
                  }});
  Spec s = TiledSpec("float_elementwise_" + std::string(DTypeName(d)),
                     {{"x", d, Values::kNaNEven}, {"y", d, Values::kNaNOdd}, {"c", DType::kBool}},
                     {{"s", d}, {"k", DType::kIndex}}, outs, kTr, kTc);
  s.scalars["s"] = -2.5;
  s.scalars["k"] = int64_t{0};
  return s;
}

// Integer arithmetic on small values (never overflowing), floor division by nonzero tiles and
// immediates, neg / abs / relu, and full-range values (MIN, MAX) through max / min / relu /
// compares / select.
Spec IntSpec(DType d) {
  std::vector<Output> outs;
  for (const char* op : {"add", "sub", "mul", "max", "min"})
    outs.push_back(BinaryNamed(std::string(op) + "_tt", op, d, "x", "y"));
  outs.push_back(BinaryNamed("div_tt", "div", d, "x", "z"));
  outs.push_back(BinaryNamed("add_s", "add", d, "x", "s"));
  outs.push_back(Binary("mul_imm", "mul", d, int64_t{-3}));
  outs.push_back(Binary("div_imm", "div", d, int64_t{-2}));
  for (const char* op : {"neg", "abs", "relu"}) outs.push_back(Unary(op, d));
  outs.push_back({"relu_full", d, [](FunctionBuilder& f, Vals& v) {
                    return Apply(f, v, "tile.relu", {"w"});
                  }});
  outs.push_back(BinaryNamed("max_full", "max", d, "w", "y"));
  outs.push_back(BinaryNamed("min_full", "min", d, "w", "y"));
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"})
    outs.push_back(BinaryNamed(op, op, DType::kBool, "x", "y"));
  outs.push_back(BinaryNamed("gt_full", "gt", DType::kBool, "w", "x"));
  outs.push_back(BinaryNamed("argmax_gt", "argmax_gt", DType::kBool, "w", "x"));
  outs.push_back({"sel_bool", d, [](FunctionBuilder& f, Vals& v) {
                    return f.Op("tile.select", {v.at("c"), v.at("w"), v.at("x")});
                  }});
  outs.push_back({"sel_imm", d, [](FunctionBuilder& f, Vals& v) {
                    return f.Op("tile.select", {Apply(f, v, "tile.lt", {"x", "y"}), v.at("w"),
                                                int64_t{-5}});
                  }});
  Spec s = TiledSpec("int_elementwise_" + std::string(DTypeName(d)),
                     {{"x", d, Values::kSmall},
                      {"y", d, Values::kSmall},
                      {"z", d, Values::kNonZero},
                      {"w", d, Values::kGeneral},
                      {"c", DType::kBool}},
                     {{"s", d}}, outs, kTr, kTc);
  s.scalars["s"] = int64_t{-7};
  return s;
}

const std::vector<Family>& Families() {
  static const std::vector<Family> kFamilies = {
      {"float_elementwise", {DType::kF32, DType::kBF16, DType::kF16}, FloatSpec,
       [](DType d) { return GridConfigs(d, kTr, kTc); }},
      {"int_elementwise", {DType::kI32, DType::kI8, DType::kI64}, IntSpec,
       [](DType d) { return GridConfigs(d, kTr, kTc); }},
  };
  return kFamilies;
}

class ElementwiseTest : public FamilyTest {};

TEST_P(ElementwiseTest, MatchesInterpreterBitForBit) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, ElementwiseTest, ::testing::ValuesIn(Expand(Families())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
