// Reductions (row_* / col_* sum, max, min; row_argmax) over a tile's valid region, and the
// row_expand_* / col_expand_* broadcasts.
#include <algorithm>
#include <cmath>
#include <string>

#include "interp/eval.h"
#include "interp/numeric.h"

namespace ptox::interp {
namespace {

// Reduces `len` elements of one row or column, read by `at(k)`, into out element `dst`.
// Sums run sequentially from +0 in f32 (int64 for integers, overflow -> error); max / min start
// from the first element and need at least one.
template <typename At>
void ReduceLine(const ir::OpStmt& op, const Tile& a, Fn fn, int64_t line, int64_t len, At at,
                Tile& out, int64_t dst) {
  PTOX_RUNTIME_CHECK(fn == Fn::kAdd || len > 0)
      << OpWhere(op) << ": " << FnName(fn) << " of an empty "
      << (out.rows == 1 ? "column " : "row ") << line << " (the valid region of the " << a.rows
      << "x" << a.cols << " tile is " << a.valid_rows << "x" << a.valid_cols << ")";
  const int64_t first = fn == Fn::kAdd ? 0 : 1;
  if (a.is_float()) {
    float acc = fn == Fn::kAdd ? 0.0f : a.f[at(0)];
    for (int64_t k = first; k < len; ++k) acc = FloatBinary(fn, acc, a.f[at(k)]);
    out.f[dst] = RoundTo(a.dtype, acc);
    return;
  }
  int64_t acc = fn == Fn::kAdd ? 0 : a.i[at(0)];
  for (int64_t k = first; k < len; ++k) {
    IntStatus st = IntBinary(fn, DType::kI64, acc, a.i[at(k)], &acc);
    PTOX_RUNTIME_CHECK(st == IntStatus::kOk)
        << OpWhere(op) << ": integer overflow in line " << line;
  }
  PTOX_RUNTIME_CHECK(InRange(a.dtype, acc))
      << OpWhere(op) << ": integer overflow: result " << acc << " of line " << line
      << " does not fit in " << DTypeName(a.dtype);
  out.i[dst] = acc;
}

RtValue EvalReduce(const ir::OpStmt& op, const Env& env, bool rows) {
  const Tile& a = env.GetTile(op.args()[0]);
  const Fn fn = FnOf(op.op());
  Tile out = rows ? Tile::Make(a.rows, 1, a.dtype) : Tile::Make(1, a.cols, a.dtype);
  if (rows) {
    out.valid_rows = a.valid_rows;
    for (int64_t r = 0; r < a.valid_rows; ++r)
      ReduceLine(
          op, a, fn, r, a.valid_cols, [&](int64_t k) { return r * a.cols + k; }, out, r);
  } else {
    out.valid_cols = a.valid_cols;
    for (int64_t c = 0; c < a.valid_cols; ++c)
      ReduceLine(
          op, a, fn, c, a.valid_rows, [&](int64_t k) { return k * a.cols + c; }, out, c);
  }
  return std::make_shared<const Tile>(std::move(out));
}

RtValue EvalArgmax(const ir::OpStmt& op, const Env& env) {
  const Tile& a = env.GetTile(op.args()[0]);
  Tile out = Tile::Make(a.rows, 1, DType::kI32);
  out.valid_rows = a.valid_rows;
  for (int64_t r = 0; r < a.valid_rows; ++r) {
    PTOX_RUNTIME_CHECK(a.valid_cols > 0)
        << OpWhere(op) << ": argmax of an empty row " << r << " (the valid region of the " << a.rows
        << "x" << a.cols << " tile is " << a.valid_rows << "x" << a.valid_cols << ")";
    int64_t best = 0;
    for (int64_t c = 1; c < a.valid_cols; ++c) {
      // argmax's order (kernels/scalar.h ArgmaxGt): the first NaN wins, +0 beats -0.
      bool wins = a.is_float() ? FloatCompare(Fn::kArgmaxGt, a.F(r, c), a.F(r, best))
                               : IntCompare(Fn::kArgmaxGt, a.I(r, c), a.I(r, best));
      if (wins) best = c;
    }
    out.I(r, 0) = best;
  }
  return std::make_shared<const Tile>(std::move(out));
}

RtValue EvalExpand(const ir::OpStmt& op, const Env& env, bool rows) {
  const Tile& a = env.GetTile(op.args()[0]);
  const Tile& v = env.GetTile(op.args()[1]);
  const Fn fn = FnOf(op.op());
  Tile out = Tile::Make(a.rows, a.cols, a.dtype);
  out.valid_rows = rows ? std::min(a.valid_rows, v.valid_rows) : a.valid_rows;
  out.valid_cols = rows ? a.valid_cols : std::min(a.valid_cols, v.valid_cols);
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) {
      const int64_t vk = rows ? r : c;
      if (a.is_float()) {
        out.F(r, c) = RoundTo(a.dtype, FloatBinary(fn, a.F(r, c), v.f[vk]));
        continue;
      }
      int64_t x = 0;
      IntStatus st = IntBinary(fn, a.dtype, a.I(r, c), v.i[vk], &x);
      PTOX_RUNTIME_CHECK(st == IntStatus::kOk || !out.IsValid(r, c))
          << OpWhere(op) << ": " << IntStatusName(st) << " in " << DTypeName(a.dtype)
          << " at element [" << r << ", " << c << "]: " << a.I(r, c) << " " << FnName(fn) << " "
          << v.i[vk];
      out.I(r, c) = st == IntStatus::kOk ? x : 0;
    }
  }
  return std::make_shared<const Tile>(std::move(out));
}

}  // namespace

RtValue EvalReduceOp(const ir::OpStmt& op, const Env& env) {
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kRowReduce: return EvalReduce(op, env, /*rows=*/true);
    case ir::OpFamily::kColReduce: return EvalReduce(op, env, /*rows=*/false);
    case ir::OpFamily::kRowArgmax: return EvalArgmax(op, env);
    case ir::OpFamily::kRowExpand: return EvalExpand(op, env, /*rows=*/true);
    case ir::OpFamily::kColExpand: return EvalExpand(op, env, /*rows=*/false);
    default: PTOX_ICHECK(false) << "not a reduction op: " << OpWhere(op);
  }
  return Scalar{};
}

}  // namespace ptox::interp
