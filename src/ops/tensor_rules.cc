// Type rules of the tensor-level ops: numpy broadcasting, compares and select, reductions and
// argmax, matmul, layout, gather, buffers and composites. Tensor ops compute on float tensors
// (f32, bf16, f16) of rank 1..4; compares make bool tensors, argmax i32 ones, gather reads integer
// ids, and buffers (tensor.empty, tensor.store) hold any dtype but index.
#include <algorithm>
#include <climits>
#include <set>
#include <string>

#include "ops/type_rules.h"

namespace ptox::ir {

std::optional<std::vector<Dim>> BroadcastShapes(const std::vector<Dim>& a,
                                                const std::vector<Dim>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<Dim> out(r);
  for (size_t k = 0; k < r; ++k) {
    // Right-aligned: dim k of the result pairs a[k - (r - a.size())] with b's likewise.
    const Dim* x = k + a.size() >= r ? &a[k + a.size() - r] : nullptr;
    const Dim* y = k + b.size() >= r ? &b[k + b.size() - r] : nullptr;
    if (!x || (x->is_static() && x->size == 1 && y)) {
      out[k] = *y;
    } else if (!y || (y->is_static() && y->size == 1) || *x == *y) {
      out[k] = *x;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

bool ConcatNeedsType(const std::vector<Operand>& args, const Attrs& attrs) {
  if (args.empty() || !args[0].is_value() || !args[0].type().is_tensor()) return false;
  const int rank = args[0].type().rank();
  const int64_t axis = IntAttr(attrs, "axis", -1);
  if (axis < -rank || axis >= rank) return false;
  for (const Operand& a : args)
    if (a.is_value() && a.type().is_tensor() && a.type().rank() == rank &&
        !a.type().shape()[axis < 0 ? axis + rank : axis].is_static())
      return true;
  return false;
}

bool DeclaresType(const OpStmt& op) {
  if (op.results().empty()) return false;
  return HasExplicitType(FamilyOf(op.op())) ||
         (op.op() == OpCode::kTensorConcat && ConcatNeedsType(op.args(), op.attrs()));
}

int NormalizeAxis(int64_t axis, int rank, std::string_view op, const Span& span) {
  PTOX_CHECK(axis >= -rank && axis < rank, span)
      << op << " axis " << axis << " is out of range for rank " << rank;
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

int64_t IntAttr(const Attrs& attrs, const std::string& name, int64_t fallback) {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : std::get<int64_t>(it->second);
}
bool BoolAttr(const Attrs& attrs, const std::string& name, bool fallback) {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : std::get<bool>(it->second);
}
quant::Format QuantFormat(const Attrs& attrs) {
  quant::Format f = quant::Format::kQ4_0;
  auto it = attrs.find("format");
  PTOX_ICHECK(it != attrs.end() && quant::ParseFormat(std::get<std::string>(it->second).c_str(), &f))
      << "a quantized matmul without a valid format";
  return f;
}

double FloatAttr(const Attrs& attrs, const std::string& name, double fallback) {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : std::get<double>(it->second);
}

double NormEps(const OpStmt& op) {
  return FloatAttr(op.attrs(), "eps", op.op() == OpCode::kTensorRmsnorm ? 1e-6 : 1e-5);
}

namespace {

class TensorChecker {
 public:
  TensorChecker(OpCode op, const std::vector<Operand>& args, const Span& span)
      : op_(op), args_(args), span_(span) {}

  void Arity(size_t lo, size_t hi) const {
    PTOX_CHECK(args_.size() >= lo && args_.size() <= hi, span_)
        << OpName(op_) << " expects " << lo << (hi > lo ? " or more" : "") << " operands, got "
        << args_.size();
  }
  // A float tensor operand.
  const Type& Tensor(size_t i) const {
    PTOX_CHECK(i < args_.size(), span_) << OpName(op_) << " needs a tensor operand " << i;
    const Operand& a = args_[i];
    PTOX_CHECK(a.is_value() && a.type().is_tensor(), span_)
        << OpName(op_) << " operand " << i << " must be a tensor, got "
        << (a.is_value() ? a.type().ToString() : std::string("an immediate"));
    PTOX_CHECK(IsFloat(a.type().dtype()), span_)
        << OpName(op_) << " computes on float tensors, got " << a.type().ToString();
    return a.value()->type;
  }
  // A tensor operand of any dtype tensors hold (all but index).
  const Type& AnyTensor(size_t i) const {
    PTOX_CHECK(i < args_.size(), span_) << OpName(op_) << " needs a tensor operand " << i;
    const Operand& a = args_[i];
    PTOX_CHECK(a.is_value() && a.type().is_tensor() && a.type().dtype() != DType::kIndex, span_)
        << OpName(op_) << " operand " << i << " must be a tensor, got "
        << (a.is_value() ? a.type().ToString() : std::string("an immediate"));
    return a.value()->type;
  }
  void Index(size_t i) const {
    PTOX_CHECK(i < args_.size(), span_) << OpName(op_) << " needs an index operand " << i;
    const Operand& a = args_[i];
    PTOX_CHECK(a.is_int() || (a.is_value() && a.type().is_scalar() && IsInteger(a.type().dtype())),
               span_)
        << OpName(op_) << " operand " << i << " must be an integer index";
  }
  Type Declared(const std::optional<Type>& declared) const {
    PTOX_CHECK(declared.has_value() && declared->is_tensor(), span_)
        << OpName(op_) << " needs a tensor result type (': tensor<...>')";
    PTOX_CHECK(declared->rank() >= 1 && declared->rank() <= kMaxTensorRank, span_)
        << OpName(op_) << " result must have rank 1.." << kMaxTensorRank;
    return *declared;
  }
  // Two tensors broadcast together (or a tensor and a scalar second operand).
  Type Broadcast(const Type& a, size_t i) const {
    const Operand& b = args_[i];
    if (!b.is_value() || !b.type().is_tensor()) {
      PTOX_CHECK(b.is_int() || b.is_float() || b.type() == Type::Scalar(a.dtype()) ||
                     (b.type().is_scalar() && b.type().dtype() == DType::kF32),
                 span_)
          << OpName(op_) << " operand " << i << " must be a tensor or a float scalar";
      return a;
    }
    const Type& t = Tensor(i);
    PTOX_CHECK(t.dtype() == a.dtype(), span_)
        << OpName(op_) << " operand dtypes differ: " << a.ToString() << " vs " << t.ToString();
    auto shape = BroadcastShapes(a.shape(), t.shape());
    PTOX_CHECK(shape.has_value(), span_) << OpName(op_) << " shapes " << a.ToString() << " and "
                                         << t.ToString() << " do not broadcast";
    return Type::Tensor(*shape, a.dtype());
  }
  const Span& span() const { return span_; }
  std::string_view name() const { return OpName(op_); }

 private:
  OpCode op_;
  const std::vector<Operand>& args_;
  const Span& span_;
};

Type Reduce(const TensorChecker& c, OpCode op, const Type& a, const Attrs& attrs) {
  const int axis = NormalizeAxis(IntAttr(attrs, "axis", -1), a.rank(), c.name(), c.span());
  const bool keep = BoolAttr(attrs, "keepdims", false);
  const Dim& d = a.shape()[axis];
  PTOX_CHECK(op == OpCode::kTensorSum || !d.is_static() || d.size > 0, c.span())
      << c.name() << " over an empty axis " << axis << " of " << a.ToString();
  std::vector<Dim> shape = a.shape();
  if (keep) {
    shape[axis] = Dim::Static(1);
  } else {
    PTOX_CHECK(a.rank() > 1, c.span())
        << c.name() << " of a rank-1 tensor needs {keepdims = true} (no rank-0 tensors)";
    shape.erase(shape.begin() + axis);
  }
  return Type::Tensor(shape, a.dtype());
}

// tensor.argmax: a reduction's shape with i32 indices; an empty axis has no maximum.
Type Argmax(const TensorChecker& c, const Type& a, const Attrs& attrs) {
  const int axis = NormalizeAxis(IntAttr(attrs, "axis", -1), a.rank(), c.name(), c.span());
  const Dim& d = a.shape()[axis];
  PTOX_CHECK(!d.is_static() || d.size > 0, c.span())
      << c.name() << " over an empty axis " << axis << " of " << a.ToString();
  PTOX_CHECK(!d.is_static() || d.size - 1 <= INT32_MAX, c.span())
      << c.name() << " indices of axis " << axis << " of " << a.ToString() << " do not fit in i32";
  return Reduce(c, OpCode::kTensorSum, a, attrs).WithDType(DType::kI32);
}

// tensor.select %cond, %a, %b: a bool condition, a float tensor and a tensor or scalar of its
// dtype, all broadcast together.
Type Select(const TensorChecker& c, const Type& cond, const Type& a) {
  PTOX_CHECK(cond.dtype() == DType::kBool, c.span())
      << "tensor.select condition must be a bool tensor, got " << cond.ToString();
  const Type ab = c.Broadcast(a, 2);
  auto shape = BroadcastShapes(cond.shape(), ab.shape());
  PTOX_CHECK(shape.has_value(), c.span()) << "tensor.select condition " << cond.ToString()
                                          << " does not broadcast with " << ab.ToString();
  return Type::Tensor(*shape, a.dtype());
}

// tensor.gather %table, %ids: rows of a 2-D float table by i32 / i64 ids of any shape.
Type Gather(const TensorChecker& c, const Type& table, const Type& ids, const Attrs& attrs) {
  PTOX_CHECK(table.rank() == 2, c.span())
      << "tensor.gather needs a 2-D table [rows, cols], got " << table.ToString();
  PTOX_CHECK(ids.dtype() == DType::kI32 || ids.dtype() == DType::kI64, c.span())
      << "tensor.gather ids must be an i32 or i64 tensor, got " << ids.ToString();
  PTOX_CHECK(ids.rank() < kMaxTensorRank, c.span())
      << "tensor.gather result would have rank " << ids.rank() + 1 << " (at most " << kMaxTensorRank
      << ")";
  std::vector<Dim> shape = ids.shape();
  if (attrs.count("format")) {  // rows of quantized blocks, dequantized
    const quant::Format f = QuantFormat(attrs);
    const Dim& bytes = table.shape()[1];
    const int64_t blocks = bytes.is_static() ? quant::RowBlocks(f, bytes.size) : -1;
    PTOX_CHECK(table.dtype() == DType::kI8 && blocks >= 0, c.span())
        << "tensor.gather {format = \"" << quant::FormatName(f)
        << "\"} needs a table of i8 rows of whole " << quant::BlockBytes(f) << "-byte blocks"
        << (quant::RowTrailer(f) ? " and a 4-byte scale" : "") << ", got " << table.ToString();
    shape.push_back(Dim::Static(blocks * quant::kBlock));
    return Type::Tensor(shape, DType::kF32);
  }
  shape.push_back(table.shape()[1]);
  return Type::Tensor(shape, table.dtype());
}

// tensor.store %v, %dst or %v, %dst[offsets]: the whole tensor, or the box of v's shape at the
// offsets (checked here when constant against static dims, else at run time).
void Store(const TensorChecker& c, const std::vector<Operand>& args) {
  const Type& v = c.AnyTensor(0);
  const Type& dst = c.AnyTensor(1);
  if (args.size() == 2) {
    PTOX_CHECK(v == dst, c.span())
        << "tensor.store needs a destination of the value's type: " << v.ToString() << " vs "
        << dst.ToString();
    return;
  }
  PTOX_CHECK(args.size() == static_cast<size_t>(dst.rank()) + 2, c.span())
      << "tensor.store needs " << dst.rank() << " offsets for " << dst.ToString() << ", got "
      << args.size() - 2;
  PTOX_CHECK(v.rank() == dst.rank() && v.dtype() == dst.dtype(), c.span())
      << "tensor.store at offsets needs a value of the destination's rank and dtype: "
      << v.ToString() << " into " << dst.ToString();
  for (int d = 0; d < dst.rank(); ++d) {
    c.Index(2 + d);
    const Operand& off = args[2 + d];
    PTOX_CHECK(!off.is_int() || off.int_value() >= 0, c.span())
        << "tensor.store offset " << off.int_value() << " in dim " << d << " is negative";
    const Dim& want = v.shape()[d];
    const Dim& have = dst.shape()[d];
    if (!want.is_static() || !have.is_static()) continue;
    const int64_t lo = off.is_int() ? off.int_value() : 0;
    PTOX_CHECK(lo <= have.size - want.size, c.span())
        << "tensor.store [" << lo << ", " << lo + want.size << ") is out of bounds in dim " << d
        << " of " << dst.ToString();
  }
}

Type Matmul(const TensorChecker& c, const Type& a, const Type& b, bool tb) {
  PTOX_CHECK(a.rank() >= 2 && b.rank() >= 2, c.span())
      << "tensor.matmul needs operands of rank >= 2, got " << a.ToString() << " and "
      << b.ToString();
  // Float operands of any mix (f32 activations times bf16 / f16 weights read in place): both
  // widen exactly to f32, as tile.matmul's do.
  PTOX_CHECK(IsFloat(a.dtype()) && IsFloat(b.dtype()), c.span())
      << "tensor.matmul needs float operands, got " << a.ToString() << " and " << b.ToString();
  const int ra = a.rank(), rb = b.rank();
  const Dim& k_a = a.shape()[ra - 1];
  const Dim& k_b = b.shape()[tb ? rb - 1 : rb - 2];
  PTOX_CHECK(k_a == k_b, c.span()) << "tensor.matmul inner dimensions differ: " << a.ToString()
                                   << " x " << b.ToString() << (tb ? " (transposed)" : "");
  PTOX_CHECK(rb == 2 || (ra == rb && std::equal(a.shape().begin(), a.shape().end() - 2,
                                                 b.shape().begin(), b.shape().end() - 2)),
             c.span())
      << "tensor.matmul batch dims must be equal (or B 2-D): " << a.ToString() << " x "
      << b.ToString();
  std::vector<Dim> shape(a.shape().begin(), a.shape().end() - 1);
  shape.push_back(b.shape()[tb ? rb - 2 : rb - 1]);
  return Type::Tensor(shape, DType::kF32);
}

// f32 [..., M, K] x quantized rows [N, RowBytes(format, K/32)] i8 -> f32 [..., M, N].
Type QMatmul(const TensorChecker& c, const Type& a, const Type& w, const Attrs& attrs) {
  PTOX_CHECK(attrs.count("format"), c.span())
      << "tensor.qmatmul needs {format = \"q4_0\" | \"q4_1\" | \"q8_0\" | \"w8a8\"}";
  PTOX_CHECK(a.rank() >= 2 && a.dtype() == DType::kF32, c.span())
      << "tensor.qmatmul needs f32 activations of rank >= 2, got " << a.ToString();
  PTOX_CHECK(w.rank() == 2 && w.dtype() == DType::kI8, c.span())
      << "tensor.qmatmul needs its weight blocks as a 2-D i8 tensor [N, bytes per row], got "
      << w.ToString();
  const Dim& k = a.shape().back();
  PTOX_CHECK(k.is_static() && k.size % quant::kBlock == 0 && w.shape()[1].is_static(), c.span())
      << "tensor.qmatmul needs a static K that is a multiple of " << quant::kBlock << " and a "
      << "static row size, got " << a.ToString() << " x " << w.ToString();
  const quant::Format f = QuantFormat(attrs);
  PTOX_CHECK(f != quant::Format::kW8A8 || k.size <= quant::kW8A8MaxK, c.span())
      << "tensor.qmatmul {format = \"w8a8\"}: K = " << k.size << " is beyond "
      << quant::kW8A8MaxK << ", the largest K whose int32 sum is exact";
  const int64_t bytes = quant::RowBytes(f, k.size / quant::kBlock);
  PTOX_CHECK(w.shape()[1].size == bytes, c.span())
      << "tensor.qmatmul: K = " << k.size << " in format " << quant::FormatName(QuantFormat(attrs))
      << " is " << bytes << " bytes per weight row, got " << w.ToString();
  std::vector<Dim> shape(a.shape().begin(), a.shape().end() - 1);
  shape.push_back(w.shape()[0]);
  return Type::Tensor(shape, DType::kF32);
}

// Element counts agree: equal static products and the same multiset of symbols.
bool SameCount(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  int64_t pa = 1, pb = 1;
  std::multiset<std::string> sa, sb;
  for (const Dim& d : a) d.is_static() ? void(pa *= d.size) : void(sa.insert(d.sym));
  for (const Dim& d : b) d.is_static() ? void(pb *= d.size) : void(sb.insert(d.sym));
  return pa == pb && sa == sb;
}

Type Slice(const TensorChecker& c, const Type& a, const std::vector<Operand>& args,
           const Type& to) {
  PTOX_CHECK(args.size() == static_cast<size_t>(a.rank()) + 1, c.span())
      << "tensor.slice needs " << a.rank() << " offsets for " << a.ToString();
  PTOX_CHECK(to.rank() == a.rank() && to.dtype() == a.dtype(), c.span())
      << "tensor.slice result " << to.ToString() << " must have the rank and dtype of "
      << a.ToString();
  for (int d = 0; d < a.rank(); ++d) {
    c.Index(1 + d);
    const Dim& want = to.shape()[d];
    const Dim& have = a.shape()[d];
    const Operand& off = args[1 + d];
    if (want == have) {
      PTOX_CHECK(off.is_int() && off.int_value() == 0, c.span())
          << "tensor.slice takes all of dim " << d << ", so its offset must be 0";
      continue;
    }
    PTOX_CHECK(want.is_static(), c.span())
        << "tensor.slice sizes must be static or the whole dim, got " << to.ToString();
    if (have.is_static() && off.is_int()) {
      PTOX_CHECK(off.int_value() >= 0 && off.int_value() + want.size <= have.size, c.span())
          << "tensor.slice [" << off.int_value() << ", " << off.int_value() + want.size
          << ") is out of bounds in dim " << d << " of " << a.ToString();
    }
  }
  return to;
}

Type Concat(const TensorChecker& c, const std::vector<Operand>& args, const Attrs& attrs,
            const std::optional<Type>& declared) {
  const Type& a = c.Tensor(0);
  const int axis = NormalizeAxis(IntAttr(attrs, "axis", -1), a.rank(), c.name(), c.span());
  std::vector<Dim> shape = a.shape();
  for (size_t i = 1; i < args.size(); ++i) {
    const Type& t = c.Tensor(i);
    PTOX_CHECK(t.rank() == a.rank() && t.dtype() == a.dtype(), c.span())
        << "tensor.concat operands must share rank and dtype: " << a.ToString() << " vs "
        << t.ToString();
    for (int d = 0; d < a.rank(); ++d) {
      if (d == axis) continue;
      PTOX_CHECK(t.shape()[d] == a.shape()[d], c.span())
          << "tensor.concat operands differ outside axis " << axis << ": " << a.ToString()
          << " vs " << t.ToString();
    }
  }
  if (!ConcatNeedsType(args, attrs)) {
    for (size_t i = 1; i < args.size(); ++i) shape[axis].size += args[i].type().shape()[axis].size;
    Type sum = Type::Tensor(shape, a.dtype());
    PTOX_CHECK(!declared || *declared == sum, c.span())
        << "tensor.concat result is " << sum.ToString() << ", declared " << declared->ToString();
    return sum;
  }
  // Along a symbolic axis the result names its size: a symbol (bound here, or checked against
  // the size it has in scope) or a static size, checked when the program runs.
  PTOX_CHECK(declared.has_value(), c.span())
      << "tensor.concat along a symbolic dim needs its result type (': tensor<...>'), e.g. "
      << "a new symbol for the sum of the sizes";
  const Type to = c.Declared(declared);
  shape[axis] = to.rank() == a.rank() ? to.shape()[axis] : Dim::Static(0);
  PTOX_CHECK(to == Type::Tensor(shape, a.dtype()), c.span())
      << "tensor.concat result " << to.ToString() << " must be " << a.ToString()
      << " with another size along axis " << axis;
  return to;
}

// Composite operands: x, then per-op extras that broadcast against x.
Type Composite(const TensorChecker& c, OpCode op, const Attrs& attrs) {
  const Type& x = c.Tensor(0);
  auto same_last = [&](size_t i) {
    const Type& w = c.Tensor(i);
    PTOX_CHECK(w.dtype() == x.dtype() && w.rank() == 1 && w.shape()[0] == x.shape().back(),
               c.span())
        << c.name() << " operand " << i << " must be a 1-D tensor of the last dim of "
        << x.ToString() << ", got " << w.ToString();
  };
  switch (op) {
    case OpCode::kTensorSoftmax:
    case OpCode::kTensorLogSoftmax: {
      c.Arity(1, 1);
      // Defined by a reduce_max along the axis, which a static empty axis fails to verify.
      const int axis = NormalizeAxis(IntAttr(attrs, "axis", -1), x.rank(), c.name(), c.span());
      PTOX_CHECK(!(x.shape()[axis].is_static() && x.shape()[axis].size == 0), c.span())
          << c.name() << " over an empty axis " << axis << " of " << x.ToString();
      break;
    }
    case OpCode::kTensorRmsnorm:
      c.Arity(2, 2);
      same_last(1);
      break;
    case OpCode::kTensorLayernorm:
      c.Arity(3, 3);
      same_last(1);
      same_last(2);
      break;
    case OpCode::kTensorSwiglu:
      c.Arity(2, 2);
      PTOX_CHECK(c.Tensor(1) == x, c.span()) << "tensor.swiglu operands must have the same type";
      break;
    case OpCode::kTensorRope: {
      c.Arity(3, 3);
      for (size_t i = 1; i < 3; ++i)
        PTOX_CHECK(c.Broadcast(x, i) == x, c.span())
            << "tensor.rope operand " << i << " must broadcast to " << x.ToString();
      const Dim& d = x.shape().back();
      PTOX_CHECK(d.is_static() && d.size % 2 == 0, c.span())
          << "tensor.rope needs an even static last dim, got " << x.ToString();
      break;
    }
    default: PTOX_ICHECK(false) << "not a composite: " << c.name();
  }
  return x;
}

}  // namespace

std::optional<Type> InferTensorOpType(OpCode op, const std::vector<Operand>& args,
                                      const Attrs& attrs, const std::optional<Type>& declared,
                                      const Span& span) {
  TensorChecker c(op, args, span);
  switch (FamilyOf(op)) {
    case OpFamily::kTensorBinary: c.Arity(2, 2); return c.Broadcast(c.Tensor(0), 1);
    case OpFamily::kTensorUnary: c.Arity(1, 1); return c.Tensor(0);
    case OpFamily::kTensorCast: {
      c.Arity(1, 1);
      const Type& a = c.Tensor(0);
      Type to = c.Declared(declared);
      PTOX_CHECK(to.shape() == a.shape() && IsFloat(to.dtype()), span)
          << "tensor.cast converts between float dtypes of one shape: " << a.ToString() << " -> "
          << to.ToString();
      return to;
    }
    case OpFamily::kTensorCompare:
      c.Arity(2, 2);
      return c.Broadcast(c.Tensor(0), 1).WithDType(DType::kBool);
    case OpFamily::kTensorSelect: c.Arity(3, 3); return Select(c, c.AnyTensor(0), c.Tensor(1));
    case OpFamily::kTensorCausalMask: {
      c.Arity(2, 2);
      const Type& x = c.Tensor(0);
      PTOX_CHECK(x.rank() >= 2, span)
          << "tensor.causal_mask needs a tensor of rank >= 2 ([..., T, S]), got " << x.ToString();
      c.Index(1);
      return x;
    }
    case OpFamily::kTensorReduce: c.Arity(1, 1); return Reduce(c, op, c.Tensor(0), attrs);
    case OpFamily::kTensorArgmax: c.Arity(1, 1); return Argmax(c, c.Tensor(0), attrs);
    case OpFamily::kTensorGather:
      c.Arity(2, 2);
      return Gather(c, attrs.count("format") ? c.AnyTensor(0) : c.Tensor(0), c.AnyTensor(1), attrs);
    case OpFamily::kTensorMatmul:
      c.Arity(2, 2);
      if (op == OpCode::kTensorQMatmul) return QMatmul(c, c.Tensor(0), c.AnyTensor(1), attrs);
      return Matmul(c, c.Tensor(0), c.Tensor(1), BoolAttr(attrs, "transpose_b", false));
    case OpFamily::kTensorReshape: {
      c.Arity(1, 1);
      const Type& a = c.Tensor(0);
      Type to = c.Declared(declared);
      PTOX_CHECK(to.dtype() == a.dtype() && SameCount(a.shape(), to.shape()), span)
          << "tensor.reshape must keep the dtype and element count: " << a.ToString() << " -> "
          << to.ToString();
      return to;
    }
    case OpFamily::kTensorTranspose: {
      c.Arity(1, 1);
      const Type& a = c.Tensor(0);
      int d0 = NormalizeAxis(IntAttr(attrs, "dim0", -2), a.rank(), c.name(), span);
      int d1 = NormalizeAxis(IntAttr(attrs, "dim1", -1), a.rank(), c.name(), span);
      std::vector<Dim> shape = a.shape();
      std::swap(shape[d0], shape[d1]);
      return Type::Tensor(shape, a.dtype());
    }
    case OpFamily::kTensorSlice:
      PTOX_CHECK(!args.empty(), span) << "tensor.slice needs a tensor";
      return Slice(c, c.AnyTensor(0), args, c.Declared(declared));
    case OpFamily::kTensorConcat: c.Arity(2, 64); return Concat(c, args, attrs, declared);
    case OpFamily::kTensorEmpty: {
      Type to = c.Declared(declared);
      PTOX_CHECK(to.dtype() != DType::kIndex, span) << "tensor.empty cannot make index tensors";
      size_t symbols = 0;
      for (const Dim& d : to.shape()) {
        symbols += d.is_static() ? 0 : 1;
        PTOX_CHECK(!d.is_static() || d.size >= 0, span) << "tensor.empty has a negative dim";
      }
      PTOX_CHECK(args.size() == symbols, span)
          << "tensor.empty needs one size operand per symbolic dim of " << to.ToString() << " ("
          << symbols << "), got " << args.size();
      for (size_t i = 0; i < args.size(); ++i) c.Index(i);
      return to;
    }
    case OpFamily::kTensorStore:
      c.Arity(2, 2 + kMaxTensorRank);
      Store(c, args);
      return std::nullopt;
    case OpFamily::kComposite: return Composite(c, op, attrs);
    case OpFamily::kTensorCollective: {
      c.Arity(1, 1);
      PTOX_CHECK(attrs.count("op"), span) << c.name() << " needs {op = \"sum\"} or {op = \"max\"}";
      return c.Tensor(0);  // a float tensor
    }
    default: PTOX_ICHECK(false) << "not a tensor op: " << c.name();
  }
  return std::nullopt;
}

}  // namespace ptox::ir
