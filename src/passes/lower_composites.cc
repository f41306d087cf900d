// lower-composites: rewrites each composite tensor op (softmax, log_softmax, rmsnorm, layernorm,
// swiglu, rope) into the primitive tensor ops that define it (docs/ops.md gives each sequence;
// the interpreter evaluates composites by the same sequence, so lowering changes no bit). The
// steps are f32: bf16 / f16 operands are widened by tensor.cast and the result rounded by one.
//
// Requires: verified IR. Establishes: no composite ops. The composite's result value is kept as
// the result of the last primitive (or of the final cast), so uses need no rewriting.
// Algorithm: one walk over every block; each composite expands in place. O(statements).
#include "kernels/scalar.h"
#include "ops/type_rules.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

using ir::OpCode;

ir::Attrs Reduce(int64_t axis) { return {{"axis", axis}, {"keepdims", true}}; }

// A composite being lowered: its operands as f32 (x first) and where its last step lands.
class Composite {
 public:
  Composite(BlockWriter& w, const ir::OpStmt& op) : w_(w), op_(op) {
    for (const ir::Operand& o : op.args()) args_.push_back(Widen(o));
  }
  const ir::Value& x() const { return args_[0].value(); }
  const ir::Operand& arg(size_t k) const { return args_[k]; }
  const ir::OpStmt& op() const { return op_; }
  // The last step: into the op's result, or (bf16 / f16) into an f32 value rounded into it.
  void Finish(OpCode code, std::vector<ir::Operand> args) {
    if (dtype() == DType::kF32) return w_.OpInto(op_.result(), code, std::move(args));
    ir::Value y = w_.Op(code, std::move(args), {}, {}, "y");
    w_.OpInto(op_.result(), OpCode::kTensorCast, {y});
  }

 private:
  DType dtype() const { return op_.args()[0].value()->type.dtype(); }
  // Tensors widen exactly; a scalar is converted to x's dtype first, as a tensor op's scalar is.
  ir::Operand Widen(const ir::Operand& o) const {
    const DType dt = dtype();
    if (dt == DType::kF32) return o;
    if (o.is_value() && o.value()->type.is_tensor()) {
      ir::Type t = ir::Type::Tensor(o.value()->type.shape(), DType::kF32);
      return w_.Op(OpCode::kTensorCast, {o}, {}, t, "wide");
    }
    if (o.is_value()) {
      ir::Value d = w_.Op(OpCode::kArithCast, {o}, {}, ir::Type::Scalar(dt), "s");
      return w_.Op(OpCode::kArithCast, {d}, {}, ir::Type::Scalar(DType::kF32), "wide");
    }
    const float f = static_cast<float>(o.is_int() ? o.int_value() : o.float_value());
    return ir::Operand::Float(dt == DType::kBF16 ? scalar::Bf16ToF32(scalar::F32ToBf16(f))
                                                 : scalar::F16ToF32(scalar::F32ToF16(f)));
  }

  BlockWriter& w_;
  const ir::OpStmt& op_;
  std::vector<ir::Operand> args_;
};

// 1 / f32(C) for the size C of x's last axis, rounded to f32: an immediate when C is static,
// else computed when the program runs (tensor.dim, arith.cast, arith.div).
ir::Operand InvLast(BlockWriter& w, const ir::Value& x) {
  const ir::Dim& c = x->type.shape().back();
  if (c.is_static()) return ir::Operand::Float(1.0f / static_cast<float>(c.size));
  ir::Value n = w.Op(OpCode::kTensorDim, {x, ir::Operand::Int(x->type.rank() - 1)}, {}, {}, c.sym);
  ir::Value f = w.Op(OpCode::kArithCast, {n}, {}, ir::Type::Scalar(DType::kF32), "c");
  return w.Op(OpCode::kArithDiv, {ir::Operand::Float(1.0), f}, {}, {}, "inv_c");
}

// Row statistics over the last axis: sum(v, -1, keep) * inv_c.
ir::Value Mean(BlockWriter& w, const ir::Value& v, const ir::Operand& inv_c) {
  ir::Value s = w.Op(OpCode::kTensorSum, {v}, Reduce(-1), {}, "sum");
  return w.Op(OpCode::kTensorMul, {s, inv_c}, {}, {}, "mean");
}

// Softmax and log-softmax over `axis`, max-subtracted.
void LowerSoftmax(BlockWriter& w, Composite& c, bool log) {
  const ir::Value& x = c.x();
  const int64_t axis = ir::IntAttr(c.op().attrs(), "axis", -1);
  ir::Value m = w.Op(OpCode::kTensorReduceMax, {x}, Reduce(axis), {}, "max");
  ir::Value s = w.Op(OpCode::kTensorSub, {x, m}, {}, {}, "shifted");
  ir::Value e = w.Op(OpCode::kTensorExp, {s}, {}, {}, "exp");
  ir::Value z = w.Op(OpCode::kTensorSum, {e}, Reduce(axis), {}, "denom");
  if (!log) {  // one division per row, then products: e * (1 / z), as interp defines it
    ir::Value r = w.Op(OpCode::kTensorRecip, {z}, {}, {}, "inv_denom");
    return c.Finish(OpCode::kTensorMul, {e, r});
  }
  ir::Value l = w.Op(OpCode::kTensorLog, {z}, {}, {}, "logz");
  c.Finish(OpCode::kTensorSub, {s, l});
}

void LowerNorm(BlockWriter& w, Composite& c, bool layer) {
  const ir::Value& x = c.x();
  const ir::Operand inv_c = InvLast(w, x);
  const auto eps = ir::Operand::Float(static_cast<float>(ir::NormEps(c.op())));
  ir::Value centered = x;
  if (layer) {
    ir::Value mean = Mean(w, x, inv_c);
    centered = w.Op(OpCode::kTensorSub, {x, mean}, {}, {}, "centered");
  }
  ir::Value q = w.Op(OpCode::kTensorMul, {centered, centered}, {}, {}, "sq");
  ir::Value var = Mean(w, q, inv_c);
  ir::Value a = w.Op(OpCode::kTensorAdd, {var, eps}, {}, {}, "var_eps");
  ir::Value r = w.Op(OpCode::kTensorRsqrt, {a}, {}, {}, "inv");
  ir::Value n = w.Op(OpCode::kTensorMul, {centered, r}, {}, {}, "normed");
  if (!layer) return c.Finish(OpCode::kTensorMul, {n, c.arg(1)});
  ir::Value t = w.Op(OpCode::kTensorMul, {n, c.arg(1)}, {}, {}, "scaled");
  c.Finish(OpCode::kTensorAdd, {t, c.arg(2)});
}

// x rotated for rope: rotate-half concat(-x2, x1), or interleaved pairs (-x[2i+1], x[2i]).
ir::Value Rotate(BlockWriter& w, const ir::Value& x, bool interleaved) {
  const ir::Type& t = x->type;
  const int64_t d = t.shape().back().size;
  auto slice = [&](const ir::Value& v, int64_t off, int64_t len) {
    std::vector<ir::Dim> shape = v->type.shape();
    shape.back() = ir::Dim::Static(len);
    std::vector<ir::Operand> args = {v};
    for (int k = 0; k + 1 < v->type.rank(); ++k) args.push_back(ir::Operand::Int(0));
    args.push_back(ir::Operand::Int(off));
    return w.Op(OpCode::kTensorSlice, args, {}, ir::Type::Tensor(shape, t.dtype()), "half");
  };
  auto rotate = [&](const ir::Value& v, int64_t half) {
    ir::Value lo = slice(v, 0, half), hi = slice(v, half, half);
    ir::Value neg = w.Op(OpCode::kTensorNeg, {hi}, {}, {}, "neg");
    return w.Op(OpCode::kTensorConcat, {neg, lo}, {{"axis", int64_t{-1}}}, {}, "rot");
  };
  if (!interleaved) return rotate(x, d / 2);
  std::vector<ir::Dim> pairs = t.shape();
  pairs.back() = ir::Dim::Static(d / 2);
  pairs.push_back(ir::Dim::Static(2));
  PTOX_SUPPORTED(pairs.size() <= static_cast<size_t>(ir::kMaxTensorRank), w.span())
      << "tensor.rope {interleaved = true} supports rank <= " << ir::kMaxTensorRank - 1;
  ir::Value p = w.Op(OpCode::kTensorReshape, {x}, {}, ir::Type::Tensor(pairs, t.dtype()), "pairs");
  ir::Value r = rotate(p, 1);
  return w.Op(OpCode::kTensorReshape, {r}, {}, t, "rot");
}

void LowerRope(BlockWriter& w, Composite& c) {
  const ir::Value& x = c.x();
  ir::Value rot = Rotate(w, x, ir::BoolAttr(c.op().attrs(), "interleaved", false));
  ir::Value p = w.Op(OpCode::kTensorMul, {x, c.arg(1)}, {}, {}, "xcos");
  ir::Value q = w.Op(OpCode::kTensorMul, {rot, c.arg(2)}, {}, {}, "rsin");
  c.Finish(OpCode::kTensorAdd, {p, q});
}

void Lower(BlockWriter& w, const ir::OpStmt& op) {
  Composite c(w, op);
  switch (op.op()) {
    case OpCode::kTensorSoftmax: return LowerSoftmax(w, c, false);
    case OpCode::kTensorLogSoftmax: return LowerSoftmax(w, c, true);
    case OpCode::kTensorRmsnorm: return LowerNorm(w, c, false);
    case OpCode::kTensorLayernorm: return LowerNorm(w, c, true);
    case OpCode::kTensorRope: return LowerRope(w, c);
    case OpCode::kTensorSwiglu: {
      ir::Value s = w.Op(OpCode::kTensorSilu, {c.x()}, {}, {}, "silu");
      return c.Finish(OpCode::kTensorMul, {s, c.arg(1)});
    }
    default: PTOX_ICHECK(false) << "not a composite: " << ir::OpName(op.op());
  }
}

ir::Block LowerBlock(const ir::Block& block) {
  BlockWriter w;
  for (const ir::StmtRef& s : block) {
    if (s->kind() != ir::StmtKind::kOp ||
        ir::FamilyOf(ir::As<ir::OpStmt>(*s).op()) != ir::OpFamily::kComposite) {
      w.Append(MapBodies(s, LowerBlock));
      continue;
    }
    w.set_span(s->span());
    Lower(w, ir::As<ir::OpStmt>(*s));
  }
  return w.Take();
}

}  // namespace

ir::Module LowerComposites(const ir::Module& module, const PassContext&) {
  return MapFuncs(module, [](const ir::Func& f) { return LowerBlock(f.body); });
}

}  // namespace ptox::passes
