// Tile-level program generation: loop nests over partial tiles with incore scopes holding a DAG of
// tile ops (all dtypes), row reductions carried through loops, and K-looped matmuls.
#include <algorithm>
#include <array>
#include <set>

#include "generator.h"

namespace ptox::fuzz {
namespace {

constexpr size_t kMaxParams = 9;
const std::vector<std::string> kBinary = {"add", "sub", "mul", "div", "max", "min"};
const std::vector<std::string> kUnary = UnaryOps("tile.");
const std::vector<std::string> kVectorUnary = VectorFormUnaryOps("tile.");
const std::vector<std::string> kCompare = {"eq", "ne", "lt", "le", "gt", "ge"};
const std::vector<std::string> kPads = {"0.0", "-inf", "inf", "1.0", "nan", "-0.0", "7.0"};
const std::vector<DType> kAllTypes = {DType::kF32, DType::kBF16, DType::kF16, DType::kI8,
                                      DType::kI32, DType::kI64,  DType::kBool};

bool IsNumeric(DType t) { return t != DType::kBool; }

class TileGen {
 public:
  explicit TileGen(Rng& rng) : rng_(rng) {}

  Program Run() {
    one_ = p_.AddDim(1);
    zero_ = p_.AddLiteral("0");
    switch (rng_.Weighted({5, 2, 3, 3})) {
      case 0: Grid(); break;
      case 1: RowLoop(); break;
      case 2: MatmulLoop(); break;
      default: Pipeline(); break;
    }
    return std::move(p_);
  }

 private:
  // ---- Types and values.
  int64_t Rows(const Type& t) const { return p_.dims[t.dims[0]].size; }
  int64_t Cols(const Type& t) const { return p_.dims[t.dims[1]].size; }
  const Type& TypeOf(int v) const { return p_.values[v].type; }
  bool SameShape(const Type& a, const Type& b) const {
    return Rows(a) == Rows(b) && Cols(a) == Cols(b);
  }
  bool SameType(const Type& a, const Type& b) const {
    return a.dtype == b.dtype && SameShape(a, b);
  }
  DType FloatType() {
    const size_t w = rng_.Weighted({6, 2, 2});
    return w == 0 ? DType::kF32 : w == 1 ? DType::kBF16 : DType::kF16;
  }
  DType AnyType() {
    const size_t w = rng_.Weighted({8, 3, 3, 2, 2, 1});
    const DType all[] = {DType::kF32, DType::kBF16, DType::kF16,
                         DType::kI8,  DType::kI32,  DType::kI64};
    return all[w];
  }

  int Emit(const std::string& text, std::vector<int> args, const Type& result,
           std::vector<Type> types = {}) {
    int v = EmitAside(text, std::move(args), result, std::move(types));
    pool_->push_back(v);
    return v;
  }
  // A value kept out of the pool, so that no later op uses it.
  int EmitAside(const std::string& text, std::vector<int> args, const Type& result,
                std::vector<Type> types = {}) {
    int v = p_.AddValue(result, "t");
    block_->push_back(MakeOp(text, std::move(args), std::move(types), v));
    return v;
  }
  void Store(int tile, int tensor, const std::vector<int>& offsets) {
    std::vector<int> args = {tile, tensor};
    args.insert(args.end(), offsets.begin(), offsets.end());
    Stmt s = MakeOp("tile.store @0, @1[" + OffsetText(2, offsets.size()) + "]", args);
    s.effect = true;
    block_->push_back(s);
  }
  int Load(int tensor, const std::vector<int>& offsets, int rows, int cols) {
    std::vector<int> args = {tensor};
    args.insert(args.end(), offsets.begin(), offsets.end());
    Type t = p_.TileType(rows, cols, TypeOf(tensor).dtype);
    std::string pad = rng_.Chance(0.4) ? " {pad = " + rng_.Pick(kPads) + "}" : "";
    return Emit("tile.load @0[" + OffsetText(1, offsets.size()) + "]" + pad + " : #0", args, t,
                {t});
  }
  static std::string OffsetText(size_t first, size_t n) {
    std::string s;
    for (size_t k = 0; k < n; ++k) s += (k ? ", @" : "@") + std::to_string(first + k);
    return s;
  }

  template <typename F>
  int Pick(F&& ok) {
    std::vector<int> fits;
    for (int v : *pool_)
      if (ok(TypeOf(v))) fits.push_back(v);
    if (fits.empty()) return -1;
    if (rng_.Chance(0.5)) return fits.back();
    return rng_.Pick(fits);
  }

  // A scalar operand for a tile of `dtype`: an immediate or, sometimes, a scalar parameter.
  int Scalar(DType dtype) {
    const bool is_float = IsFloat(dtype);
    if (rng_.Chance(0.15) && p_.params.size() < kMaxParams) {
      const std::vector<std::string> vals =
          is_float ? std::vector<std::string>{"0.5", "-1.5", "3", "-0", "inf"}
                   : std::vector<std::string>{"3", "-2", "0", "1", "-8"};
      return p_.AddParam(Type{Kind::kScalar, dtype, {}}, ParamDirection::kIn, "s", rng_.Pick(vals));
    }
    if (is_float) return p_.AddLiteral(FloatLiteral(rng_), DType::kF32);
    return p_.AddLiteral(
        rng_.Pick(std::vector<std::string>{"0", "1", "-1", "2", "3", "-7", "100"}));
  }

  // ---- Domain: a tensor shape [B x] R x C (or C alone) walked by tiles of TR x TC.
  int DomainDim(int64_t tile, int64_t max) {
    std::vector<int64_t> sizes = {1, tile - 1, tile, tile + 1, 2 * tile + 1, 3 * tile - 1,
                                  2, 7,        13,   37,       127};
    if (rng_.Chance(0.08)) sizes = {0};
    int64_t n = rng_.Pick(sizes);
    n = std::clamp<int64_t>(n, 0, max);
    // A static empty dim makes offset 0 a verify error; a symbolic one, a run-time error.
    if (n == 0 || rng_.Chance(0.55)) return p_.AddDim(n, SymbolName(p_.symbol_count++));
    return p_.AddDim(n);
  }
  int TileDim(const std::vector<int64_t>& choices) { return p_.AddDim(rng_.Pick(choices)); }

  // A loop over `dim` (axis `axis` of `tensor`) in steps of DimVar `step`, appended to `loops`,
  // or (sometimes) none: then the offset is 0. Returns the offset.
  int MaybeLoop(int tensor, int axis, int dim, int step, std::vector<Stmt>& loops, double p_loop,
                const std::vector<std::string>& kinds) {
    const bool symbolic = !p_.dims[dim].sym.empty();
    if (!rng_.Chance(p_loop)) return zero_;
    Stmt loop;
    loop.form = Stmt::Form::kFor;
    loop.iv = p_.AddValue(Type{Kind::kScalar, DType::kIndex, {}}, "i");
    loop.step_dim = step;
    loop.loop_kind = rng_.Pick(kinds);
    // A third of the sequential loops print as the equivalent while loop (decided without a
    // draw, so every seed still makes the program it made before, its loops spelled anew).
    loop.as_while = loop.loop_kind.empty() && loop.iv % 3 == 0;
    if (symbolic || rng_.Chance(0.5)) {
      loop.ub = p_.AddValue(Type{Kind::kScalar, DType::kIndex, {}}, "n");
      p_.body.push_back(MakeOp("tensor.dim @0, " + std::to_string(axis), {tensor}, {}, loop.ub));
    } else {
      loop.ub_dim = dim;
    }
    loops.push_back(loop);
    return loop.iv;
  }
  // Loops over every dim of `domain` (the shape of `tensor`), mostly; returns the offsets.
  std::vector<int> DomainLoops(int tensor, const std::vector<int>& domain,
                               const std::vector<int>& steps, std::vector<Stmt>& loops) {
    std::vector<int> offsets;
    for (size_t k = 0; k < domain.size(); ++k) {
      const double p = p_.dims[domain[k]].sym.empty() ? 0.75 : 0.9;
      offsets.push_back(MaybeLoop(tensor, static_cast<int>(k), domain[k], steps[k], loops, p,
                                  {"parallel", "parallel", "", "unroll"}));
    }
    return offsets;
  }
  // Nests `inner` in `loops` (outermost first) and appends the result to the program body.
  void Nest(std::vector<Stmt> loops, Stmt inner) {
    for (size_t k = loops.size(); k-- > 0;) {
      loops[k].body.push_back(std::move(inner));
      inner = std::move(loops[k]);
    }
    p_.body.push_back(std::move(inner));
  }
  Stmt Incore() {
    Stmt s;
    s.form = Stmt::Form::kIncore;
    return s;
  }

  void Grid();
  void Pipeline();
  void RowLoop();
  void MatmulLoop();
  void KLoop(int a, int b, bool tb, const std::array<int, 3>& ijk, const std::array<int, 3>& tiles,
             int init);
  void SecondPass(int x, const std::vector<int>& domain, int row, int tr, int tc, int acc);
  void StoreSome(const std::vector<int>& domain, const std::vector<int>& offsets, int rows,
                 int cols, int count);

  // ---- The DAG of tile ops inside a scope.
  void DagOps(int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      switch (rng_.Weighted({26, 15, 10, 9, 10, 8, 5, 3, 5, 3, 5, 1, 14})) {
        case 0: Binary(); break;
        case 1: Unary(); break;
        case 2: CompareSelect(); break;
        case 3: Cast(); break;
        case 4: Reduce(); break;
        case 5: Expand(); break;
        case 6: Transpose(); break;
        case 7: Reshape(); break;
        case 8: Slice(); break;
        case 9: Assemble(); break;
        case 10: Matmul(); break;
        case 11: Full(); break;
        default: UnaryOperand(); break;
      }
    }
  }
  void Binary() {
    int a = Pick([](const Type& t) { return IsNumeric(t.dtype); });
    if (a < 0) return;
    const Type ta = TypeOf(a);
    int b = rng_.Chance(0.6) ? Pick([&](const Type& t) { return SameType(t, ta); }) : -1;
    if (b < 0) b = Scalar(ta.dtype);
    Emit("tile." + rng_.Pick(kBinary) + " @0, @1", {a, b}, ta);
  }
  void Unary() {
    int a = Pick([](const Type& t) { return IsNumeric(t.dtype); });
    if (a < 0) return;
    const std::string op = IsFloat(TypeOf(a).dtype)
                               ? rng_.Pick(kUnary)
                               : rng_.Pick(std::vector<std::string>{"neg", "abs", "relu"});
    Emit("tile." + op + " @0", {a}, TypeOf(a));
  }
  // A binary op or select whose right operand is a unary op with a vector form used there alone,
  // so that both are computed in one fused loop (`x * sigmoid(x)`, `select(c, a, exp(b))`): the
  // vector form splits the CPU's fused loop into segments after the left operand was named
  // there, which broke (issue 60) while the shape came only from rare picks.
  void UnaryOperand() {
    const int a = Pick([](const Type& t) { return IsFloat(t.dtype); });
    if (a < 0) return;
    const Type ta = TypeOf(a);
    int b = rng_.Chance(0.5) ? Pick([&](const Type& t) { return SameType(t, ta); }) : -1;
    if (b < 0) b = a;
    const std::string fn = "tile." + rng_.Pick(kVectorUnary) + " @0";
    auto unary = [&] { return EmitAside(fn, {b}, ta); };  // out of the pool: one use, fused
    const size_t form = rng_.Weighted({6, 2, 2});
    if (form == 0) {
      Emit("tile." + rng_.Pick(kBinary) + " @0, @1", {a, unary()}, ta);
      return;
    }
    Type tb = ta;
    tb.dtype = DType::kBool;
    const int m = form == 1 ? EmitAside("tile." + rng_.Pick(kCompare) + " @0, @1", {a, unary()}, tb)
                            : Pick([&](const Type& t) { return SameType(t, tb); });
    if (m >= 0) Emit("tile.select @0, @1, @2", {m, a, unary()}, ta);
  }
  void CompareSelect() {
    int a = Pick([](const Type& t) { return IsNumeric(t.dtype); });
    if (a < 0) return;
    const Type ta = TypeOf(a);
    int cond = Pick([&](const Type& t) { return t.dtype == DType::kBool && SameShape(t, ta); });
    if (cond < 0 || rng_.Chance(0.5)) {
      int b = rng_.Chance(0.5) ? Pick([&](const Type& t) { return SameType(t, ta); }) : -1;
      if (b < 0) b = Scalar(ta.dtype);
      Type tb = ta;
      tb.dtype = DType::kBool;
      cond = Emit("tile." + rng_.Pick(kCompare) + " @0, @1", {a, b}, tb);
      if (rng_.Chance(0.3)) return;
    }
    int x = Pick([&](const Type& t) { return SameShape(t, ta) && t.dtype != DType::kBool; });
    if (x < 0) return;
    int y = rng_.Chance(0.6) ? Pick([&](const Type& t) { return SameType(t, TypeOf(x)); }) : -1;
    if (y < 0) y = Scalar(TypeOf(x).dtype);
    Emit("tile.select @0, @1, @2", {cond, x, y}, TypeOf(x));
  }
  void Cast() {
    int a = Pick([](const Type&) { return true; });
    if (a < 0) return;
    Type t = TypeOf(a);
    t.dtype = rng_.Pick(kAllTypes);
    Emit("tile.cast @0 : #0", {a}, t, {t});
  }
  void Reduce() {
    int a = Pick([](const Type& t) { return IsNumeric(t.dtype); });
    if (a < 0) return;
    const Type ta = TypeOf(a);
    const size_t w = rng_.Weighted({6, 6, 1});
    if (w == 2) {
      Emit("tile.row_argmax @0", {a}, p_.TileType(ta.dims[0], one_, DType::kI32));
      return;
    }
    const std::string fn = rng_.Pick(std::vector<std::string>{"sum", "max", "min"});
    if (w == 0) Emit("tile.row_" + fn + " @0", {a}, p_.TileType(ta.dims[0], one_, ta.dtype));
    if (w == 1) Emit("tile.col_" + fn + " @0", {a}, p_.TileType(one_, ta.dims[1], ta.dtype));
  }
  void Expand() {
    int a = Pick([&](const Type& t) { return IsNumeric(t.dtype) && Rows(t) > 1 && Cols(t) > 1; });
    if (a < 0) return;
    const Type ta = TypeOf(a);
    const bool row = rng_.Chance(0.5);
    Type want =
        row ? p_.TileType(ta.dims[0], one_, ta.dtype) : p_.TileType(one_, ta.dims[1], ta.dtype);
    int v = Pick([&](const Type& t) { return SameType(t, want); });
    if (v < 0) {
      const std::string fn = rng_.Pick(std::vector<std::string>{"sum", "max", "min"});
      v = Emit(std::string(row ? "tile.row_" : "tile.col_") + fn + " @0", {a}, want);
    }
    Emit(std::string(row ? "tile.row_expand_" : "tile.col_expand_") +
             rng_.Pick(std::vector<std::string>{"add", "sub", "mul", "div"}) + " @0, @1",
         {a, v}, ta);
  }
  void Transpose() {
    int a = Pick([](const Type&) { return true; });
    if (a < 0) return;
    Type t = TypeOf(a);
    std::swap(t.dims[0], t.dims[1]);
    Emit("tile.transpose @0", {a}, t);
  }
  void Reshape() {
    int a = Pick([](const Type&) { return true; });
    if (a < 0) return;
    const Type ta = TypeOf(a);
    const int64_t n = Rows(ta) * Cols(ta);
    std::vector<int64_t> rows;
    for (int64_t r = 1; r <= n; ++r)
      if (n % r == 0 && r != Rows(ta)) rows.push_back(r);
    if (rows.empty()) return;
    const int64_t r = rng_.Pick(rows);
    Type t = p_.TileType(p_.AddDim(r), p_.AddDim(n / r), ta.dtype);
    Emit("tile.reshape @0 : #0", {a}, t, {t});
  }
  void Slice() {
    int a = Pick([](const Type&) { return true; });
    if (a < 0) return;
    const Type ta = TypeOf(a);
    const int64_t r = rng_.Int(1, Rows(ta)), c = rng_.Int(1, Cols(ta));
    Type t = p_.TileType(p_.AddDim(r), p_.AddDim(c), ta.dtype);
    const std::string i = std::to_string(rng_.Int(0, Rows(ta) - r));
    const std::string j = std::to_string(rng_.Int(0, Cols(ta) - c));
    Emit("tile.slice @0[" + i + ", " + j + "] : #0", {a}, t, {t});
  }
  void Assemble() {
    int dst = Pick([](const Type&) { return true; });
    if (dst < 0) return;
    const Type td = TypeOf(dst);
    int src = Pick([&](const Type& t) {
      return t.dtype == td.dtype && Rows(t) <= Rows(td) && Cols(t) <= Cols(td);
    });
    if (src < 0) return;
    const Type ts = TypeOf(src);
    const std::string i = std::to_string(rng_.Int(0, Rows(td) - Rows(ts)));
    const std::string j = std::to_string(rng_.Int(0, Cols(td) - Cols(ts)));
    Emit("tile.assemble @0, @1[" + i + ", " + j + "]", {dst, src}, td);
  }
  void Matmul() {
    int a = Pick([](const Type& t) { return IsFloat(t.dtype); });
    if (a < 0) return;
    const Type ta = TypeOf(a);
    // B^T with the same K: any float tile of a's dtype with as many columns.
    int b = Pick([&](const Type& t) { return t.dtype == ta.dtype && Cols(t) == Cols(ta); });
    if (b < 0) return;
    const Type tb = TypeOf(b);
    if (Rows(ta) * Rows(tb) * Cols(ta) > 400000) return;
    Type out = p_.TileType(ta.dims[0], tb.dims[0], DType::kF32);
    if (rng_.Chance(0.5)) {
      Emit("tile.matmul @0, @1 {transpose_b = true}", {a, b}, out);
      return;
    }
    Type bt = tb;
    std::swap(bt.dims[0], bt.dims[1]);
    int t = Emit("tile.transpose @0", {b}, bt);
    int acc = rng_.Chance(0.4) ? Pick([&](const Type& x) { return SameType(x, out); }) : -1;
    if (acc >= 0) {
      Emit("tile.matmul_acc @0, @1, @2", {acc, a, t}, out);
    } else {
      Emit("tile.matmul @0, @1", {a, t}, out);
    }
  }
  void Full() {
    int a = Pick([](const Type&) { return true; });
    if (a < 0) return;
    Type t = TypeOf(a);
    if (t.dtype == DType::kBool) t.dtype = DType::kI32;
    const std::string v = IsFloat(t.dtype) ? FloatLiteral(rng_) : "3";
    Emit("tile.full " + v + " : #0", {}, t, {t});
  }

  Rng& rng_;
  Program p_;
  int one_ = -1, zero_ = -1;
  std::vector<Stmt>* block_ = nullptr;  // where ops go
  std::vector<int>* pool_ = nullptr;    // the tiles they may use
};

// Stores tiles of the scope that fit a tr x tc footprint (so that iterations write disjoint
// regions) into new outputs of the domain's shape: mostly every tile nothing else uses, so that
// few ops are dead, otherwise up to `count` tiles.
void TileGen::StoreSome(const std::vector<int>& domain, const std::vector<int>& offsets, int rows,
                        int cols, int count) {
  const bool rank1 = domain.size() == 1;
  std::set<int> used;
  for (const Stmt& s : *block_) used.insert(s.args.begin(), s.args.end());
  std::vector<int> fits, leaves;
  for (int v : *pool_) {
    const Type& t = TypeOf(v);
    if (Rows(t) > p_.dims[rows].size || Cols(t) > p_.dims[cols].size || (rank1 && Rows(t) != 1))
      continue;
    fits.push_back(v);
    if (!used.count(v)) leaves.push_back(v);
  }
  if (fits.empty()) return;
  std::vector<int> chosen = {fits.back()};
  const bool all_leaves = rng_.Chance(0.7);
  for (int k = 1; k < (all_leaves ? 5 : count); ++k) {
    const int v =
        all_leaves ? (k <= static_cast<int>(leaves.size()) ? leaves[k - 1] : -1) : rng_.Pick(fits);
    if (v >= 0 && std::find(chosen.begin(), chosen.end(), v) == chosen.end()) chosen.push_back(v);
  }
  for (int v : chosen) {
    int out = p_.AddParam(p_.TensorType(domain, TypeOf(v).dtype), ParamDirection::kOut, "out");
    Store(v, out, offsets);
  }
}

// Elementwise work over a grid of tiles: loads of 1-3 inputs, a DAG, stores at the same offsets.
void TileGen::Grid() {
  const int rank = static_cast<int>(rng_.Weighted({1, 7, 2})) + 1;
  const int tr = rank == 1 ? one_ : TileDim({1, 2, 3, 4, 7, 8, 16, 32, 64});
  const int tc = TileDim({1, 3, 8, 15, 16, 17, 32, 64, 128});
  std::vector<int> domain, steps;
  if (rank == 3) {
    domain.push_back(DomainDim(2, 3));
    steps.push_back(one_);
  }
  if (rank >= 2) {
    domain.push_back(DomainDim(p_.dims[tr].size, 300));
    steps.push_back(tr);
  }
  domain.push_back(DomainDim(p_.dims[tc].size, 600));
  steps.push_back(tc);
  const DType first = rng_.Chance(0.3) ? AnyType() : FloatType();
  std::vector<int> inputs = {p_.AddParam(p_.TensorType(domain, first), ParamDirection::kIn, "x")};
  const int64_t more = rng_.Int(0, 2);
  for (int64_t k = 0; k < more; ++k) {
    const DType dt = rng_.Chance(0.6) ? first : AnyType();
    inputs.push_back(p_.AddParam(p_.TensorType(domain, dt), ParamDirection::kIn, "x"));
  }
  std::vector<Stmt> loops;
  std::vector<int> offsets = DomainLoops(inputs[0], domain, steps, loops);
  Stmt scope = Incore();
  std::vector<int> pool;
  block_ = &scope.body;
  pool_ = &pool;
  for (int x : inputs) Load(x, offsets, tr, tc);
  DagOps(rng_.Int(1, 10));
  StoreSome(domain, offsets, tr, tc, static_cast<int>(rng_.Int(1, 3)));
  if (rng_.Chance(0.15)) {  // update the first input in place
    const Param& x = p_.params[0];
    int v = Pick([&](const Type& t) {
      return t.dtype == TypeOf(x.value).dtype && Rows(t) <= p_.dims[tr].size &&
             Cols(t) <= p_.dims[tc].size && (rank > 1 || Rows(t) == 1);
    });
    if (v >= 0) {
      p_.params[0].dir = ParamDirection::kInOut;
      Store(v, inputs[0], offsets);
    }
  }
  Nest(std::move(loops), std::move(scope));
}

// Two loop nests with different tiles: the first writes an intermediate tensor (an output or a
// tensor.empty), the second reads it back, so that the runtime must order tasks whose regions
// overlap only in part.
void TileGen::Pipeline() {
  const int tr1 = TileDim({1, 2, 4, 7, 8, 16}), tc1 = TileDim({1, 3, 8, 16, 17, 64});
  const int tr2 = TileDim({1, 2, 3, 8, 16, 32}), tc2 = TileDim({1, 5, 8, 16, 32, 128});
  const std::vector<int> domain = {DomainDim(p_.dims[tr1].size + 1, 200),
                                   DomainDim(p_.dims[tc1].size + 1, 400)};
  const DType first = rng_.Chance(0.25) ? AnyType() : FloatType();
  const int x = p_.AddParam(p_.TensorType(domain, first), ParamDirection::kIn, "x");
  std::vector<Stmt> loops;
  std::vector<int> offsets = DomainLoops(x, domain, {tr1, tc1}, loops);
  Stmt scope = Incore();
  std::vector<int> pool;
  block_ = &scope.body;
  pool_ = &pool;
  Load(x, offsets, tr1, tc1);
  DagOps(rng_.Int(0, 5));
  int v = Pick(
      [&](const Type& t) { return Rows(t) <= p_.dims[tr1].size && Cols(t) <= p_.dims[tc1].size; });
  const Type mid_t = p_.TensorType(domain, TypeOf(v).dtype);
  int mid;
  if (rng_.Chance(0.5) && IsFloat(mid_t.dtype)) {  // tensor.empty holds float tensors only
    std::vector<int> sizes;
    std::string text = "tensor.empty";
    for (int k = 0; k < 2; ++k) {
      if (p_.dims[domain[k]].sym.empty()) continue;
      sizes.push_back(p_.AddValue(Type{Kind::kScalar, DType::kIndex, {}}, "n"));
      p_.body.push_back(MakeOp("tensor.dim @0, " + std::to_string(k), {x}, {}, sizes.back()));
      text += std::string(sizes.size() == 1 ? " @" : ", @") + std::to_string(sizes.size() - 1);
    }
    mid = p_.AddValue(mid_t, "mid");
    p_.body.push_back(MakeOp(text + " : #0", sizes, {mid_t}, mid));
  } else {
    mid = p_.AddParam(mid_t, ParamDirection::kOut, "mid");
  }
  Store(v, mid, offsets);
  Nest(std::move(loops), std::move(scope));

  std::vector<Stmt> loops2;
  offsets = DomainLoops(x, domain, {tr2, tc2}, loops2);
  Stmt scope2 = Incore();
  std::vector<int> pool2;
  block_ = &scope2.body;
  pool_ = &pool2;
  Load(mid, offsets, tr2, tc2);
  if (rng_.Chance(0.5)) Load(x, offsets, tr2, tc2);
  DagOps(rng_.Int(1, 6));
  StoreSome(domain, offsets, tr2, tc2, static_cast<int>(rng_.Int(1, 2)));
  Nest(std::move(loops2), std::move(scope2));
}

// Row statistics carried through a sequential loop over column tiles (iter args), then maybe a
// second pass that uses them per element; the statistics go to an N x 1 output.
void TileGen::RowLoop() {
  const int tr = TileDim({1, 2, 4, 7, 8, 16, 32});
  const int tc = TileDim({1, 3, 8, 16, 17, 32, 64, 128});
  std::vector<int> domain = {DomainDim(p_.dims[tr].size, 300), DomainDim(p_.dims[tc].size, 600)};
  const DType dt = rng_.Chance(0.8) ? FloatType() : DType::kI32;
  const int x = p_.AddParam(p_.TensorType(domain, dt), ParamDirection::kIn, "x");
  std::vector<Stmt> loops;
  std::vector<int> offsets = {MaybeLoop(x, 0, domain[0], tr, loops, 0.9, {"parallel", ""})};
  const std::vector<std::string> kinds = {"", "", "unroll"};
  Stmt scope = Incore();
  std::vector<int> pool;
  block_ = &scope.body;
  pool_ = &pool;
  const bool is_max = rng_.Chance(0.4);
  const std::string init_value = !is_max ? "0" : IsFloat(dt) ? "-inf" : "-100";
  const Type vec = p_.TileType(tr, one_, dt);
  int init = Emit("tile.full " + init_value + " : #0", {}, vec, {vec});

  std::vector<Stmt> inner;
  const int j = MaybeLoop(x, 1, domain[1], tc, inner, 1.0, kinds);
  Stmt& loop = inner.back();
  loop.carried = {p_.AddValue(vec, "p")};
  loop.inits = {init};
  std::vector<int> body_pool = pool;
  body_pool.push_back(loop.carried[0]);
  block_ = &loop.body;
  pool_ = &body_pool;
  int t = Load(x, {offsets[0], j}, tr, tc);
  DagOps(rng_.Int(0, 4));
  int e = Pick([&](const Type& ty) { return SameType(ty, TypeOf(t)); });
  int r = Emit(std::string("tile.row_") + (is_max ? "max" : "sum") + " @0", {e}, vec);
  loop.yields = {
      Emit(std::string("tile.") + (is_max ? "max" : "add") + " @0, @1", {loop.carried[0], r}, vec)};
  loop.results = {p_.AddValue(vec, "acc")};
  block_ = &scope.body;
  pool_ = &pool;
  scope.body.push_back(std::move(loop));
  const int acc = scope.body.back().results[0];
  pool.push_back(acc);

  if (rng_.Chance(0.6)) SecondPass(x, domain, offsets[0], tr, tc, acc);
  int out = p_.AddParam(p_.TensorType({domain[0], one_}, dt), ParamDirection::kOut, "out");
  Store(acc, out, {offsets[0], zero_});
  Nest(std::move(loops), std::move(scope));
}

// A loop over the column tiles of row tiles `row` of `x` that combines every element with its
// row's statistic `acc` and stores results.
void TileGen::SecondPass(int x, const std::vector<int>& domain, int row, int tr, int tc, int acc) {
  std::vector<Stmt>* const outer_block = block_;
  std::vector<int>* const outer_pool = pool_;
  std::vector<Stmt> pass;
  const int j = MaybeLoop(x, 1, domain[1], tc, pass, 0.9, {"", "", "unroll"});
  std::vector<int> pass_pool = *pool_;
  if (!pass.empty()) {
    block_ = &pass.back().body;
    pool_ = &pass_pool;
  }
  int t = Load(x, {row, j}, tr, tc);
  Emit("tile.row_expand_" + rng_.Pick(std::vector<std::string>{"sub", "div", "mul"}) + " @0, @1",
       {t, acc}, TypeOf(t));
  DagOps(rng_.Int(0, 3));
  StoreSome(domain, {row, j}, tr, tc, 1);
  block_ = outer_block;
  pool_ = outer_pool;
  if (!pass.empty()) block_->push_back(std::move(pass.back()));
}

// The product of row tiles `i` of `a` and column tiles `j` of `b` (dims m, n, k; tiles tm, tn,
// tk) added to `init`: a loop over K carrying the accumulator (matmul_acc, or matmul + add), or
// one step over the first K tile. The result joins the pool.
void TileGen::KLoop(int a, int b, bool tb, const std::array<int, 3>& ijk,
                    const std::array<int, 3>& tiles, int init) {
  const auto [i, j, k] = ijk;
  const auto [tm, tn, tk] = tiles;
  const Type acc_t = TypeOf(init);
  std::vector<Stmt> kloop;
  const int kk = MaybeLoop(a, 1, k, tk, kloop, 0.85, {"", "", "unroll"});
  std::vector<int> body_pool = *pool_;
  std::vector<Stmt>* const outer_block = block_;
  std::vector<int>* const outer_pool = pool_;
  int carried = init;
  if (!kloop.empty()) {
    kloop.back().carried = {p_.AddValue(acc_t, "p")};
    kloop.back().inits = {init};
    carried = kloop.back().carried[0];
    block_ = &kloop.back().body;
    pool_ = &body_pool;
  }
  int ta = Load(a, {i, kk}, tm, tk);
  int tbt = tb ? Load(b, {j, kk}, tn, tk) : Load(b, {kk, j}, tk, tn);
  if (rng_.Chance(0.25)) ta = Emit("tile." + rng_.Pick(kUnary) + " @0", {ta}, TypeOf(ta));
  const std::string attr = tb ? " {transpose_b = true}" : "";
  int next;
  if (rng_.Chance(0.7)) {
    next = Emit("tile.matmul_acc @0, @1, @2" + attr, {carried, ta, tbt}, acc_t);
  } else {
    int prod = Emit("tile.matmul @0, @1" + attr, {ta, tbt}, acc_t);
    next = Emit("tile.add @0, @1", {carried, prod}, acc_t);
  }
  block_ = outer_block;
  pool_ = outer_pool;
  if (kloop.empty()) return;
  kloop.back().yields = {next};
  kloop.back().results = {p_.AddValue(acc_t, "acc")};
  pool_->push_back(kloop.back().results[0]);
  block_->push_back(std::move(kloop.back()));
}

// C = A x B (B maybe transposed) over output tiles, the K dim in a loop that carries the f32
// accumulator (matmul_acc, or matmul + add), an epilogue DAG, stores.
void TileGen::MatmulLoop() {
  const int tm = TileDim({1, 2, 3, 4, 8, 16, 32});
  const int tn = TileDim({1, 8, 16, 17, 32, 64});
  const int tk = TileDim({1, 8, 16, 31, 32, 64});
  const int m = DomainDim(p_.dims[tm].size, 200), n = DomainDim(p_.dims[tn].size, 200);
  const int k = DomainDim(p_.dims[tk].size, 300);
  const DType dt = FloatType();
  const bool tb = rng_.Chance(0.35);
  const int a = p_.AddParam(p_.TensorType({m, k}, dt), ParamDirection::kIn, "a");
  const int b = p_.AddParam(p_.TensorType(tb ? std::vector<int>{n, k} : std::vector<int>{k, n}, dt),
                            ParamDirection::kIn, "b");
  std::vector<Stmt> loops;
  const std::vector<std::string> outer = {"parallel", "parallel", ""};
  const int i = MaybeLoop(a, 0, m, tm, loops, 0.9, outer);
  const int j = MaybeLoop(b, tb ? 0 : 1, n, tn, loops, 0.9, outer);
  Stmt scope = Incore();
  std::vector<int> pool;
  block_ = &scope.body;
  pool_ = &pool;
  const Type acc_t = p_.TileType(tm, tn, DType::kF32);
  int init;
  if (rng_.Chance(0.3)) {
    const int c = p_.AddParam(p_.TensorType({m, n}, DType::kF32), ParamDirection::kIn, "c");
    init = Load(c, {i, j}, tm, tn);
  } else {
    init = Emit("tile.full 0.0 : #0", {}, acc_t, {acc_t});
  }
  KLoop(a, b, tb, {i, j, k}, {tm, tn, tk}, init);
  DagOps(rng_.Int(0, 4));
  StoreSome({m, n}, {i, j}, tm, tn, static_cast<int>(rng_.Int(1, 2)));
  Nest(std::move(loops), std::move(scope));
}

}  // namespace

Program GenerateTile(Rng& rng) { return TileGen(rng).Run(); }

}  // namespace ptox::fuzz
