// Conformance of fused elementwise chains: every (binary op x operand position x unary op) pair
// and a set of triples, fused into one loop, on every float dtype and CPU target, at tile widths
// that take every path of the CPU's fused loop, bit for bit against the interpreter.
//
// Why this exists (issue 60): a unary op with a vector form (kernels/cpu/vmath_fns.def) splits a
// fused loop into segments (src/targets/cpu/fusion.cc), and `x * sigmoid(x)` stopped compiling
// when a binary op named its left operand in the segment before its right operand's vector form
// (fixed in 02da1a3). The elementwise family (elementwise_test.cc) applies one op per output, so
// no loop of it had a segment boundary between an op's operands; this family applies chains.
// Ops come from ops.def and vmath_fns.def: a new op is covered without a line here.
//
// Cost: g++ spends 0.2 s (cpu-scalar) to ~0.9 s (cpu-avx2) of CPU on each vector-form call in a
// fused loop, ~2 s on each program. So there is one program per (level, target) holding every
// dtype and width, and the CI slice (the default) needs few calls: per dtype, for each unary op
// with a vector form and each operand position, a chain through every binary op (the innermost
// op's operand is the unary; every op of the chain has the vector form inside that operand, which
// is what ends a segment between its operands), each compare and both select arms with the unary
// ops in rotation, the other unary ops once each, and triples in rotation; each case on one
// (target, width) in rotation. The full sweep (PTOX_FUSED_PAIRS_FULL=1, tests/fuzz/README.md)
// checks every pair and triple directly, every case on every target, dtype, width and layout:
// ~1,000 cases, hours of g++ on 2 cores (--gtest_filter picks a level and target).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

#include "programs.h"

namespace ptox::conformance {
namespace {

// Tile rows and the tile widths: under one vector and without the fast mode (7), one chunk in
// the fast mode (64 >= FusedLoop::kMinFastCols), several vector-math chunks of
// FusedLoop::kChunk = 256 columns with a partial one (300).
constexpr int64_t kRows = 2;
constexpr int64_t kWidths[] = {7, 64, 300};

bool FullSweep() {
  const char* v = std::getenv("PTOX_FUSED_PAIRS_FULL");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
}

// The elementwise ops of one level ("tile." or "tensor."), without the prefix, from ops.def.
struct OpLists {
  std::vector<std::string> binary, unary, compare;
  std::vector<std::string> vector_unary;  // the unary ops with a vector form in vmath.h
};

OpLists ListOps(std::string_view prefix) {
  static const std::set<std::string_view> kVectorForms = {
#define PTOX_VMATH_FN(F) #F,
#include "kernels/cpu/vmath_fns.def"
  };
  OpLists l;
  auto add = [&](std::string_view name, std::string_view family, std::string_view fn) {
    if (name.substr(0, prefix.size()) != prefix) return;
    if (family.substr(0, 6) == "Tensor") family.remove_prefix(6);
    const std::string op(name.substr(prefix.size()));
    if (family == "Binary") l.binary.push_back(op);
    if (family == "Compare") l.compare.push_back(op);
    if (family != "Unary") return;
    l.unary.push_back(op);
    if (kVectorForms.count(fn)) l.vector_unary.push_back(op);
  };
#define PTOX_OP(e, name, family, fn, ...) add(name, #family, #fn);
#include "ops/ops.def"
#undef PTOX_OP
  return l;
}

std::string Call(const std::string& op, std::initializer_list<std::string> args) {
  std::string s = op + "(";
  for (const std::string& a : args) s += (s.back() == '(' ? "" : ",") + a;
  return s + ")";
}
const std::string& Nth(const std::vector<std::string>& v, size_t i) { return v[i % v.size()]; }

// The fused shapes, as expressions over the float inputs x, y and the bool input c.
//
// The full sweep: every binary op and compare with every unary op as its right operand (`x *
// sigmoid(x)`, the shape that broke) and as its left one; select with a unary op in either arm;
// and the triples: a unary op of a binary op, and, for unary ops f and g with vector forms (those
// end segments), both operands unary (`exp(x) * exp(x)`), a binary op whose right operand is f
// of a binary op (`l * exp(m - m_new)`), and select of a compare between f and g.
std::vector<std::string> FullCases(const OpLists& ops) {
  const std::vector<std::string>& v = ops.vector_unary;
  std::vector<std::string> out;
  for (const std::string& f : ops.unary) {
    for (const std::vector<std::string>* two : {&ops.binary, &ops.compare})
      for (const std::string& b : *two) {
        out.push_back(Call(b, {"x", Call(f, {"x"})}));
        out.push_back(Call(b, {Call(f, {"x"}), "y"}));
      }
    out.push_back(Call("select", {"c", "x", Call(f, {"x"})}));
    out.push_back(Call("select", {"c", Call(f, {"y"}), "y"}));
    for (const std::string& b : ops.binary) out.push_back(Call(f, {Call(b, {"x", "y"})}));
  }
  for (const std::string& f : v) {
    for (const std::string& b : ops.binary)
      for (const std::string& b2 : ops.binary)
        out.push_back(Call(b, {"y", Call(f, {Call(b2, {"x", "y"})})}));
    for (const std::string& g : v) {
      for (const std::string& b : ops.binary)
        out.push_back(Call(b, {Call(f, {"x"}), Call(g, {"x"})}));
      for (const std::string& cmp : ops.compare)
        out.push_back(Call("select", {Call(cmp, {"x", "y"}), Call(f, {"x"}), Call(g, {"y"})}));
    }
  }
  return out;
}

// The CI slice for the dtype with index `k` (rotations start there, so that the dtypes see
// different pairings). For each unary op f with a vector form, a right chain
// b1(y, b2(y, ... bn(x, f(x)))) and a left chain b1(... bn(f(x), y) ..., y) through every binary
// op, the innermost one rotating; each compare with a vector form on the right or the left; both
// select arms; every other unary op as the right operand of a binary op; and one of each triple.
std::vector<std::string> CiCases(const OpLists& ops, size_t k) {
  const std::vector<std::string>& u = ops.vector_unary;
  const std::vector<std::string>& b = ops.binary;
  std::vector<std::string> out;
  for (size_t i = 0; i < u.size(); ++i) {
    std::string right = Call(u[i], {"x"}), left = right;
    for (size_t j = 0; j < b.size(); ++j) {
      const std::string& op = Nth(b, i + j + k);
      right = Call(op, {j == 0 ? "x" : "y", right});
      left = Call(op, {left, "y"});
    }
    out.push_back(right);
    out.push_back(left);
  }
  for (size_t i = 0; i < ops.compare.size(); ++i) {
    const std::string f = Call(Nth(u, i + k), {"x"});
    out.push_back(Call(ops.compare[i], (i + k) % 2 ? std::initializer_list<std::string>{"x", f}
                                                   : std::initializer_list<std::string>{f, "y"}));
  }
  out.push_back(Call("select", {"c", "x", Call(Nth(u, k), {"x"})}));
  out.push_back(Call("select", {"c", Call(Nth(u, k + 1), {"y"}), "y"}));
  for (size_t i = 0; i < ops.unary.size(); ++i)
    if (std::find(u.begin(), u.end(), ops.unary[i]) == u.end())
      out.push_back(Call(Nth(b, i + k), {"y", Call(ops.unary[i], {"x"})}));
  const std::string &f = Nth(u, k + 2), &g = Nth(u, k + 3), &op = Nth(b, k + 1);
  out.push_back(Call(op, {Call(f, {"x"}), Call(g, {"x"})}));
  out.push_back(Call(g, {Call(op, {"x", "y"})}));
  out.push_back(Call(op, {"y", Call(f, {Call(Nth(b, k + 2), {"x", "y"})})}));
  out.push_back(
      Call("select", {Call(Nth(ops.compare, k), {"x", "y"}), Call(f, {"x"}), Call(g, {"y"})}));
  return out;
}

// The tensor level's CI slice: the fused loops are the tile level's, so it checks that the
// default pipeline fuses these shapes into them: a right and a left chain (unary ops in
// rotation), a compare and a select arm.
std::vector<std::string> TensorCiCases(const OpLists& ops, size_t k) {
  const std::vector<std::string> all = CiCases(ops, k);
  const size_t u = ops.vector_unary.size();
  return {all[2 * (k % u)], all[2 * ((k + 1) % u) + 1], all[2 * u + k % ops.compare.size()],
          all[2 * u + ops.compare.size() + k % 2]};
}

// Builds expression `e` (a leaf name, or op(args...)) with ops of `prefix`'s level.
class ExprBuilder {
 public:
  ExprBuilder(FunctionBuilder& f, const Vals& leaves, std::string prefix)
      : f_(f), leaves_(leaves), prefix_(std::move(prefix)) {}

  Val Build(std::string_view e) {
    const size_t open = e.find('(');
    if (open == std::string_view::npos) return leaves_.at(std::string(e));
    std::vector<Operand> args;
    int depth = 0;
    size_t start = open + 1;
    for (size_t i = start; i < e.size(); ++i) {
      if (e[i] == '(') {
        ++depth;
      } else if (e[i] == ')' && depth > 0) {
        --depth;
      } else if (depth == 0 && (e[i] == ',' || e[i] == ')')) {  // the end of an argument
        args.push_back(Build(e.substr(start, i - start)));
        start = i + 1;
      }
    }
    return f_.Op(prefix_ + std::string(e.substr(0, open)), args);
  }

 private:
  FunctionBuilder& f_;
  const Vals& leaves_;
  std::string prefix_;
};

// The cases of one loop nest (tile level) or of one set of inputs (tensor level).
struct Part {
  DType dtype;
  int64_t width;
  std::vector<std::string> cases;
};
using Plan = std::vector<Part>;  // one program

// An output's name: dtype, width, index and expression (a parameter name).
std::string OutputName(const Part& part, size_t i) {
  return Sanitize(std::string(DTypeName(part.dtype)) + "_w" + std::to_string(part.width) + "_" +
                  std::to_string(i) + "_" + part.cases[i]);
}

DType OutputType(const OpLists& ops, const Part& part, size_t i) {
  const std::string head = part.cases[i].substr(0, part.cases[i].find('('));
  const bool compare = std::find(ops.compare.begin(), ops.compare.end(), head) != ops.compare.end();
  return compare ? DType::kBool : part.dtype;
}

// Tile level: per part, for i in [0, N) step kRows { for j in [0, M) step width { incore { load
// x, y, c; store each case } } }; the parts of a dtype read the same {N}x{M} inputs.
Spec TileSpec(const Plan& plan, const OpLists& ops) {
  FunctionBuilder f("fused_pairs_tile");
  Spec s;
  s.name = "fused_pairs_tile";
  const std::vector<DimSpec> dims = {std::string("N"), std::string("M")};
  const Val c = f.Param("c", ParamDirection::kIn, DType::kBool, dims);
  std::map<DType, Vals> inputs;
  for (const Part& part : plan) {
    Vals& in = inputs[part.dtype];
    if (!in.empty()) continue;
    const std::string d(DTypeName(part.dtype));
    in = {{"x", f.Param("x_" + d, ParamDirection::kIn, part.dtype, dims)},
          {"y", f.Param("y_" + d, ParamDirection::kIn, part.dtype, dims)},
          {"c", c}};
    s.values["x_" + d] = Values::kNaNEven;
    s.values["y_" + d] = Values::kNaNOdd;
  }
  std::vector<std::vector<Val>> outs(plan.size());
  for (size_t p = 0; p < plan.size(); ++p)
    for (size_t i = 0; i < plan[p].cases.size(); ++i)
      outs[p].push_back(
          f.Param(OutputName(plan[p], i), ParamDirection::kOut, OutputType(ops, plan[p], i), dims));
  const Val n = f.Dim(c, 0), m = f.Dim(c, 1);
  for (size_t p = 0; p < plan.size(); ++p) {
    const Part& part = plan[p];
    const Vals& in = inputs.at(part.dtype);
    f.For(int64_t{0}, n, kRows, [&](Val i) {
      f.For(
          int64_t{0}, m, part.width,
          [&](Val j) {
            f.Incore([&] {
              Vals tiles;
              for (const auto& [name, t] : in) tiles[name] = f.Load(t, {i, j}, kRows, part.width);
              ExprBuilder b(f, tiles, "tile.");
              for (size_t k = 0; k < part.cases.size(); ++k)
                f.Store(b.Build(part.cases[k]), outs[p][k], {i, j});
            });
          },
          LoopKind::kParallel);
    });
  }
  s.program = BuildOrDie(f);
  return s;
}

// Tensor level: per part, inputs {N}x{width} and each case stored to its own output; the
// default pipeline fuses and tiles them.
Spec TensorSpec(const Plan& plan, const OpLists& ops) {
  FunctionBuilder f("fused_pairs_tensor");
  Spec s;
  s.name = "fused_pairs_tensor";
  std::vector<std::pair<Val, Val>> stores;
  for (const Part& part : plan) {
    const std::vector<DimSpec> dims = {std::string("N"), part.width};
    const std::string suffix =
        "_" + std::string(DTypeName(part.dtype)) + "_w" + std::to_string(part.width);
    Vals in = {{"x", f.Param("x" + suffix, ParamDirection::kIn, part.dtype, dims)},
               {"y", f.Param("y" + suffix, ParamDirection::kIn, part.dtype, dims)},
               {"c", f.Param("c" + suffix, ParamDirection::kIn, DType::kBool, dims)}};
    s.values["x" + suffix] = Values::kNaNEven;
    s.values["y" + suffix] = Values::kNaNOdd;
    ExprBuilder b(f, in, "tensor.");
    for (size_t i = 0; i < part.cases.size(); ++i)
      stores.push_back({b.Build(part.cases[i]), f.Param(OutputName(part, i), ParamDirection::kOut,
                                                        OutputType(ops, part, i), dims)});
  }
  for (const auto& [v, out] : stores) f.Op("tensor.store", {v, out});
  s.program = BuildOrDie(f);
  return s;
}

constexpr DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// Where a CI case runs: a (target, width) cell. The fused loop's C++ is the same on every target
// but for the vector forms' ISA, and g++ takes ~3x longer on a vector form for cpu-avx2 than for
// cpu-scalar, so cpu-scalar has three cells per width and every other target one.
struct Cell {
  std::string target;
  int64_t width;
};
std::vector<Cell> Cells(const std::vector<std::string>& targets) {
  std::vector<Cell> out;
  for (const std::string& t : targets)
    for (int copy = 0; copy < (t == "cpu-scalar" ? 3 : 1); ++copy)
      for (int64_t w : kWidths) out.push_back({t, w});
  return out;
}

// The programs for `target`. CI: for each dtype k, case i of its slice goes to cell
// (i + k) mod cells: one program per target, every case of every dtype once on the host. The
// full sweep: every case on every target, dtype and width, in programs of at most kFullChunk
// cases per width.
constexpr size_t kFullChunk = 100;
std::vector<Plan> Plans(const std::string& level, const OpLists& ops, const std::string& target,
                        bool full) {
  std::vector<Plan> out;
  if (full) {
    const std::vector<std::string> cases = FullCases(ops);
    for (DType d : kDtypes)
      for (size_t i = 0; i < cases.size(); i += kFullChunk) {
        const std::vector<std::string> chunk(
            cases.begin() + i, cases.begin() + std::min(cases.size(), i + kFullChunk));
        out.emplace_back();
        for (int64_t w : kWidths) out.back().push_back({d, w, chunk});
      }
    return out;
  }
  const std::vector<Cell> cells = Cells(CpuTargets());
  out.emplace_back();
  for (size_t k = 0; k < std::size(kDtypes); ++k) {
    const std::vector<std::string> cases =
        level == "tile" ? CiCases(ops, k) : TensorCiCases(ops, k);
    for (int64_t w : kWidths) {
      Part part{kDtypes[k], w, {}};
      for (size_t i = 0; i < cases.size(); ++i) {
        const Cell& cell = cells[(i + k) % cells.size()];
        if (cell.target == target && cell.width == w) part.cases.push_back(cases[i]);
      }
      if (!part.cases.empty()) out.back().push_back(std::move(part));
    }
  }
  return out;
}

// Occurrences of the ops in `names` in expression e.
int CountOps(const std::string& e, const std::vector<std::string>& names) {
  int n = 0;
  for (const std::string& op : names)
    for (size_t at = e.find(op + "("); at != std::string::npos; at = e.find(op + "(", at + 1))
      n += at == 0 || e[at - 1] == '(' || e[at - 1] == ',';
  return n;
}

struct PairsCase {
  std::string level;  // "tile" or "tensor"
  std::string target;
};
void PrintTo(const PairsCase& c, std::ostream* os) { *os << c.level << " on " << c.target; }

std::vector<PairsCase> AllCases() {
  std::vector<PairsCase> out;
  for (const char* level : {"tile", "tensor"})
    for (const std::string& t : CpuTargets()) out.push_back({level, t});
  return out;
}

// Sizes that give every width full and partial tiles (rows and columns), two full 300-column
// tiles, and tiles narrower than any width (tensor level: N rows, the widths static); aligned
// and strided layouts (the fused loop's contiguous and strided specializations), every layout
// in the full sweep.
std::vector<RunConfig> Configs(const PairsCase& c, bool full) {
  using Dims = std::map<std::string, int64_t>;
  const std::vector<Dims> dims =
      c.level == "tile"
          ? std::vector<Dims>{{{"N", 3}, {"M", 307}}, {{"N", 2}, {"M", 600}}, {{"N", 1}, {"M", 5}}}
          : std::vector<Dims>{{{"N", 3}}, {{"N", 1}}};
  std::vector<RunConfig> out;
  uint32_t seed = 1;
  for (const Layout& layout : LayoutsFor(DType::kF32)) {
    if (!full && layout.name != "aligned" && !layout.strided) continue;
    for (const Dims& d : dims) out.push_back({d, layout, seed++});
  }
  return out;
}

int CountText(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class FusedPairsTest : public ::testing::TestWithParam<PairsCase> {
 protected:
  // Checks one program: every vector form of its cases is called in a fused loop (checked on
  // the generated source, so that this cannot pass by no longer fusing), and every output
  // matches the interpreter bit for bit.
  void Check(const Plan& plan, const OpLists& ops, bool full) {
    const PairsCase& c = GetParam();
    const Spec spec = c.level == "tile" ? TileSpec(plan, ops) : TensorSpec(plan, ops);
    Result<std::string> source = Compile(spec.program, {.target = c.target});
    ASSERT_TRUE(source.ok()) << source.status().message();
    int vector_forms = 0;
    for (const Part& part : plan)
      for (const std::string& e : part.cases) vector_forms += CountOps(e, ops.vector_unary);
    EXPECT_GE(CountText(*source, "pc::vmath::"), vector_forms)
        << "the cases' vector forms are not all called in fused loops any more: this check no "
           "longer covers what it was written for (src/targets/cpu/fusion.cc)";
    for (const RunConfig& config : Configs(c, full)) {
      CheckConforms(spec, config, c.target);
      if (HasFailure()) return;  // a compile error repeats for every configuration
    }
  }
};

TEST_P(FusedPairsTest, MatchesInterpreterBitForBit) {
  const PairsCase& c = GetParam();
  const bool full = FullSweep();
  const OpLists ops = ListOps(c.level + ".");
  for (const Plan& plan : Plans(c.level, ops, c.target, full)) {
    Check(plan, ops, full);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, FusedPairsTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<PairsCase>& info) {
                           return Sanitize(info.param.level + "_" + info.param.target);
                         });

}  // namespace
}  // namespace ptox::conformance
