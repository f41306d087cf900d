// Tensor-level ops in the reference interpreter: operands are read from any tensor view into dense
// f32 values, each op computes in f32 and rounds to the dtype, and results live in Env storage.
#include "interp/eval_tensor.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "interp/comm.h"
#include "kernels/quant.h"
#include "kernels/scalar.h"
#include "ops/type_rules.h"
#include "support/rank_tree.h"

namespace ptox::interp {
namespace {

// Keeps element offsets and byte sizes far from int64 overflow.
constexpr int64_t kMaxElements = int64_t{1} << 48;

// offset + size for a message: exact also past INT64_MAX (an offset near it is a user's input).
std::string End(int64_t offset, int64_t size) {
  int64_t end = 0;
  if (!__builtin_add_overflow(offset, size, &end)) return std::to_string(end);
  return std::to_string(static_cast<uint64_t>(offset) + static_cast<uint64_t>(size));
}

int64_t Product(const std::vector<int64_t>& shape, size_t lo, size_t hi) {
  int64_t n = 1;
  for (size_t d = lo; d < hi; ++d) n *= shape[d];
  return n;
}

// The element count of `shape`; a runtime error when a dim is negative or the product of the
// nonzero dims is too large (so no partial product overflows, even for an empty tensor).
int64_t CheckedNumel(const ir::OpStmt& op, const std::vector<int64_t>& shape) {
  int64_t nonzero = 1;
  bool ok = true, empty = false;
  for (int64_t s : shape) {
    ok = ok && s >= 0 && (s == 0 || !__builtin_mul_overflow(nonzero, s, &nonzero));
    empty = empty || s == 0;
  }
  PTOX_RUNTIME_CHECK(ok && nonzero <= kMaxElements)
      << OpWhere(op) << ": a tensor of shape " << ShapeStr(shape) << " is too large";
  return empty ? 0 : nonzero;
}

// A tensor view (any strides) as a dense value; bf16 / f16 widen exactly, bool reads 0 / 1.
Dense Read(const ir::OpStmt& op, const Tensor& t) {
  Dense out = MakeDense(op, t.dtype, t.shape);
  const char* base = static_cast<const char*>(t.data);
  const int64_t bytes = DTypeBytes(t.dtype);
  const bool is_float = IsFloat(t.dtype);
  int64_t k = 0;
  Walk<1>(t.shape, {t.EffectiveStrides()}, {0}, [&](const std::array<int64_t, 1>& o) {
    if (is_float)
      out.f[k++] = ReadFloat(t.dtype, base + o[0] * bytes);
    else
      out.i[k++] = ReadInt(t.dtype, base + o[0] * bytes);
  });
  return out;
}

// Writes a dense value into a tensor view of its shape and dtype (any strides).
void Write(const Dense& v, const Tensor& t) {
  char* base = static_cast<char*>(t.data);
  const int64_t bytes = DTypeBytes(t.dtype);
  const bool is_float = IsFloat(t.dtype);
  int64_t k = 0;
  Walk<1>(t.shape, {t.EffectiveStrides()}, {0}, [&](const std::array<int64_t, 1>& o) {
    if (is_float)
      WriteFloat(t.dtype, base + o[0] * bytes, v.f[k++]);
    else
      WriteInt(t.dtype, base + o[0] * bytes, v.i[k++]);
  });
}

// Zero-filled storage the environment owns, for a value of `shape`.
const Tensor* OwnTensor(const ir::OpStmt& op, Env& env, DType dtype,
                        const std::vector<int64_t>& shape) {
  CheckedNumel(op, shape);
  try {
    return env.Own(dtype, shape);
  } catch (const std::bad_alloc&) {
    PTOX_RUNTIME_CHECK(false) << OpWhere(op) << ": out of memory for a tensor of shape "
                              << ShapeStr(shape);
  }
  return nullptr;
}

// The op's result in storage the environment owns.
const Tensor* Keep(const ir::OpStmt& op, Env& env, const Dense& v) {
  const Tensor* t = OwnTensor(op, env, v.dtype, v.shape);
  Write(v, *t);
  return t;
}

bool IsTensorOperand(const ir::Operand& o) { return o.is_value() && o.type().is_tensor(); }

// Operand k: a tensor, or a scalar (immediate or SSA) converted to `dtype` like a tile-op scalar.
Dense Arg(const ir::OpStmt& op, const Env& env, size_t k, DType dtype) {
  const ir::Operand& o = op.args()[k];
  if (IsTensorOperand(o)) return Read(op, env.GetTensor(o));
  Dense s;
  s.dtype = dtype;
  const Scalar x = env.GetScalar(o, dtype, OpWhere(op));
  if (IsFloat(dtype))
    s.f = {x.f};
  else
    s.i = {x.i};
  return s;
}

// The type rules let two tensors broadcast when their (right-aligned) dims are equal statically
// or one is a static 1, and a symbol has one size wherever it is visible (docs/ir.md; binders
// check it), so equal symbols are equal here: a symbolic 1 never stretches. Checked as an
// invariant, like the run-time shapes of matmul, reshape, store, concat and broadcasts below.
void CheckSameSymbols(const ir::OpStmt& op, size_t ia, const Dense& a, size_t ib, const Dense& b) {
  if (!IsTensorOperand(op.args()[ia]) || !IsTensorOperand(op.args()[ib])) return;
  const std::vector<ir::Dim>& ta = op.args()[ia].type().shape();
  const std::vector<ir::Dim>& tb = op.args()[ib].type().shape();
  auto is_one = [](const ir::Dim& d) { return d.is_static() && d.size == 1; };
  for (size_t k = 1; k <= std::min(ta.size(), tb.size()); ++k) {
    const size_t da = ta.size() - k, db = tb.size() - k;
    if (is_one(ta[da]) || is_one(tb[db])) continue;
    PTOX_ICHECK(a.shape[da] == b.shape[db])
        << OpWhere(op) << ": operands of shapes " << ShapeStr(a.shape) << " and "
        << ShapeStr(b.shape) << " differ in dims " << da << " and " << db << " ("
        << ir::Type::Tensor(ta, a.dtype).ToString() << " vs "
        << ir::Type::Tensor(tb, b.dtype).ToString() << ")";
  }
}

// tensor.qmatmul: kernels/quant.h's definition, one row of blocks at a time.
Dense QMatmul(const ir::OpStmt& op, const Dense& a, const Dense& w) {
  const quant::Format f = ir::QuantFormat(op.attrs());
  const int64_t m = a.shape[a.rank() - 2], k_len = a.shape.back(), n = w.shape[0];
  const int64_t blocks = k_len / quant::kBlock, row_bytes = w.shape[1];
  PTOX_ICHECK(row_bytes == quant::RowBytes(f, blocks) &&
              static_cast<int64_t>(w.i.size()) == n * row_bytes)
      << OpWhere(op) << ": weight blocks of shape " << ShapeStr(w.shape);
  std::vector<int64_t> shape(a.shape.begin(), a.shape.end() - 1);
  shape.push_back(n);
  Dense out = MakeDense(op, DType::kF32, shape);
  std::vector<uint8_t> bytes(w.i.size());
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(w.i[i]);
  std::vector<quant::ActBlock> x(static_cast<size_t>(blocks));
  const int64_t rows = Product(a.shape, 0, a.rank() - 2) * m;
  for (int64_t r = 0; r < rows; ++r) {
    quant::QuantizeRow(f, a.f.data() + r * k_len, blocks, x.data());
    for (int64_t j = 0; j < n; ++j)
      out.f[r * n + j] = quant::RowDot(f, bytes.data() + j * row_bytes, x.data(), blocks, 0.0f);
  }
  return out;
}

Dense Matmul(const ir::OpStmt& op, const Dense& a, const Dense& b, bool tb) {
  const int ra = a.rank(), rb = b.rank();
  const int64_t m = a.shape[ra - 2], k_len = a.shape[ra - 1];
  const int64_t kb = b.shape[tb ? rb - 1 : rb - 2], n = b.shape[tb ? rb - 2 : rb - 1];
  PTOX_ICHECK(k_len == kb && (rb == 2 || std::equal(a.shape.begin(), a.shape.end() - 2,
                                                    b.shape.begin(), b.shape.end() - 2)))
      << OpWhere(op) << ": shapes " << ShapeStr(a.shape) << " x " << ShapeStr(b.shape)
      << (tb ? " (B transposed)" : "") << " do not match at run time";
  std::vector<int64_t> shape(a.shape.begin(), a.shape.end() - 1);
  shape.push_back(n);
  Dense out = MakeDense(op, DType::kF32, shape);
  const int64_t batches = Product(a.shape, 0, ra - 2);
  const int64_t b_step = rb == 2 ? 0 : k_len * n;
  for (int64_t bt = 0; bt < batches; ++bt) {
    const float* pa = a.f.data() + bt * m * k_len;
    const float* pb = b.f.data() + bt * b_step;
    float* po = out.f.data() + bt * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t k = 0; k < k_len; ++k) {
          float prod = pa[i * k_len + k] * (tb ? pb[j * k_len + k] : pb[k * n + j]);
          acc = acc + prod;
        }
        po[i * n + j] = acc;
      }
    }
  }
  return out;
}

// The run-time shape of a reshape's declared type: symbols take the sizes they have in the
// operand (the type rules guarantee the same symbols on both sides).
std::vector<int64_t> ReshapeTo(const ir::OpStmt& op, const Dense& a) {
  const ir::Type& from = op.args()[0].type();
  std::unordered_map<std::string, int64_t> sizes;
  for (int d = 0; d < from.rank(); ++d) {
    const ir::Dim& dim = from.shape()[d];
    if (dim.is_static()) continue;
    auto [it, fresh] = sizes.emplace(dim.sym, a.shape[d]);
    PTOX_ICHECK(fresh || it->second == a.shape[d])
        << OpWhere(op) << ": symbol " << dim.sym << " has sizes " << it->second << " and "
        << a.shape[d] << " in the operand of shape " << ShapeStr(a.shape);
  }
  std::vector<int64_t> shape;
  for (const ir::Dim& dim : op.result()->type.shape()) {
    if (dim.is_static()) {
      shape.push_back(dim.size);
      continue;
    }
    auto it = sizes.find(dim.sym);
    PTOX_ICHECK(it != sizes.end()) << OpWhere(op) << ": symbol " << dim.sym << " is unbound";
    shape.push_back(it->second);
  }
  PTOX_ICHECK(Product(shape, 0, shape.size()) == a.numel())
      << OpWhere(op) << ": " << ShapeStr(a.shape) << " -> " << ShapeStr(shape);
  return shape;
}

Dense Transpose(const ir::OpStmt& op, const Dense& a) {
  const int d0 = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "dim0", -2), a.rank(),
                                   "tensor.transpose", op.span());
  const int d1 = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "dim1", -1), a.rank(),
                                   "tensor.transpose", op.span());
  std::vector<int64_t> shape = a.shape, strides = RowMajorStrides(a.shape);
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  Dense out = MakeDense(op, a.dtype, shape);
  int64_t k = 0;
  Walk<1>(shape, {strides}, {0}, [&](const std::array<int64_t, 1>& o) { out.f[k++] = a.f[o[0]]; });
  return out;
}

// tensor.slice %x[offsets] : type. A dim whose declared size is the operand's own dim is taken
// whole (its run-time size); the others have static sizes.
Dense EvalSlice(const ir::OpStmt& op, const Env& env) {
  Dense a = Arg(op, env, 0, DType::kF32);
  const std::vector<ir::Dim>& from = op.args()[0].type().shape();
  const std::vector<ir::Dim>& to = op.result()->type.shape();
  std::vector<int64_t> offsets, sizes;
  for (int d = 0; d < a.rank(); ++d) {
    offsets.push_back(env.GetIndex(op.args()[1 + d]));
    sizes.push_back(to[d] == from[d] ? a.shape[d] : to[d].size);
  }
  return Slice(op, a, offsets, sizes);
}

// tensor.empty %sizes : type. The sizes bind the symbolic dims in order (or must equal the
// sizes their symbols have in scope); contents are zero.
const Tensor* EvalEmpty(const ir::OpStmt& op, Env& env) {
  std::vector<int64_t> shape;
  size_t next = 0;
  for (const ir::Dim& dim : op.result()->type.shape()) {
    const int64_t n = dim.is_static() ? dim.size : env.GetIndex(op.args()[next++]);
    PTOX_RUNTIME_CHECK(n >= 0) << OpWhere(op) << ": size " << n << " of dim " << shape.size()
                               << " is negative";
    if (!dim.is_static()) env.BindSymbol(dim.sym, n, OpWhere(op));
    shape.push_back(n);
  }
  return OwnTensor(op, env, op.result()->type.dtype(), shape);
}

// tensor.store %v, %dst: the whole tensor; %v, %dst[offsets]: the box of v's shape at the
// offsets, every dim checked before anything is written.
void EvalStore(const ir::OpStmt& op, const Env& env) {
  Dense v = Arg(op, env, 0, DType::kF32);
  const Tensor& dst = env.GetTensor(op.args()[1]);
  if (op.args().size() == 2) {
    PTOX_ICHECK(dst.shape == v.shape)
        << OpWhere(op) << ": a value of shape " << ShapeStr(v.shape)
        << " does not fit the destination of shape " << ShapeStr(dst.shape);
    return Write(v, dst);
  }
  const std::vector<int64_t> strides = dst.EffectiveStrides();
  int64_t base = 0;
  for (int d = 0; d < dst.rank(); ++d) {
    const int64_t o = env.GetIndex(op.args()[2 + d]);
    PTOX_RUNTIME_CHECK(o >= 0 && o <= dst.shape[d] - v.shape[d])
        << OpWhere(op) << ": [" << o << ", " << End(o, v.shape[d]) << ") is out of bounds in dim "
        << d << " of a tensor of shape " << ShapeStr(dst.shape);
    base += o * strides[d];
  }
  Tensor box = dst;
  box.data = static_cast<char*>(dst.data) + base * DTypeBytes(dst.dtype);
  box.shape = v.shape;
  box.strides = strides;
  Write(v, box);
}

Dense EvalReduce(const ir::OpStmt& op, const Env& env) {
  Dense a = Arg(op, env, 0, DType::kF32);
  const int axis =
      ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1), a.rank(), OpWhere(op), op.span());
  return Reduce(op, FnOf(op.op()), a, axis, ir::BoolAttr(op.attrs(), "keepdims", false));
}

// Along a symbolic axis the result's declared size is a symbol (bound here, or checked) or a
// static size (checked).
Dense EvalConcat(const ir::OpStmt& op, Env& env) {
  std::vector<Dense> parts;
  for (size_t k = 0; k < op.args().size(); ++k) parts.push_back(Arg(op, env, k, DType::kF32));
  const int axis = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1), parts[0].rank(),
                                     OpWhere(op), op.span());
  Dense out = Concat(op, parts, axis);
  const ir::Dim& want = op.result()->type.shape()[axis];
  if (!want.is_static()) {
    env.BindSymbol(want.sym, out.shape[axis], OpWhere(op));
  } else {
    PTOX_RUNTIME_CHECK(want.size == out.shape[axis])
        << OpWhere(op) << ": the operands add up to " << out.shape[axis] << " along axis " << axis
        << ", not the declared " << want.size;
  }
  return out;
}

// Composites: x, then operands that broadcast against x (scalars take x's dtype).
Dense EvalCompositeOp(const ir::OpStmt& op, const Env& env) {
  std::vector<Dense> args{Arg(op, env, 0, DType::kF32)};
  for (size_t k = 1; k < op.args().size(); ++k) {
    args.push_back(Arg(op, env, k, args[0].dtype));
    CheckSameSymbols(op, 0, args[0], k, args[k]);
  }
  return EvalComposite(op, args);
}

// tensor.select %cond, %a, %b: b may be a scalar of a's dtype; all three broadcast together.
Dense EvalSelect(const ir::OpStmt& op, const Env& env) {
  Dense cond = Arg(op, env, 0, DType::kBool);
  Dense a = Arg(op, env, 1, DType::kF32);
  Dense b = Arg(op, env, 2, a.dtype);
  CheckSameSymbols(op, 0, cond, 1, a);
  CheckSameSymbols(op, 0, cond, 2, b);
  CheckSameSymbols(op, 1, a, 2, b);
  return Select(op, cond, a, b);
}

// The ranks' values (in rank order) folded in the pairwise tree of support/rank_tree.h with the
// tensor op's own steps: a sum rounds to the dtype after each add; max keeps the first NaN in
// rank order (max's fold is associative, so the tree does not change it).
Dense FoldRanks(const ir::OpStmt& op, const std::vector<Dense>& all) {
  const Fn fn = std::get<std::string>(op.attrs().at("op")) == "max" ? Fn::kMax : Fn::kAdd;
  return RankTreeFold<Dense>(
      0, static_cast<int>(all.size()), [&](int r) { return all[r]; },
      [&](const Dense& a, const Dense& b) { return Binary(op, fn, a, b); });
}

// tensor.allreduce: every rank's x folded (FoldRanks), the same bits on every rank.
// dist.allreduce is the same in place, on its tensor buffer.
Dense EvalAllreduce(const ir::OpStmt& op, const Env& env) {
  return FoldRanks(op, env.comm().Gather(Arg(op, env, 0, DType::kF32), OpWhere(op)));
}

// Rows [r0, r0 + n) of a dense value of rank >= 1.
Dense Rows(const Dense& d, int64_t r0, int64_t n) {
  Dense out = d;
  out.shape[0] = n;
  const int64_t row = d.shape[0] == 0 ? 0 : d.numel() / d.shape[0];
  auto cut = [&](auto& v) { v.assign(v.begin() + r0 * row, v.begin() + (r0 + n) * row); };
  IsFloat(d.dtype) ? cut(out.f) : cut(out.i);
  return out;
}

// The collectives on buffers (ops.def), from every rank's value in rank order (Comm::Gather).
void EvalDistCollective(const ir::OpStmt& op, const Env& env) {
  const Tensor& t = env.GetTensor(op.args()[0]);
  Comm& comm = env.comm();
  const int world = comm.size();
  switch (op.op()) {
    case ir::OpCode::kDistAllreduce: return Write(EvalAllreduce(op, env), t);
    case ir::OpCode::kDistBroadcast: {
      const int64_t root = ir::IntAttr(op.attrs(), "root", 0);
      PTOX_RUNTIME_CHECK(root < world)
          << OpWhere(op) << ": root " << root << " is not a rank of a world of " << world;
      return Write(comm.Gather(Read(op, t), OpWhere(op))[root], t);
    }
    case ir::OpCode::kDistAllgather: {
      const Dense x = Arg(op, env, 1, DType::kF32);
      PTOX_RUNTIME_CHECK(t.shape[0] == world * x.shape[0])
          << OpWhere(op) << ": out has " << t.shape[0] << " rows, not " << world << " ranks x "
          << x.shape[0];
      Dense all = x;
      all.shape[0] = 0;
      all.f.clear(), all.i.clear();
      for (const Dense& v : comm.Gather(x, OpWhere(op))) {
        all.shape[0] += v.shape[0];
        all.f.insert(all.f.end(), v.f.begin(), v.f.end());
        all.i.insert(all.i.end(), v.i.begin(), v.i.end());
      }
      return Write(all, t);
    }
    case ir::OpCode::kDistReduceScatter: {
      const Dense x = Arg(op, env, 1, DType::kF32);
      const int64_t n = t.shape[0];
      PTOX_RUNTIME_CHECK(x.shape[0] == world * n)
          << OpWhere(op) << ": x has " << x.shape[0] << " rows, not " << world << " ranks x " << n;
      std::vector<Dense> all = comm.Gather(x, OpWhere(op));
      for (Dense& v : all) v = Rows(v, comm.rank() * n, n);
      return Write(FoldRanks(op, all), t);
    }
    default: PTOX_ICHECK(false) << "not a collective: " << OpWhere(op);
  }
}

// The ops with a result, as a dense value.
Dense EvalValue(const ir::OpStmt& op, Env& env) {
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kTensorBinary: {
      Dense a = Arg(op, env, 0, DType::kF32);
      Dense b = Arg(op, env, 1, a.dtype);
      CheckSameSymbols(op, 0, a, 1, b);
      return Binary(op, FnOf(op.op()), a, b);
    }
    case ir::OpFamily::kTensorCompare: {
      Dense a = Arg(op, env, 0, DType::kF32);
      Dense b = Arg(op, env, 1, a.dtype);
      CheckSameSymbols(op, 0, a, 1, b);
      return Compare(op, FnOf(op.op()), a, b);
    }
    case ir::OpFamily::kTensorSelect: return EvalSelect(op, env);
    case ir::OpFamily::kTensorCausalMask:
      return CausalMask(Arg(op, env, 0, DType::kF32), env.GetIndex(op.args()[1]));
    case ir::OpFamily::kTensorArgmax: {
      Dense a = Arg(op, env, 0, DType::kF32);
      const int axis =
          ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1), a.rank(), OpWhere(op), op.span());
      return Argmax(op, a, axis, ir::BoolAttr(op.attrs(), "keepdims", false));
    }
    case ir::OpFamily::kTensorGather:
      return Gather(op, Arg(op, env, 0, DType::kF32), Arg(op, env, 1, DType::kF32));
    case ir::OpFamily::kTensorUnary: return Unary(FnOf(op.op()), Arg(op, env, 0, DType::kF32));
    case ir::OpFamily::kTensorCast:
      return CastTo(op.result()->type.dtype(), Arg(op, env, 0, DType::kF32));
    case ir::OpFamily::kTensorReduce: return EvalReduce(op, env);
    case ir::OpFamily::kTensorMatmul:
      if (op.op() == ir::OpCode::kTensorQMatmul)
        return QMatmul(op, Arg(op, env, 0, DType::kF32), Arg(op, env, 1, DType::kF32));
      return Matmul(op, Arg(op, env, 0, DType::kF32), Arg(op, env, 1, DType::kF32),
                    ir::BoolAttr(op.attrs(), "transpose_b", false));
    case ir::OpFamily::kTensorReshape: {
      Dense a = Arg(op, env, 0, DType::kF32);
      a.shape = ReshapeTo(op, a);
      return a;
    }
    case ir::OpFamily::kTensorTranspose: return Transpose(op, Arg(op, env, 0, DType::kF32));
    case ir::OpFamily::kTensorSlice: return EvalSlice(op, env);
    case ir::OpFamily::kTensorConcat: return EvalConcat(op, env);
    case ir::OpFamily::kComposite: return EvalCompositeOp(op, env);
    case ir::OpFamily::kTensorCollective: return EvalAllreduce(op, env);
    default: PTOX_ICHECK(false) << "not a tensor op: " << OpWhere(op);
  }
  return {};
}

}  // namespace

std::string ShapeStr(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? "x" : "") + std::to_string(shape[k]);
  return shape.empty() ? "scalar" : s;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * shape[d + 1];
  return st;
}

Broadcast BroadcastOf(const ir::OpStmt& op, const std::vector<const Dense*>& xs) {
  int r = 0;
  for (const Dense* x : xs) r = std::max(r, x->rank());
  Broadcast out;
  out.shape.assign(r, 1);
  out.strides.assign(xs.size(), std::vector<int64_t>(r, 0));
  for (int k = 0; k < r; ++k) {
    for (size_t i = 0; i < xs.size(); ++i) {
      const int ki = k - (r - xs[i]->rank());
      const int64_t n = ki >= 0 ? xs[i]->shape[ki] : 1;
      PTOX_ICHECK(n == out.shape[k] || n == 1 || out.shape[k] == 1)
          << OpWhere(op) << ": operand shapes do not broadcast (" << ShapeStr(xs[i]->shape)
          << " in dim " << k << " of the result, which is " << out.shape[k] << ")";
      if (n != 1) out.shape[k] = n;
    }
    for (size_t i = 0; i < xs.size(); ++i) {
      const int ki = k - (r - xs[i]->rank());
      if (ki >= 0 && xs[i]->shape[ki] != 1) out.strides[i][k] = RowMajorStrides(xs[i]->shape)[ki];
    }
  }
  return out;
}

Dense MakeDense(const ir::OpStmt& op, DType dtype, std::vector<int64_t> shape) {
  const int64_t n = CheckedNumel(op, shape);
  Dense d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  try {
    if (IsFloat(dtype))
      d.f.assign(n, 0.0f);
    else
      d.i.assign(n, 0);
  } catch (const std::bad_alloc&) {
    PTOX_RUNTIME_CHECK(false) << OpWhere(op) << ": out of memory for a tensor of shape "
                              << ShapeStr(d.shape);
  }
  return d;
}

Dense ScalarOf(DType dtype, double v) {
  Dense s;
  s.dtype = dtype;
  s.f = {RoundTo(dtype, static_cast<float>(v))};
  return s;
}

Dense Binary(const ir::OpStmt& op, Fn fn, const Dense& a, const Dense& b) {
  const Broadcast bc = BroadcastOf(op, {&a, &b});
  Dense out = MakeDense(op, a.dtype, bc.shape);
  int64_t k = 0;
  Walk<2>(bc.shape, {bc.strides[0], bc.strides[1]}, {0, 0}, [&](const std::array<int64_t, 2>& o) {
    out.f[k++] = RoundTo(a.dtype, FloatBinary(fn, a.f[o[0]], b.f[o[1]]));
  });
  return out;
}

Dense Unary(Fn fn, const Dense& a) {
  Dense out = a;
  for (float& v : out.f) v = RoundTo(a.dtype, FloatUnary(fn, v));
  return out;
}

Dense CastTo(DType to, const Dense& a) {
  Dense out = a;
  out.dtype = to;
  for (float& v : out.f) {
    Scalar s;
    Cast(Scalar::Float(a.dtype, v), to, &s);  // float -> float always fits
    v = s.f;
  }
  return out;
}

Dense Reduce(const ir::OpStmt& op, Fn fn, const Dense& a, int axis, bool keepdims) {
  const int64_t outer = Product(a.shape, 0, axis), len = a.shape[axis];
  const int64_t inner = Product(a.shape, axis + 1, a.shape.size());
  PTOX_RUNTIME_CHECK(fn == Fn::kAdd || len > 0 || outer == 0 || inner == 0)
      << OpWhere(op) << ": " << FnName(fn) << " over the empty axis " << axis
      << " of a tensor of shape " << ShapeStr(a.shape);
  std::vector<int64_t> shape = a.shape;
  if (keepdims) {
    shape[axis] = 1;
  } else {
    shape.erase(shape.begin() + axis);
  }
  Dense out = MakeDense(op, a.dtype, shape);
  const int64_t first = fn == Fn::kAdd ? 0 : 1;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* line = a.f.data() + o * len * inner + i;
      float acc = fn == Fn::kAdd ? 0.0f : line[0];
      for (int64_t k = first; k < len; ++k) acc = FloatBinary(fn, acc, line[k * inner]);
      out.f[o * inner + i] = RoundTo(a.dtype, acc);
    }
  }
  return out;
}

Dense Slice(const ir::OpStmt& op, const Dense& a, const std::vector<int64_t>& offsets,
            const std::vector<int64_t>& sizes) {
  const std::vector<int64_t> strides = RowMajorStrides(a.shape);
  int64_t base = 0;
  for (int d = 0; d < a.rank(); ++d) {
    const bool ok = offsets[d] >= 0 && sizes[d] >= 0 && offsets[d] <= a.shape[d] - sizes[d];
    PTOX_RUNTIME_CHECK(ok) << OpWhere(op) << ": [" << offsets[d] << ", " << End(offsets[d], sizes[d])
                           << ") is out of bounds in dim " << d << " of a tensor of shape "
                           << ShapeStr(a.shape);
    base += offsets[d] * strides[d];
  }
  Dense out = MakeDense(op, a.dtype, sizes);
  int64_t k = 0;
  if (IsFloat(a.dtype))
    Walk<1>(sizes, {strides}, {base},
            [&](const std::array<int64_t, 1>& o) { out.f[k++] = a.f[o[0]]; });
  else  // integer tensors (GGUF weight blocks as i8)
    Walk<1>(sizes, {strides}, {base},
            [&](const std::array<int64_t, 1>& o) { out.i[k++] = a.i[o[0]]; });
  return out;
}

Dense Concat(const ir::OpStmt& op, const std::vector<Dense>& parts, int axis) {
  std::vector<int64_t> shape = parts[0].shape;
  shape[axis] = 0;
  for (const Dense& p : parts) {
    bool same = p.rank() == static_cast<int>(shape.size());
    for (int d = 0; same && d < p.rank(); ++d) same = d == axis || p.shape[d] == shape[d];
    PTOX_ICHECK(same) << OpWhere(op) << ": operands of shapes " << ShapeStr(parts[0].shape)
                      << " and " << ShapeStr(p.shape) << " differ outside axis " << axis;
    shape[axis] += p.shape[axis];
  }
  Dense out = MakeDense(op, parts[0].dtype, shape);
  const std::vector<int64_t> out_strides = RowMajorStrides(shape);
  int64_t at = 0;
  for (const Dense& p : parts) {
    Walk<2>(p.shape, {RowMajorStrides(p.shape), out_strides}, {0, at * out_strides[axis]},
            [&](const std::array<int64_t, 2>& o) { out.f[o[1]] = p.f[o[0]]; });
    at += p.shape[axis];
  }
  return out;
}

Dense ReadTensor(const ir::OpStmt& op, const Tensor& t) { return Read(op, t); }
void WriteTensor(const Dense& v, const Tensor& t) { Write(v, t); }
const Tensor* OwnedTensor(const ir::OpStmt& op, Env& env, DType dtype,
                          const std::vector<int64_t>& shape) {
  return OwnTensor(op, env, dtype, shape);
}

std::optional<RtValue> EvalTensorOp(const ir::OpStmt& op, Env& env) {
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kTensorEmpty: return EvalEmpty(op, env);
    case ir::OpFamily::kTensorStore: EvalStore(op, env); return std::nullopt;
    case ir::OpFamily::kDistCollective: EvalDistCollective(op, env); return std::nullopt;
    case ir::OpFamily::kDistRma: EvalRma(op, env); return std::nullopt;
    default: return Keep(op, env, EvalValue(op, env));
  }
}

}  // namespace ptox::interp
