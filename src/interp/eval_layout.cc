// Layout ops (transpose, reshape, slice, assemble, broadcast, extract) and matmul / matmul_acc with
// f32 accumulation in increasing k order, product rounded before the add (no fused multiply-add).
#include <algorithm>

#include "interp/eval.h"
#include "interp/numeric.h"
#include "kernels/quant.h"
#include "ops/type_rules.h"

namespace ptox::interp {
namespace {

TileRef Share(Tile t) { return std::make_shared<const Tile>(std::move(t)); }

RtValue EvalTranspose(const Tile& a) {
  Tile out = Tile::Make(a.cols, a.rows, a.dtype);
  out.valid_rows = a.valid_cols;
  out.valid_cols = a.valid_rows;
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t c = 0; c < a.cols; ++c) out.CopyFrom(a, r, c, c, r);
  return Share(std::move(out));
}

RtValue EvalReshape(const ir::OpStmt& op, const Tile& a) {
  PTOX_RUNTIME_CHECK(a.valid_rows == a.rows && a.valid_cols == a.cols)
      << OpWhere(op) << ": cannot reshape a partial tile (valid region " << a.valid_rows << "x"
      << a.valid_cols << " of " << a.rows << "x" << a.cols << ")";
  const ir::Type& to = op.result()->type;
  Tile out = a;
  out.rows = out.valid_rows = to.rows();
  out.cols = out.valid_cols = to.cols();
  return Share(std::move(out));
}

// Runtime check of a slice / assemble offset pair against the static limits.
void CheckOffsets(const ir::OpStmt& op, int64_t i, int64_t j, int64_t max_i, int64_t max_j) {
  PTOX_RUNTIME_CHECK(i >= 0 && i <= max_i && j >= 0 && j <= max_j)
      << OpWhere(op) << ": offsets [" << i << ", " << j << "] are out of bounds (row offset in [0, "
      << max_i << "], column offset in [0, " << max_j << "])";
}

RtValue EvalSlice(const ir::OpStmt& op, const Env& env) {
  const Tile& a = env.GetTile(op.args()[0]);
  const int64_t i = env.GetIndex(op.args()[1]);
  const int64_t j = env.GetIndex(op.args()[2]);
  const ir::Type& to = op.result()->type;
  CheckOffsets(op, i, j, a.rows - to.rows(), a.cols - to.cols());
  Tile out = Tile::Make(to.rows(), to.cols(), a.dtype);
  out.valid_rows = std::clamp<int64_t>(a.valid_rows - i, 0, out.rows);
  out.valid_cols = std::clamp<int64_t>(a.valid_cols - j, 0, out.cols);
  for (int64_t r = 0; r < out.rows; ++r)
    for (int64_t c = 0; c < out.cols; ++c) out.CopyFrom(a, i + r, j + c, r, c);
  return Share(std::move(out));
}

RtValue EvalAssemble(const ir::OpStmt& op, const Env& env) {
  const Tile& dst = env.GetTile(op.args()[0]);
  const Tile& src = env.GetTile(op.args()[1]);
  const int64_t i = env.GetIndex(op.args()[2]);
  const int64_t j = env.GetIndex(op.args()[3]);
  CheckOffsets(op, i, j, dst.rows - src.rows, dst.cols - src.cols);
  Tile out = dst;
  for (int64_t r = 0; r < src.valid_rows; ++r)
    for (int64_t c = 0; c < src.valid_cols; ++c) out.CopyFrom(src, r, c, i + r, j + c);
  return Share(std::move(out));
}

// tile.broadcast %v : tile<RxC>: element (i, j) is v's (0 or i, 0 or j); a repeated dim is
// valid in full, the other keeps v's valid extent.
RtValue EvalBroadcast(const ir::OpStmt& op, const Tile& a) {
  const ir::Type& to = op.result()->type;
  Tile out = Tile::Make(to.rows(), to.cols(), a.dtype);
  out.valid_rows = a.rows == 1 ? out.rows : a.valid_rows;
  out.valid_cols = a.cols == 1 ? out.cols : a.valid_cols;
  for (int64_t r = 0; r < out.rows; ++r)
    for (int64_t c = 0; c < out.cols; ++c)
      out.CopyFrom(a, a.rows == 1 ? 0 : r, a.cols == 1 ? 0 : c, r, c);
  return Share(std::move(out));
}

// tile.extract %t[%r, %c]: one element of the valid region as a scalar of the tile's dtype.
RtValue EvalExtract(const ir::OpStmt& op, const Env& env) {
  const Tile& a = env.GetTile(op.args()[0]);
  const int64_t r = env.GetIndex(op.args()[1]);
  const int64_t c = env.GetIndex(op.args()[2]);
  PTOX_RUNTIME_CHECK(r >= 0 && r < a.valid_rows && c >= 0 && c < a.valid_cols)
      << OpWhere(op) << ": element [" << r << ", " << c << "] is outside the valid region "
      << a.valid_rows << "x" << a.valid_cols << " of the " << a.rows << "x" << a.cols << " tile";
  return a.is_float() ? Scalar::Float(a.dtype, a.F(r, c)) : Scalar::Int(a.dtype, a.I(r, c));
}

bool TransposeB(const ir::OpStmt& op) {
  auto it = op.attrs().find("transpose_b");
  return it != op.attrs().end() && std::get<bool>(it->second);
}

// out (M x N f32, already holding the starting values) += a * b over k < K_valid, for every
// element (padding included). Returns the product's valid region.
std::pair<int64_t, int64_t> MatmulInto(const Tile& a, const Tile& b, bool tb, Tile& out) {
  const int64_t k_valid = std::min(a.valid_cols, tb ? b.valid_cols : b.valid_rows);
  for (int64_t r = 0; r < out.rows; ++r) {
    for (int64_t c = 0; c < out.cols; ++c) {
      float acc = out.F(r, c);
      for (int64_t k = 0; k < k_valid; ++k) {
        float prod = a.F(r, k) * (tb ? b.F(c, k) : b.F(k, c));
        acc = acc + prod;
      }
      out.F(r, c) = acc;
    }
  }
  return {a.valid_rows, tb ? b.valid_rows : b.valid_cols};
}

// tile.qmatmul_acc: kernels/quant.h's definition over the valid region (rows < a's valid rows,
// columns < w's valid rows, the blocks of a's valid columns).
RtValue EvalQMatmulAcc(const ir::OpStmt& op, const Env& env) {
  const Tile& c = env.GetTile(op.args()[0]);
  const Tile& a = env.GetTile(op.args()[1]);
  const Tile& w = env.GetTile(op.args()[2]);
  const quant::Format f = ir::QuantFormat(op.attrs());
  const int64_t bb = quant::BlockBytes(f);
  const int64_t blocks = std::min(a.valid_cols / quant::kBlock, w.valid_cols / bb);
  Tile out = c;
  std::vector<uint8_t> row(static_cast<size_t>(w.cols));
  std::vector<quant::ActBlock> x(static_cast<size_t>(std::max<int64_t>(blocks, 1)));
  std::vector<float> arow(static_cast<size_t>(a.cols));
  for (int64_t r = 0; r < std::min(a.valid_rows, out.rows); ++r) {
    for (int64_t k = 0; k < a.cols; ++k) arow[k] = a.F(r, k);
    quant::QuantizeRow(f, arow.data(), blocks, x.data());
    for (int64_t j = 0; j < std::min(w.valid_rows, out.cols); ++j) {
      for (int64_t k = 0; k < w.cols; ++k) row[k] = static_cast<uint8_t>(w.I(j, k));
      out.F(r, j) = quant::RowDot(f, row.data(), x.data(), blocks, out.F(r, j));
    }
  }
  out.valid_rows = std::min(c.valid_rows, a.valid_rows);
  out.valid_cols = std::min(c.valid_cols, w.valid_rows);
  return Share(std::move(out));
}

// tile.dequantize: each row's blocks as the f32 values they store (valid blocks only).
RtValue EvalDequantize(const ir::OpStmt& op, const Env& env) {
  const Tile& w = env.GetTile(op.args()[0]);
  const quant::Format f = ir::QuantFormat(op.attrs());
  const int64_t bb = quant::BlockBytes(f);
  Tile out = Tile::Make(w.rows, w.cols / bb * quant::kBlock, DType::kF32);
  out.valid_rows = w.valid_rows;
  out.valid_cols = w.valid_cols / bb * quant::kBlock;
  std::vector<uint8_t> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.valid_rows; ++r) {
    for (int64_t c = 0; c < w.cols; ++c) row[c] = static_cast<uint8_t>(w.I(r, c));
    quant::DequantizeRow(f, row.data(), out.valid_cols, &out.F(r, 0));
  }
  return Share(std::move(out));
}

RtValue EvalMatmul(const ir::OpStmt& op, const Env& env, bool acc) {
  const size_t first = acc ? 1 : 0;
  const Tile& a = env.GetTile(op.args()[first]);
  const Tile& b = env.GetTile(op.args()[first + 1]);
  const bool tb = TransposeB(op);
  Tile out = Tile::Make(a.rows, tb ? b.rows : b.cols, DType::kF32);
  if (acc) {
    const Tile& c = env.GetTile(op.args()[0]);
    out.f = c.f;
    out.valid_rows = c.valid_rows;
    out.valid_cols = c.valid_cols;
  }
  auto [vr, vc] = MatmulInto(a, b, tb, out);
  out.valid_rows = std::min(out.valid_rows, vr);
  out.valid_cols = std::min(out.valid_cols, vc);
  return Share(std::move(out));
}

}  // namespace

RtValue EvalLayoutOp(const ir::OpStmt& op, const Env& env) {
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kTranspose: return EvalTranspose(env.GetTile(op.args()[0]));
    case ir::OpFamily::kReshape: return EvalReshape(op, env.GetTile(op.args()[0]));
    case ir::OpFamily::kSlice: return EvalSlice(op, env);
    case ir::OpFamily::kAssemble: return EvalAssemble(op, env);
    case ir::OpFamily::kExtract: return EvalExtract(op, env);
    case ir::OpFamily::kBroadcast: return EvalBroadcast(op, env.GetTile(op.args()[0]));
    case ir::OpFamily::kMatmul: return EvalMatmul(op, env, /*acc=*/false);
    case ir::OpFamily::kDequantize: return EvalDequantize(op, env);
    case ir::OpFamily::kMatmulAcc:
      if (op.op() == ir::OpCode::kTileQMatmulAcc) return EvalQMatmulAcc(op, env);
      return EvalMatmul(op, env, /*acc=*/true);
    default: PTOX_ICHECK(false) << "not a layout op: " << OpWhere(op);
  }
  return Scalar{};
}

}  // namespace ptox::interp
