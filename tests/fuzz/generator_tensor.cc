// Tensor-level program generation: a DAG of tensor ops (broadcasting elementwise chains, casts,
// compares and selects, causal masks, reductions and argmax, composites, matmuls, layout ops) over
// static and symbolic dims, stored into outputs.
#include <algorithm>
#include <set>

#include "generator.h"

namespace ptox::fuzz {
namespace {

constexpr int64_t kMaxElements = 24000;  // per tensor: keeps the interpreter and runs fast
constexpr int64_t kMaxMatmulWork = 3000000;
constexpr size_t kMaxParams = 9;

const std::vector<std::string> kBinary = {"add", "sub", "mul", "div", "max", "min"};
const std::vector<std::string> kCompare = {"eq", "ne", "lt", "le", "gt", "ge"};
const std::vector<std::string> kUnary = UnaryOps("tensor.");
const std::vector<std::string> kVectorUnary = VectorFormUnaryOps("tensor.");

class TensorGen {
 public:
  explicit TensorGen(Rng& rng) : rng_(rng) {}

  Program Run() {
    const size_t w = rng_.Weighted({6, 2, 2});
    dtype_ = w == 0 ? DType::kF32 : w == 1 ? DType::kBF16 : DType::kF16;
    std::vector<int> base = BaseShape();
    Fresh(base, dtype_);
    if (rng_.Chance(0.5)) Fresh(base, dtype_);
    const int64_t ops = rng_.Int(1, 10);
    for (int64_t i = 0; i < ops; ++i) Step();
    StoreOutputs();
    return std::move(p_);
  }

 private:
  // A new dim of an awkward size: symbolic (a new symbol or one already made) or static.
  int NewDim(int64_t max, bool allow_symbol = true) {
    if (allow_symbol && rng_.Chance(0.45)) {
      if (!symbols_.empty() && rng_.Chance(0.3)) {
        int d = rng_.Pick(symbols_);
        if (p_.dims[d].size <= max) return d;
      }
      int d = p_.AddDim(AwkwardSize(rng_, max, rng_.Chance(0.35)), SymbolName(p_.symbol_count++));
      symbols_.push_back(d);
      return d;
    }
    return p_.AddDim(AwkwardSize(rng_, max, rng_.Chance(0.1)));
  }
  int One() { return p_.AddDim(1); }

  std::vector<int> BaseShape() {
    const int rank = static_cast<int>(rng_.Weighted({15, 45, 25, 15})) + 1;
    std::vector<int> dims;
    int64_t budget = kMaxElements / 4;
    for (int k = 0; k < rank; ++k) {
      // The last dim may be long; leading dims share what is left of the budget.
      const int64_t max = k + 1 == rank ? std::min<int64_t>(budget, 1100)
                                        : std::max<int64_t>(1, std::min<int64_t>(budget / 8, 70));
      dims.push_back(NewDim(max));
      budget /= std::max<int64_t>(1, p_.dims[dims.back()].size);
      budget = std::max<int64_t>(budget, 8);
    }
    return dims;
  }

  bool Fits(const std::vector<int>& dims) const {
    int64_t n = 1;
    for (int d : dims) n *= std::max<int64_t>(1, p_.dims[d].size);
    return n <= kMaxElements;
  }

  int Fresh(const std::vector<int>& dims, DType dtype) {
    int v = p_.AddParam(p_.TensorType(dims, dtype), ParamDirection::kIn, "x");
    pool_.push_back(v);
    return v;
  }
  bool CanAddParam() const { return p_.params.size() < kMaxParams; }

  // A value from the pool, recent ones more likely (so that chains grow); -1 if none fits.
  template <typename F>
  int PickValue(F&& ok) {
    std::vector<int> fits;
    for (int v : pool_)
      if (ok(p_.values[v].type)) fits.push_back(v);
    if (fits.empty()) return -1;
    if (rng_.Chance(0.6))
      return fits[fits.size() - 1 - rng_.Int(0, std::min<int64_t>(2, fits.size() - 1))];
    return rng_.Pick(fits);
  }
  int PickValue() {
    return PickValue([](const Type&) { return true; });
  }

  int Emit(const std::string& text, std::vector<int> args, const Type& result,
           std::vector<Type> types = {}) {
    int v = EmitAside(text, std::move(args), result, std::move(types));
    pool_.push_back(v);
    return v;
  }
  // A value kept out of the pool (bool masks, i32 indices: the other steps take floats).
  int EmitAside(const std::string& text, std::vector<int> args, const Type& result,
                std::vector<Type> types = {}) {
    int v = p_.AddValue(result, "v");
    p_.body.push_back(MakeOp(text, std::move(args), std::move(types), v));
    return v;
  }

  bool Same(int a, int b) const {
    const DimVar &x = p_.dims[a], &y = p_.dims[b];
    return a == b || (x.sym.empty() && y.sym.empty() && x.size == y.size) ||
           (!x.sym.empty() && x.sym == y.sym);
  }
  bool IsOne(int d) const { return p_.dims[d].sym.empty() && p_.dims[d].size == 1; }

  // Numpy broadcasting over dim ids, as the type rule does it; false when they do not broadcast.
  bool Broadcast(const std::vector<int>& a, const std::vector<int>& b, std::vector<int>& out) {
    const size_t r = std::max(a.size(), b.size());
    out.assign(r, -1);
    for (size_t k = 0; k < r; ++k) {
      const int x = k + a.size() >= r ? a[k + a.size() - r] : -1;
      const int y = k + b.size() >= r ? b[k + b.size() - r] : -1;
      if (x < 0 || (IsOne(x) && y >= 0)) {
        out[k] = y;
      } else if (y < 0 || IsOne(y) || Same(x, y)) {
        out[k] = x;
      } else {
        return false;
      }
    }
    return true;
  }

  // A shape that broadcasts against `dims`: leading dims dropped, some dims made 1, maybe a
  // new leading dim.
  std::vector<int> BroadcastPartner(const std::vector<int>& dims) {
    std::vector<int> out(dims.begin() + rng_.Int(0, static_cast<int64_t>(dims.size()) - 1),
                         dims.end());
    for (int& d : out)
      if (rng_.Chance(0.3)) d = One();
    if (out.size() < 4 && rng_.Chance(0.15)) out.insert(out.begin(), NewDim(3));
    return out;
  }

  std::string Ax(int64_t axis, int rank) {  // an axis, sometimes negative
    return std::to_string(rng_.Chance(0.4) ? axis - rank : axis);
  }

  void Step() {
    switch (rng_.Weighted({26, 15, 11, 11, 7, 4, 5, 5, 6, 4, 2, 6, 3, 2, 2, 14})) {
      case 0: Binary(); break;
      case 1: Unary(); break;
      case 2: Reduce(); break;
      case 3: Composite(); break;
      case 4: Matmul(); break;
      case 5: Cast(); break;
      case 6: Transpose(); break;
      case 7: Reshape(); break;
      case 8: Slice(); break;
      case 9: Concat(); break;
      case 10: Empty(); break;
      case 11: Select(); break;
      case 12: CausalMask(); break;
      case 13: Argmax(); break;
      case 14: Allreduce(); break;
      default: UnaryOperand(); break;
    }
  }

  // An all-reduce across the ranks (a run alone is rank 0 of 1: the values as they are), which
  // lower-collectives turns into a buffer reduced in place by a communication task of the graph.
  void Allreduce() {
    const int a = PickValue();
    const std::string op = rng_.Chance(0.5) ? "sum" : "max";
    Emit("tensor.allreduce @0 {op = \"" + op + "\"}", {a}, p_.values[a].type);
  }

  void Binary() {
    const std::string op = "tensor." + rng_.Pick(kBinary);
    int a = PickValue();
    const Type ta = p_.values[a].type;
    switch (rng_.Weighted({30, 8, 35, 27})) {
      case 0: Emit(op + " @0, @1", {a, p_.AddLiteral(FloatLiteral(rng_), DType::kF32)}, ta); return;
      case 1:
        if (CanAddParam()) {
          int s = p_.AddParam(Type{Kind::kScalar, DType::kF32, {}}, ParamDirection::kIn, "s",
                              FloatLiteral(rng_));
          Emit(op + " @0, @1", {a, s}, ta);
          return;
        }
        break;
      case 2: {
        std::vector<int> out;
        int b = PickValue([&](const Type& t) {
          return t.dtype == ta.dtype && Broadcast(ta.dims, t.dims, out) && Fits(out);
        });
        if (b >= 0) {
          Broadcast(ta.dims, p_.values[b].type.dims, out);
          if (rng_.Chance(0.3)) std::swap(a, b);
          Emit(op + " @0, @1", {a, b}, p_.TensorType(out, ta.dtype));
          return;
        }
        break;
      }
      default: break;
    }
    if (!CanAddParam()) return;
    std::vector<int> partner = BroadcastPartner(ta.dims), out;
    if (!Broadcast(ta.dims, partner, out) || !Fits(out)) return;
    int b = Fresh(partner, ta.dtype);
    if (rng_.Chance(0.3)) std::swap(a, b);
    Emit(op + " @0, @1", {a, b}, p_.TensorType(out, ta.dtype));
  }

  // A binary op or select whose right operand is a unary op with a vector form used there alone,
  // so that both are computed in one fused loop: `x * sigmoid(x)`, `l * exp(m - n)`,
  // `select(a > tanh(b), a, tanh(b))`. The vector form splits the CPU's fused loop into segments
  // after the left operand was named there; that broke (issue 60) while the shape came only from
  // rare picks (Binary draws recent values first, so a fresh unary was mostly the left operand).
  void UnaryOperand() {
    const int a = PickValue();
    const Type ta = p_.values[a].type;
    int b = rng_.Chance(0.5) ? PickValue([&](const Type& t) { return SameType(t, ta); }) : -1;
    if (b < 0) b = a;
    const std::string fn = "tensor." + rng_.Pick(kVectorUnary) + " @0";
    auto unary = [&] { return EmitAside(fn, {b}, ta); };  // out of the pool: one use, fused
    if (rng_.Chance(0.7)) {
      Emit("tensor." + rng_.Pick(kBinary) + " @0, @1", {a, unary()}, ta);
      return;
    }
    // Between the compared values (see Select); the unary twice, so that each has one use.
    const int m = EmitAside("tensor." + rng_.Pick(kCompare) + " @0, @1", {a, unary()},
                            p_.TensorType(ta.dims, DType::kBool));
    Emit("tensor.select @0, @1, @2", {m, a, unary()}, ta);
  }

  // select(a CMP b, b, a) (or against a literal): a bool mask broadcast like a binary op, and
  // exact copies of either operand.
  void Select() {
    int a = PickValue();
    const Type ta = p_.values[a].type;
    const std::string cmp = "tensor." + rng_.Pick(kCompare) + " @0, @1";
    std::vector<int> out;
    int b = PickValue([&](const Type& t) {
      return t.dtype == ta.dtype && Broadcast(ta.dims, t.dims, out) && Fits(out);
    });
    if (b < 0 || rng_.Chance(0.3)) {
      int lit = p_.AddLiteral(FloatLiteral(rng_), DType::kF32);
      int m = EmitAside(cmp, {a, lit}, p_.TensorType(ta.dims, DType::kBool));
      Emit("tensor.select @0, @1, @2", {m, a, lit}, ta);
      return;
    }
    Broadcast(ta.dims, p_.values[b].type.dims, out);
    int m = EmitAside(cmp, {a, b}, p_.TensorType(out, DType::kBool));
    Emit("tensor.select @0, @1, @2", {m, b, a}, p_.TensorType(out, ta.dtype));
  }

  // causal_mask over the last two dims at an offset (a literal, or a parameter).
  void CausalMask() {
    int a = PickValue([](const Type& t) { return t.rank() >= 2; });
    if (a < 0) return;
    const int64_t o = rng_.Int(-3, 40);
    int off = CanAddParam() && rng_.Chance(0.5)
                  ? p_.AddParam(Type{Kind::kScalar, DType::kIndex, {}}, ParamDirection::kIn, "p",
                                std::to_string(o))
                  : p_.AddLiteral(std::to_string(o));
    Emit("tensor.causal_mask @0, @1", {a, off}, p_.values[a].type);
  }

  // argmax along an axis of an input, stored straight into an i32 output (indices feed no float
  // op). Inputs only: over a computed value a target may reorder sums and pick another index
  // within the error bound, which this comparison could not tell from a bug.
  void Argmax() {
    std::vector<int> inputs;
    for (const Param& q : p_.params)
      if (p_.values[q.value].type.kind == Kind::kTensor && q.dir == ParamDirection::kIn)
        inputs.push_back(q.value);
    if (inputs.empty() || !CanAddParam()) return;
    const int a = rng_.Pick(inputs);
    const Type ta = p_.values[a].type;
    const int64_t axis = rng_.Int(0, ta.rank() - 1);
    const DimVar& d = p_.dims[ta.dims[axis]];
    if (d.sym.empty() && d.size == 0) return;  // a static empty axis: verify error
    const bool keep = ta.rank() == 1 || rng_.Chance(0.5);
    std::vector<int> dims = ta.dims;
    if (keep) {
      dims[axis] = One();
    } else {
      dims.erase(dims.begin() + axis);
    }
    const Type ti = p_.TensorType(dims, DType::kI32);
    int i = EmitAside(
        "tensor.argmax @0 {axis = " + Ax(axis, ta.rank()) + (keep ? ", keepdims = true}" : "}"),
        {a}, ti);
    Stmt store = MakeOp("tensor.store @0, @1", {i, p_.AddParam(ti, ParamDirection::kOut, "idx")});
    store.effect = true;
    p_.body.push_back(store);
  }

  void Unary() {
    int a = PickValue();
    Emit("tensor." + rng_.Pick(kUnary) + " @0", {a}, p_.values[a].type);
  }

  void Cast() {
    int a = PickValue();
    Type t = p_.values[a].type;
    const DType all[] = {DType::kF32, DType::kBF16, DType::kF16};
    DType to = all[rng_.Int(0, 2)];
    if (to == t.dtype) to = t.dtype == DType::kF32 ? DType::kBF16 : DType::kF32;
    t.dtype = to;
    Emit("tensor.cast @0 : #0", {a}, t, {t});
  }

  void Reduce() {
    int a = PickValue();
    const Type ta = p_.values[a].type;
    const int64_t axis = rng_.Int(0, ta.rank() - 1);
    const DimVar& d = p_.dims[ta.dims[axis]];
    std::string op = rng_.Pick(std::vector<std::string>{"sum", "reduce_max", "reduce_min"});
    if (d.sym.empty() && d.size == 0) op = "sum";  // max over a static empty axis: verify error
    const bool keep = ta.rank() == 1 || rng_.Chance(0.5);
    std::vector<int> dims = ta.dims;
    if (keep) {
      dims[axis] = One();
    } else {
      dims.erase(dims.begin() + axis);
    }
    std::string attrs = "{axis = " + Ax(axis, ta.rank());
    if (keep || rng_.Chance(0.3)) attrs += std::string(", keepdims = ") + (keep ? "true" : "false");
    Emit("tensor." + op + " @0 " + attrs + "}", {a}, p_.TensorType(dims, ta.dtype));
  }

  // A 1-D operand over dim `d` of `dtype`: from the pool or a new parameter.
  int Vector(int d, DType dtype) {
    int w = PickValue(
        [&](const Type& t) { return t.dtype == dtype && t.rank() == 1 && Same(t.dims[0], d); });
    if (w >= 0 && rng_.Chance(0.5)) return w;
    return CanAddParam() ? Fresh({d}, dtype) : -1;
  }

  void Composite() {
    int x = PickValue();
    const Type tx = p_.values[x].type;
    const int last = tx.dims.back();
    switch (rng_.Weighted({3, 2, 3, 3, 2, 2})) {
      case 0:
      case 1: {
        const std::string op = rng_.Chance(0.5) ? "softmax" : "log_softmax";
        const int axis = rng_.Chance(0.3) ? tx.rank() - 1 : rng_.Int(0, tx.rank() - 1);
        const DimVar& d = p_.dims[tx.dims[axis]];
        if (d.sym.empty() && d.size == 0) return;  // a static empty axis: verify error
        std::string attr = axis == tx.rank() - 1 && rng_.Chance(0.5)
                               ? ""
                               : " {axis = " + Ax(axis, tx.rank()) + "}";
        Emit("tensor." + op + " @0" + attr, {x}, tx);
        return;
      }
      case 2: {
        int w = Vector(last, tx.dtype);
        if (w < 0) return;
        Emit("tensor.rmsnorm @0, @1" + Eps(), {x, w}, tx);
        return;
      }
      case 3: {
        int w = Vector(last, tx.dtype), b = Vector(last, tx.dtype);
        if (w < 0 || b < 0) return;
        Emit("tensor.layernorm @0, @1, @2" + Eps(), {x, w, b}, tx);
        return;
      }
      case 4: {
        int u = PickValue([&](const Type& t) { return SameType(t, tx); });
        if (u < 0 || u == x) u = CanAddParam() ? Fresh(tx.dims, tx.dtype) : -1;
        if (u >= 0) Emit("tensor.swiglu @0, @1", {x, u}, tx);
        return;
      }
      default: Rope(x); return;
    }
  }

  bool SameType(const Type& a, const Type& b) const {
    if (a.dtype != b.dtype || a.rank() != b.rank()) return false;
    for (int k = 0; k < a.rank(); ++k)
      if (!Same(a.dims[k], b.dims[k])) return false;
    return true;
  }

  std::string Eps() {
    if (rng_.Chance(0.5)) return "";
    return rng_.Chance(0.5) ? " {eps = 1e-05}" : " {eps = 0.001}";
  }

  void Rope(int x) {
    const Type tx = p_.values[x].type;
    const DimVar& last = p_.dims[tx.dims.back()];
    if (!last.sym.empty() || last.size % 2 != 0 || last.size == 0) return;
    std::vector<int> args = {x};
    for (int k = 0; k < 2; ++k) {
      if (rng_.Chance(0.15) || !CanAddParam()) {
        args.push_back(p_.AddLiteral(FloatLiteral(rng_), DType::kF32));
        continue;
      }
      std::vector<int> shape(tx.dims.begin() + rng_.Int(0, tx.rank() - 1), tx.dims.end());
      for (size_t i = 0; i + 1 < shape.size(); ++i)
        if (rng_.Chance(0.4)) shape[i] = One();
      args.push_back(Fresh(shape, tx.dtype));
    }
    Emit(std::string("tensor.rope @0, @1, @2") + (rng_.Chance(0.5) ? " {interleaved = true}" : ""),
         args, tx);
  }

  void Matmul() {
    int a = PickValue([](const Type& t) { return t.rank() >= 2; });
    if (a < 0) return;
    const Type ta = p_.values[a].type;
    const int r = ta.rank(), k = ta.dims[r - 1];
    const bool tb = rng_.Chance(0.35);
    const bool batched = r > 2 && rng_.Chance(0.5);
    // B: a 2-D value of the pool with the same K, or a new parameter (2-D or batched).
    int b = batched || !rng_.Chance(0.4) ? -1 : PickValue([&](const Type& t) {
      return t.dtype == ta.dtype && t.rank() == 2 && Same(t.dims[tb ? 1 : 0], k);
    });
    if (b < 0 && !CanAddParam()) return;
    const int n = b >= 0 ? p_.values[b].type.dims[tb ? 0 : 1] : NewDim(rng_.Chance(0.7) ? 40 : 140);
    std::vector<int> out(ta.dims.begin(), ta.dims.end() - 1);
    out.push_back(n);
    int64_t work = std::max<int64_t>(1, p_.dims[k].size);
    for (int d : out) work *= std::max<int64_t>(1, p_.dims[d].size);
    if (!Fits(out) || work > kMaxMatmulWork) return;
    if (b < 0) {
      std::vector<int> dims =
          batched ? std::vector<int>(ta.dims.begin(), ta.dims.end() - 2) : std::vector<int>{};
      dims.push_back(tb ? n : k);
      dims.push_back(tb ? k : n);
      b = Fresh(dims, ta.dtype);
    }
    Emit(std::string("tensor.matmul @0, @1") + (tb ? " {transpose_b = true}" : ""), {a, b},
         p_.TensorType(out, DType::kF32));
  }

  void Transpose() {
    int a = PickValue([](const Type& t) { return t.rank() >= 2; });
    if (a < 0) return;
    Type t = p_.values[a].type;
    const int r = t.rank();
    int64_t d0 = r - 2, d1 = r - 1;
    if (r > 2 && rng_.Chance(0.5)) {
      d0 = rng_.Int(0, r - 1);
      d1 = rng_.Int(0, r - 1);
    }
    std::swap(t.dims[d0], t.dims[d1]);
    std::string attrs = d0 == r - 2 && d1 == r - 1 && rng_.Chance(0.5)
                            ? ""
                            : " {dim0 = " + Ax(d0, r) + ", dim1 = " + Ax(d1, r) + "}";
    Emit("tensor.transpose @0" + attrs, {a}, t, {});
  }

  void Reshape();
  void Slice();
  void Concat();
  void Empty();
  void StoreOutputs();

  Rng& rng_;
  Program p_;
  DType dtype_ = DType::kF32;
  std::vector<int> pool_;     // tensor values ops may use
  std::vector<int> symbols_;  // DimVars that are symbols
};

// Reshapes the compiled targets lower (split / merge of the last dim, leading dims regrouped)
// and, rarely, one they do not.
void TensorGen::Reshape() {
  int a = PickValue();
  const Type ta = p_.values[a].type;
  std::vector<int> d = ta.dims;
  const int r = ta.rank();
  auto stat = [&](int k) { return p_.dims[d[k]].sym.empty(); };
  auto size = [&](int k) { return p_.dims[d[k]].size; };
  const size_t form = rng_.Weighted({4, 3, 3, 1});
  if (form == 0 && r < 4 && stat(r - 1) && size(r - 1) > 1) {  // split the last dim
    std::vector<int64_t> divisors;
    for (int64_t q = 1; q <= size(r - 1); ++q)
      if (size(r - 1) % q == 0) divisors.push_back(q);
    const int64_t q = rng_.Pick(divisors);
    d.back() = p_.AddDim(size(r - 1) / q);
    d.push_back(p_.AddDim(q));
  } else if (form == 1 && r >= 2 && stat(r - 1) && stat(r - 2)) {  // merge the last two
    const int merged = p_.AddDim(size(r - 1) * size(r - 2));
    d.pop_back();
    d.back() = merged;
  } else if (form == 2 && r >= 3) {  // regroup the leading dims, keeping the last
    std::swap(d[0], d[r - 2]);
    if (stat(0) && stat(1) && r == 4 && rng_.Chance(0.5)) {
      const int merged = p_.AddDim(size(0) * size(1));
      d.erase(d.begin());
      d[0] = merged;
    }
  } else if (form == 3 && r == 2 && stat(0) && stat(1) && size(0) * size(1) > 0) {
    const int64_t n = size(0) * size(1);  // a different factorization: the last dim changes
    int64_t q = n;
    for (int64_t f = 2; f < n; ++f)
      if (n % f == 0 && f != size(1)) q = f;
    d = {p_.AddDim(n / q), p_.AddDim(q)};
  } else {
    return;
  }
  Type to = p_.TensorType(d, ta.dtype);
  Emit("tensor.reshape @0 : #0", {a}, to, {to});
}

// A box of static sizes at static, run-time (scalar parameter) or computed offsets; dims taken
// whole keep their dim.
void TensorGen::Slice() {
  int a = PickValue();
  const Type ta = p_.values[a].type;
  std::vector<int> out = ta.dims, args = {a};
  std::string idx;
  bool any = false;
  for (int k = 0; k < ta.rank(); ++k) {
    const DimVar dim = p_.dims[ta.dims[k]];
    std::string off = "0";
    if (rng_.Chance(0.6) && dim.size > 0) {
      const int64_t s =
          rng_.Int(dim.sym.empty() ? 0 : 1, dim.sym.empty() ? dim.size - 1 : dim.size);
      out[k] = p_.AddDim(s);
      any = true;
      const size_t how = rng_.Weighted({3, CanAddParam() ? 3 : 0, 2});
      if (how == 0) {
        off = std::to_string(rng_.Int(0, dim.size - s));
      } else if (how == 1) {
        // Mostly in bounds; sometimes past the end, which must be a run-time error everywhere.
        const int64_t o = rng_.Chance(0.85) ? rng_.Int(0, dim.size - s) : dim.size - s + 1;
        args.push_back(p_.AddParam(Type{Kind::kScalar, DType::kIndex, {}}, ParamDirection::kIn, "o",
                                   std::to_string(o)));
        off = "@" + std::to_string(args.size() - 1);
      } else {  // the end of the dim: tensor.dim - s
        int dv = p_.AddValue(Type{Kind::kScalar, DType::kIndex, {}}, "n");
        p_.body.push_back(MakeOp("tensor.dim @0, " + std::to_string(k), {a}, {}, dv));
        int o = p_.AddValue(Type{Kind::kScalar, DType::kIndex, {}}, "n");
        p_.body.push_back(MakeOp("arith.sub @0, " + std::to_string(s), {dv}, {}, o));
        args.push_back(o);
        off = "@" + std::to_string(args.size() - 1);
      }
    }
    idx += (k ? ", " : "") + off;
  }
  if (!any) return;
  Type to = p_.TensorType(out, ta.dtype);
  Emit("tensor.slice @0[" + idx + "] : #0", args, to, {to});
}

void TensorGen::Concat() {
  int a = PickValue();
  const Type ta = p_.values[a].type;
  std::vector<int> axes;
  for (int k = 0; k < ta.rank(); ++k)
    if (p_.dims[ta.dims[k]].sym.empty()) axes.push_back(k);
  if (axes.empty()) return;
  const int axis = rng_.Pick(axes);
  std::vector<int> args = {a};
  int64_t total = p_.dims[ta.dims[axis]].size;
  const int64_t n = rng_.Int(1, 2);
  for (int64_t i = 0; i < n; ++i) {
    int b = PickValue([&](const Type& t) {
      if (t.dtype != ta.dtype || t.rank() != ta.rank() || !p_.dims[t.dims[axis]].sym.empty())
        return false;
      for (int k = 0; k < t.rank(); ++k)
        if (k != axis && !Same(t.dims[k], ta.dims[k])) return false;
      return true;
    });
    if (b < 0 || rng_.Chance(0.4)) {
      if (!CanAddParam()) break;
      std::vector<int> dims = ta.dims;
      dims[axis] = p_.AddDim(AwkwardSize(rng_, 40, true));
      b = Fresh(dims, ta.dtype);
    }
    total += p_.dims[p_.values[b].type.dims[axis]].size;
    args.push_back(b);
  }
  if (args.size() < 2) return;
  std::vector<int> out = ta.dims;
  out[axis] = p_.AddDim(total);
  if (!Fits(out)) return;
  std::string ops;
  for (size_t i = 0; i < args.size(); ++i) ops += (i ? ", @" : "@") + std::to_string(i);
  Emit("tensor.concat " + ops + " {axis = " + Ax(axis, ta.rank()) + "}", args,
       p_.TensorType(out, ta.dtype));
}

// tensor.empty sized from a value's symbolic dims, filled by tensor.store, then used as a value;
// or sized by an index parameter with a symbol of its own, which only the sum over it leaves.
void TensorGen::Empty() {
  int a = PickValue();
  const Type ta = p_.values[a].type;
  // One size operand per symbolic dim, in order: tensor.dim of `a` for its own.
  std::vector<int> args;
  std::string sizes;
  auto size_of = [&](int v) {
    sizes += (args.empty() ? " @" : ", @") + std::to_string(args.size());
    args.push_back(v);
  };
  const bool fresh = ta.rank() < 4 && CanAddParam() && rng_.Chance(0.35);
  std::vector<int> dims = ta.dims;
  if (fresh) {
    const int64_t n = AwkwardSize(rng_, 9, true);
    size_of(p_.AddParam(Type{Kind::kScalar, DType::kIndex, {}}, ParamDirection::kIn, "k",
                        std::to_string(n)));
    dims.insert(dims.begin(), p_.AddDim(n, SymbolName(p_.symbol_count++)));
  }
  for (int k = 0; k < ta.rank(); ++k) {
    if (p_.dims[ta.dims[k]].sym.empty()) continue;
    int dv = p_.AddValue(Type{Kind::kScalar, DType::kIndex, {}}, "n");
    p_.body.push_back(MakeOp("tensor.dim @0, " + std::to_string(k), {a}, {}, dv));
    size_of(dv);
  }
  const Type te = p_.TensorType(dims, ta.dtype);
  int e = Emit("tensor.empty" + sizes + " : #0", args, te, {te});
  if (fresh) {
    int s = Emit("tensor.sum @0 {axis = 0}", {e}, ta);
    Emit("tensor.add @0, @1", {a, s}, ta);
    return;
  }
  Stmt store = MakeOp("tensor.store @0, @1", {a, e});
  store.effect = true;
  p_.body.push_back(store);
}

// Stores results into new outputs: usually every value nothing else uses (so that no op is
// dead), sometimes a few values only (dead ops then test the passes' dead-code handling).
void TensorGen::StoreOutputs() {
  std::set<int> used;
  for (const Stmt& s : p_.body) used.insert(s.args.begin(), s.args.end());
  std::vector<int> computed, leaves;
  for (int v : pool_) {
    if (std::any_of(p_.params.begin(), p_.params.end(),
                    [&](const Param& q) { return q.value == v; }))
      continue;
    computed.push_back(v);
    if (!used.count(v)) leaves.push_back(v);
  }
  if (computed.empty()) computed = pool_;
  std::vector<int> outs = {computed.back()};
  if (rng_.Chance(0.75)) {
    for (int v : leaves)
      if (v != outs[0] && outs.size() < 4) outs.push_back(v);
  } else {
    const int64_t more = rng_.Int(0, 2);
    for (int64_t i = 0; i < more; ++i) {
      int v = rng_.Pick(computed);
      if (std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
    }
  }
  for (int v : outs) {
    const ParamDirection dir = rng_.Chance(0.1) ? ParamDirection::kInOut : ParamDirection::kOut;
    int o = p_.AddParam(p_.values[v].type, dir, "out");
    Stmt store = MakeOp("tensor.store @0, @1", {v, o});
    store.effect = true;
    p_.body.push_back(store);
  }
}

}  // namespace

Program GenerateTensor(Rng& rng) { return TensorGen(rng).Run(); }

}  // namespace ptox::fuzz
