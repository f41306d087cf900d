// Elementwise tile ops: binary, unary, compare, select, causal_mask and cast. Every op computes all
// rows x cols elements (padding included, so results are deterministic); integer errors
// (overflow, division by zero, out-of-range casts) are runtime errors inside the result's valid
// region and produce 0 in the padding.
#include <algorithm>
#include <cmath>
#include <string>

#include "interp/eval.h"
#include "interp/numeric.h"

namespace ptox::interp {
namespace {

bool IsTileOperand(const ir::Operand& o) { return o.is_value() && o.type().is_tile(); }

// The second operand of a binary / compare / select: a tile, or a scalar broadcast to all
// elements (which does not constrain the valid region).
struct Rhs {
  const Tile* tile = nullptr;
  Scalar scalar;
  float F(const Tile& like, int64_t r, int64_t c) const {
    return tile ? tile->F(r, c) : (like.is_float() ? scalar.f : 0.0f);
  }
  int64_t I(int64_t r, int64_t c) const { return tile ? tile->I(r, c) : scalar.i; }
};

Rhs GetRhs(const ir::OpStmt& op, const Env& env, size_t k, DType dtype) {
  Rhs rhs;
  const ir::Operand& o = op.args()[k];
  if (IsTileOperand(o))
    rhs.tile = &env.GetTile(o);
  else
    rhs.scalar = env.GetScalar(o, dtype, OpWhere(op));
  return rhs;
}

// A result tile shaped like `a` with dtype `d` and valid = a's valid clipped by rhs's.
Tile ResultLike(const Tile& a, const Rhs& rhs, DType d) {
  Tile out = Tile::Make(a.rows, a.cols, d);
  out.valid_rows = a.valid_rows;
  out.valid_cols = a.valid_cols;
  if (rhs.tile) {
    out.valid_rows = std::min(out.valid_rows, rhs.tile->valid_rows);
    out.valid_cols = std::min(out.valid_cols, rhs.tile->valid_cols);
  }
  return out;
}

// Reports an integer error at (r, c) when it lies in the valid region; returns the padding
// value 0 otherwise.
int64_t IntError(const ir::OpStmt& op, const Tile& out, int64_t r, int64_t c, IntStatus st,
                 const std::string& operands) {
  PTOX_RUNTIME_CHECK(!out.IsValid(r, c))
      << OpWhere(op) << ": " << IntStatusName(st) << " in " << DTypeName(out.dtype)
      << " at element [" << r << ", " << c << "]: " << operands;
  return 0;
}

RtValue EvalBinary(const ir::OpStmt& op, const Env& env, bool compare) {
  const Tile& a = env.GetTile(op.args()[0]);
  Rhs rhs = GetRhs(op, env, 1, a.dtype);
  const DType d = compare ? DType::kBool : a.dtype;
  Tile out = ResultLike(a, rhs, d);
  const Fn fn = FnOf(op.op());
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) {
      if (a.is_float()) {
        float x = a.F(r, c), y = rhs.F(a, r, c);
        if (compare)
          out.I(r, c) = FloatCompare(fn, x, y);
        else
          out.F(r, c) = RoundTo(d, FloatBinary(fn, x, y));
        continue;
      }
      int64_t x = a.I(r, c), y = rhs.I(r, c), v = 0;
      if (compare) {
        out.I(r, c) = IntCompare(fn, x, y);
        continue;
      }
      IntStatus st = IntBinary(fn, d, x, y, &v);
      if (st != IntStatus::kOk)
        v = IntError(op, out, r, c, st,
                     std::to_string(x) + " " + std::string(FnName(fn)) + " " + std::to_string(y));
      out.I(r, c) = v;
    }
  }
  return std::make_shared<const Tile>(std::move(out));
}

RtValue EvalUnary(const ir::OpStmt& op, const Env& env) {
  const Tile& a = env.GetTile(op.args()[0]);
  Tile out = ResultLike(a, Rhs{}, a.dtype);
  const Fn fn = FnOf(op.op());
  if (a.is_float()) {
    for (int64_t k = 0; k < a.size(); ++k) out.f[k] = RoundTo(a.dtype, FloatUnary(fn, a.f[k]));
  } else {
    for (int64_t r = 0; r < a.rows; ++r) {
      for (int64_t c = 0; c < a.cols; ++c) {
        int64_t v = 0;
        IntStatus st = IntUnary(fn, a.dtype, a.I(r, c), &v);
        if (st != IntStatus::kOk)
          v = IntError(op, out, r, c, st,
                       std::string(FnName(fn)) + " " + std::to_string(a.I(r, c)));
        out.I(r, c) = v;
      }
    }
  }
  return std::make_shared<const Tile>(std::move(out));
}

RtValue EvalSelect(const ir::OpStmt& op, const Env& env) {
  const Tile& cond = env.GetTile(op.args()[0]);
  const Tile& a = env.GetTile(op.args()[1]);
  Rhs rhs = GetRhs(op, env, 2, a.dtype);
  Tile out = ResultLike(a, rhs, a.dtype);
  out.valid_rows = std::min(out.valid_rows, cond.valid_rows);
  out.valid_cols = std::min(out.valid_cols, cond.valid_cols);
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) {
      const bool take_a = cond.I(r, c) != 0;
      if (a.is_float())
        out.F(r, c) = take_a ? a.F(r, c) : rhs.F(a, r, c);
      else
        out.I(r, c) = take_a ? a.I(r, c) : rhs.I(r, c);
    }
  }
  return std::make_shared<const Tile>(std::move(out));
}

// tile.causal_mask %x, %k: -inf where c - r > k (above diagonal k: numpy's tril(x, k) with -inf
// for 0), else x; every element, padding included. c - r is small (tile extents), so nothing
// overflows.
RtValue EvalCausalMask(const ir::OpStmt& op, const Env& env) {
  const Tile& a = env.GetTile(op.args()[0]);
  const int64_t k = env.GetIndex(op.args()[1]);
  Tile out = ResultLike(a, Rhs{}, a.dtype);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t c = 0; c < a.cols; ++c) out.F(r, c) = c - r > k ? -INFINITY : a.F(r, c);
  return std::make_shared<const Tile>(std::move(out));
}

RtValue EvalCast(const ir::OpStmt& op, const Env& env) {
  const Tile& a = env.GetTile(op.args()[0]);
  const DType to = op.result()->type.dtype();
  Tile out = ResultLike(a, Rhs{}, to);
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) {
      Scalar from =
          a.is_float() ? Scalar::Float(a.dtype, a.F(r, c)) : Scalar::Int(a.dtype, a.I(r, c));
      Scalar v;
      if (!Cast(from, to, &v)) {
        PTOX_RUNTIME_CHECK(!out.IsValid(r, c))
            << OpWhere(op) << ": value " << ToString(from) << " at element [" << r << ", " << c
            << "] does not fit in " << DTypeName(to);
        v = Scalar::Int(to, 0);
      }
      if (out.is_float())
        out.F(r, c) = v.f;
      else
        out.I(r, c) = v.i;
    }
  }
  return std::make_shared<const Tile>(std::move(out));
}

}  // namespace

RtValue EvalElementwiseOp(const ir::OpStmt& op, const Env& env) {
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kBinary: return EvalBinary(op, env, /*compare=*/false);
    case ir::OpFamily::kCompare: return EvalBinary(op, env, /*compare=*/true);
    case ir::OpFamily::kUnary: return EvalUnary(op, env);
    case ir::OpFamily::kSelect: return EvalSelect(op, env);
    case ir::OpFamily::kCausalMask: return EvalCausalMask(op, env);
    case ir::OpFamily::kCast: return EvalCast(op, env);
    default: PTOX_ICHECK(false) << "not an elementwise op: " << OpWhere(op);
  }
  return Scalar{};
}

}  // namespace ptox::interp
