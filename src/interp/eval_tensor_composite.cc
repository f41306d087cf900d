// Composite tensor ops (softmax, log_softmax, rmsnorm, layernorm, swiglu, rope), each defined as
// an exact sequence of primitive f32 steps; lower-composites must match it. bf16 / f16 operands
// widen exactly and the result rounds once to their dtype (torch's softmax and norms also compute
// in f32): rounding every step would cost accuracy and, in fused kernels, most of the time.
#include "interp/eval_tensor.h"
#include "ops/type_rules.h"

namespace ptox::interp {
namespace {

// Steps of one composite, in f32.
class Steps {
 public:
  explicit Steps(const ir::OpStmt& op) : op_(op) {}

  Dense Add(const Dense& a, const Dense& b) const { return Binary(op_, Fn::kAdd, a, b); }
  Dense Sub(const Dense& a, const Dense& b) const { return Binary(op_, Fn::kSub, a, b); }
  Dense Mul(const Dense& a, const Dense& b) const { return Binary(op_, Fn::kMul, a, b); }
  Dense Div(const Dense& a, const Dense& b) const { return Binary(op_, Fn::kDiv, a, b); }
  Dense Sum(const Dense& a, int axis) const { return Reduce(op_, Fn::kAdd, a, axis, true); }
  Dense Max(const Dense& a, int axis) const { return Reduce(op_, Fn::kMax, a, axis, true); }
  // A float immediate, rounded to f32.
  Dense Imm(double v) const { return ScalarOf(DType::kF32, v); }
  // 1 / f32(C) in f32 for the size C of the last axis (inf when the axis is empty, where
  // nothing uses it).
  Dense InvLast(const Dense& x) const {
    return Imm(1.0f / static_cast<float>(x.shape.back()));
  }
  int Axis(const Dense& x) const {
    return ir::NormalizeAxis(ir::IntAttr(op_.attrs(), "axis", -1), x.rank(), OpWhere(op_),
                             op_.span());
  }
  double Eps() const { return ir::NormEps(op_); }
  const ir::OpStmt& op() const { return op_; }

 private:
  const ir::OpStmt& op_;
};

// softmax: m = reduce_max(x, axis, keep); s = x - m; e = exp(s); z = sum(e, axis, keep);
// r = recip(z); y = e * r (a division per row and a product per element, as fast kernels do: a
// division per element costs more than the rest of the softmax). log_softmax: the same up to z;
// l = log(z); y = s - l.
Dense Softmax(const Steps& st, const Dense& x, bool log) {
  const int axis = st.Axis(x);
  Dense m = st.Max(x, axis);
  Dense s = st.Sub(x, m);
  Dense e = Unary(Fn::kExp, s);
  Dense z = st.Sum(e, axis);
  if (!log) return st.Mul(e, Unary(Fn::kRecip, z));
  return st.Sub(s, Unary(Fn::kLog, z));
}

// rmsnorm: q = x*x; ss = sum(q, -1, keep); ms = ss * (1/C); a = ms + eps; r = rsqrt(a);
// t = x * r; y = t * w.
Dense Rmsnorm(const Steps& st, const Dense& x, const Dense& w) {
  const int last = x.rank() - 1;
  Dense q = st.Mul(x, x);
  Dense ss = st.Sum(q, last);
  Dense ms = st.Mul(ss, st.InvLast(x));
  Dense a = st.Add(ms, st.Imm(st.Eps()));
  Dense r = Unary(Fn::kRsqrt, a);
  Dense t = st.Mul(x, r);
  return st.Mul(t, w);
}

// layernorm: s = sum(x, -1, keep); mean = s * (1/C); d = x - mean; q = d*d;
// v = sum(q, -1, keep) * (1/C); a = v + eps; r = rsqrt(a); n = d * r; t = n * w; y = t + b.
Dense Layernorm(const Steps& st, const Dense& x, const Dense& w, const Dense& b) {
  const int last = x.rank() - 1;
  Dense s = st.Sum(x, last);
  Dense mean = st.Mul(s, st.InvLast(x));
  Dense d = st.Sub(x, mean);
  Dense q = st.Mul(d, d);
  Dense v = st.Mul(st.Sum(q, last), st.InvLast(x));
  Dense a = st.Add(v, st.Imm(st.Eps()));
  Dense r = Unary(Fn::kRsqrt, a);
  Dense n = st.Mul(d, r);
  Dense t = st.Mul(n, w);
  return st.Add(t, b);
}

// swiglu: y = silu(g) * u.
Dense Swiglu(const Steps& st, const Dense& g, const Dense& u) {
  return st.Mul(Unary(Fn::kSilu, g), u);
}

// x[..., lo : lo + len] along the last axis.
Dense LastSlice(const Steps& st, const Dense& x, int64_t lo, int64_t len) {
  std::vector<int64_t> offsets(x.rank(), 0), sizes = x.shape;
  offsets.back() = lo;
  sizes.back() = len;
  return Slice(st.op(), x, offsets, sizes);
}

// Rotate-half: concat(-x[..., D/2:], x[..., :D/2]) along the last axis.
Dense RotateHalf(const Steps& st, const Dense& x) {
  const int64_t h = x.shape.back() / 2;
  Dense hi = Unary(Fn::kNeg, LastSlice(st, x, h, h));
  Dense lo = LastSlice(st, x, 0, h);
  return Concat(st.op(), {hi, lo}, x.rank() - 1);
}

// Interleaved: rot[..., 2i] = -x[..., 2i + 1], rot[..., 2i + 1] = x[..., 2i].
Dense RotateInterleaved(const Dense& x) {
  Dense rot = x;
  for (size_t k = 0; k + 1 < x.f.size(); k += 2) {
    rot.f[k] = RoundTo(x.dtype, FloatUnary(Fn::kNeg, x.f[k + 1]));
    rot.f[k + 1] = x.f[k];
  }
  return rot;
}

// rope: rot = rotate(x); p = x * cos; q = rot * sin; y = p + q.
Dense Rope(const Steps& st, const Dense& x, const Dense& cos, const Dense& sin) {
  const bool interleaved = ir::BoolAttr(st.op().attrs(), "interleaved", false);
  Dense rot = interleaved ? RotateInterleaved(x) : RotateHalf(st, x);
  Dense p = st.Mul(x, cos);
  Dense q = st.Mul(rot, sin);
  Dense y = st.Add(p, q);
  PTOX_ICHECK(y.shape == x.shape)
      << OpWhere(st.op()) << ": cos / sin do not broadcast to the shape of x";
  return y;
}

}  // namespace

Dense EvalComposite(const ir::OpStmt& op, const std::vector<Dense>& args) {
  const Steps st(op);
  std::vector<Dense> a;  // widened exactly (scalars were rounded to x's dtype first)
  for (const Dense& d : args) a.push_back(CastTo(DType::kF32, d));
  Dense y;
  switch (op.op()) {
    case ir::OpCode::kTensorSoftmax: y = Softmax(st, a[0], /*log=*/false); break;
    case ir::OpCode::kTensorLogSoftmax: y = Softmax(st, a[0], /*log=*/true); break;
    case ir::OpCode::kTensorRmsnorm: y = Rmsnorm(st, a[0], a[1]); break;
    case ir::OpCode::kTensorLayernorm: y = Layernorm(st, a[0], a[1], a[2]); break;
    case ir::OpCode::kTensorSwiglu: y = Swiglu(st, a[0], a[1]); break;
    case ir::OpCode::kTensorRope: y = Rope(st, a[0], a[1], a[2]); break;
    default: PTOX_ICHECK(false) << "not a composite: " << OpWhere(op);
  }
  return CastTo(args[0].dtype, y);
}

}  // namespace ptox::interp
