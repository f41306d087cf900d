// lower-composites: rewrites each composite tensor op (softmax, log_softmax, rmsnorm, layernorm,
// swiglu, rope) into the primitive tensor ops that define it (docs/ops.md gives each sequence;
// the interpreter evaluates composites by the same sequence, so lowering changes no bit).
//
// Requires: verified IR. Establishes: no composite ops. The composite's result value is kept as
// the result of the last primitive, so uses need no rewriting.
// Algorithm: one walk over every block; each composite expands in place. O(statements).
#include "ops/type_rules.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

using ir::OpCode;

ir::Attrs Reduce(int64_t axis) { return {{"axis", axis}, {"keepdims", true}}; }

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
void LowerSoftmax(BlockWriter& w, const ir::OpStmt& op, bool log) {
  const ir::Value& x = op.args()[0].value();
  const int64_t axis = ir::IntAttr(op.attrs(), "axis", -1);
  ir::Value m = w.Op(OpCode::kTensorReduceMax, {x}, Reduce(axis), {}, "max");
  ir::Value s = w.Op(OpCode::kTensorSub, {x, m}, {}, {}, "shifted");
  ir::Value e = w.Op(OpCode::kTensorExp, {s}, {}, {}, "exp");
  ir::Value z = w.Op(OpCode::kTensorSum, {e}, Reduce(axis), {}, "denom");
  if (!log) {  // one division per row, then products: e * (1 / z), as interp defines it
    ir::Value r = w.Op(OpCode::kTensorRecip, {z}, {}, {}, "inv_denom");
    return w.OpInto(op.result(), OpCode::kTensorMul, {e, r});
  }
  ir::Value l = w.Op(OpCode::kTensorLog, {z}, {}, {}, "logz");
  w.OpInto(op.result(), OpCode::kTensorSub, {s, l});
}

void LowerNorm(BlockWriter& w, const ir::OpStmt& op, bool layer) {
  const ir::Value& x = op.args()[0].value();
  const ir::Operand inv_c = InvLast(w, x);
  const auto eps = ir::Operand::Float(static_cast<float>(ir::NormEps(op)));
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
  if (!layer) return w.OpInto(op.result(), OpCode::kTensorMul, {n, op.args()[1]});
  ir::Value t = w.Op(OpCode::kTensorMul, {n, op.args()[1]}, {}, {}, "scaled");
  w.OpInto(op.result(), OpCode::kTensorAdd, {t, op.args()[2]});
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

void LowerRope(BlockWriter& w, const ir::OpStmt& op) {
  const ir::Value& x = op.args()[0].value();
  ir::Value rot = Rotate(w, x, ir::BoolAttr(op.attrs(), "interleaved", false));
  ir::Value p = w.Op(OpCode::kTensorMul, {x, op.args()[1]}, {}, {}, "xcos");
  ir::Value q = w.Op(OpCode::kTensorMul, {rot, op.args()[2]}, {}, {}, "rsin");
  w.OpInto(op.result(), OpCode::kTensorAdd, {p, q});
}

void Lower(BlockWriter& w, const ir::OpStmt& op) {
  switch (op.op()) {
    case OpCode::kTensorSoftmax: return LowerSoftmax(w, op, false);
    case OpCode::kTensorLogSoftmax: return LowerSoftmax(w, op, true);
    case OpCode::kTensorRmsnorm: return LowerNorm(w, op, false);
    case OpCode::kTensorLayernorm: return LowerNorm(w, op, true);
    case OpCode::kTensorRope: return LowerRope(w, op);
    case OpCode::kTensorSwiglu: {
      ir::Value s = w.Op(OpCode::kTensorSilu, {op.args()[0]}, {}, {}, "silu");
      return w.OpInto(op.result(), OpCode::kTensorMul, {s, op.args()[1]});
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
