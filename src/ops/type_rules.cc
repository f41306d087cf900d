// Per-family type rules for the ops in ops.def.
#include "ops/type_rules.h"

#include <algorithm>
#include <span>
#include <string>

namespace ptox::ir {
namespace {

std::string Describe(const Operand& a) {
  if (a.is_value()) return "'" + a.type().ToString() + "'";
  return a.is_int() ? "integer immediate" : "float immediate";
}

AttrKind KindOf(const AttrValue& v) {
  if (std::holds_alternative<bool>(v)) return AttrKind::kBool;
  if (std::holds_alternative<int64_t>(v)) return AttrKind::kInt;
  return std::holds_alternative<double>(v) ? AttrKind::kFloat : AttrKind::kString;
}
// "an int", "a float": an attribute kind in an error message.
std::string KindPhrase(AttrKind k) {
  return (k == AttrKind::kInt ? "an " : "a ") + std::string(AttrKindName(k));
}

// Whether operand `a` can stand where a scalar of dtype `want` is expected. Immediates adapt:
// integer immediates fit any integer or float type, float immediates any float type.
bool FitsScalar(const Operand& a, DType want) {
  if (a.is_int()) return want != DType::kBool;
  if (a.is_float()) return IsFloat(want);
  return a.type() == Type::Scalar(want);
}

class Checker {
 public:
  Checker(OpCode op, const std::vector<Operand>& args, const Span& span)
      : op_(op), args_(args), span_(span) {}

  void Arity(size_t n) const {
    PTOX_CHECK(args_.size() == n, span_)
        << OpName(op_) << " expects " << n << " operands, got " << args_.size();
  }
  void MinArity(size_t n) const {
    PTOX_CHECK(args_.size() >= n, span_)
        << OpName(op_) << " expects at least " << n << " operands, got " << args_.size();
  }
  // Operand i; a missing one is an error (an op whose operand count follows from another
  // operand's type reads that operand first).
  const Operand& Arg(size_t i) const {
    PTOX_CHECK(i < args_.size(), span_)
        << OpName(op_) << " expects at least " << i + 1 << " operands, got " << args_.size();
    return args_[i];
  }
  const Type& Tile(size_t i) const {
    PTOX_CHECK(Arg(i).is_value() && Arg(i).type().is_tile(), span_)
        << OpName(op_) << " operand " << i << " must be a tile, got " << Describe(Arg(i));
    return Arg(i).value()->type;
  }
  const Type& Tensor(size_t i) const {
    PTOX_CHECK(Arg(i).is_value() && Arg(i).type().is_tensor(), span_)
        << OpName(op_) << " operand " << i << " must be a tensor, got " << Describe(Arg(i));
    return Arg(i).value()->type;
  }
  void Index(size_t i) const {
    const Operand& a = Arg(i);
    PTOX_CHECK(a.is_int() || (a.is_value() && a.type().is_scalar() && IsInteger(a.type().dtype())),
               span_)
        << OpName(op_) << " operand " << i << " must be an integer index, got " << Describe(a);
  }
  void Scalar(size_t i, DType want) const {
    PTOX_CHECK(FitsScalar(Arg(i), want), span_)
        << OpName(op_) << " operand " << i << " must be a " << DTypeName(want) << " scalar, got "
        << Describe(Arg(i));
  }
  void Numeric(const Type& t) const {
    PTOX_CHECK(t.dtype() != DType::kBool && t.dtype() != DType::kIndex, span_)
        << OpName(op_) << " does not accept " << t.ToString();
  }
  void FloatOnly(const Type& t) const {
    PTOX_CHECK(IsFloat(t.dtype()), span_)
        << OpName(op_) << " needs a float tile, got " << t.ToString();
  }
  // Second operand of an elementwise binary op: a tile of the same type or a fitting scalar.
  void TileOrScalar(size_t i, const Type& like) const {
    if (Arg(i).is_value() && Arg(i).type().is_tile()) {
      PTOX_CHECK(Arg(i).type() == like, span_)
          << OpName(op_) << " operands must have the same type: " << like.ToString() << " vs "
          << Arg(i).type().ToString();
    } else {
      Scalar(i, like.dtype());
    }
  }
  const Type& Declared(const std::optional<Type>& declared) const {
    PTOX_CHECK(declared.has_value(), span_) << OpName(op_) << " needs a result type (': type')";
    return *declared;
  }
  // The declared result type, which must be a tile of positive extents within the limit.
  const Type& DeclaredTile(const std::optional<Type>& declared) const {
    const Type& t = Declared(declared);
    PTOX_CHECK(t.is_tile(), span_) << OpName(op_) << " result must be a tile, got " << t.ToString();
    PTOX_CHECK(t.rows() > 0 && t.cols() > 0, span_)
        << OpName(op_) << " tile extents must be positive, got " << t.ToString();
    PTOX_CHECK(t.rows() <= kMaxTileExtent && t.cols() <= kMaxTileExtent, span_)
        << OpName(op_) << " tile extents are limited to " << kMaxTileExtent << ", got "
        << t.ToString();
    return t;
  }
  const Span& span() const { return span_; }
  std::string_view name() const { return OpName(op_); }

 private:
  OpCode op_;
  const std::vector<Operand>& args_;
  const Span& span_;
};

// Offsets into a tensor: one per dim; the tile covers the last two dims (or the last one).
void CheckTensorAccess(const Checker& c, const Type& tensor, const Type& tile, size_t first_offset,
                       size_t num_args) {
  PTOX_CHECK(num_args - first_offset == static_cast<size_t>(tensor.rank()), c.span())
      << c.name() << " needs " << tensor.rank() << " offsets for " << tensor.ToString() << ", got "
      << num_args - first_offset;
  for (size_t i = first_offset; i < num_args; ++i) c.Index(i);
  PTOX_CHECK(tile.dtype() == tensor.dtype(), c.span())
      << c.name() << " dtype mismatch: " << tile.ToString() << " vs " << tensor.ToString();
  PTOX_CHECK(tensor.rank() >= 2 || tile.rows() == 1, c.span())
      << c.name() << " on a rank-1 tensor needs a 1xC tile, got " << tile.ToString();
}

// Tile operands may be different float dtypes (f32 queries times an f16 KV cache): both widen
// exactly to f32.
Type CheckMatmul(const Checker& c, const Type& a, const Type& b, bool transpose_b) {
  PTOX_CHECK(IsFloat(a.dtype()) && IsFloat(b.dtype()), c.span())
      << c.name() << " needs float tiles, got " << a.ToString() << " and " << b.ToString();
  int64_t k_b = transpose_b ? b.cols() : b.rows();
  int64_t n = transpose_b ? b.rows() : b.cols();
  PTOX_CHECK(a.cols() == k_b, c.span())
      << c.name() << " inner dimensions differ: " << a.ToString() << " x " << b.ToString()
      << (transpose_b ? " (transposed)" : "");
  return Type::Tile(a.rows(), n, DType::kF32);
}

bool TransposeB(const Attrs& attrs) {
  auto it = attrs.find("transpose_b");
  return it != attrs.end() && std::get<bool>(it->second);
}

// tile.load / tile.store (offsets into a tensor) and tile.full.
std::optional<Type> MemoryType(const Checker& c, OpCode op,
                               [[maybe_unused]] const std::vector<Operand>& args,
                               [[maybe_unused]] const Attrs& attrs,
                               [[maybe_unused]] const std::optional<Type>& declared) {
  const OpFamily family = FamilyOf(op);
  [[maybe_unused]] const Span& span = c.span();
  switch (family) {
    case OpFamily::kLoad: {
      c.MinArity(2);
      const Type& tensor = c.Tensor(0);
      Type tile = c.DeclaredTile(declared);
      CheckTensorAccess(c, tensor, tile, 1, args.size());
      return tile;
    }
    case OpFamily::kStore: {
      c.MinArity(3);
      const Type& tile = c.Tile(0);
      const Type& tensor = c.Tensor(1);
      CheckTensorAccess(c, tensor, tile, 2, args.size());
      return std::nullopt;
    }
    case OpFamily::kFull: {
      c.Arity(1);
      Type tile = c.DeclaredTile(declared);
      c.Scalar(0, tile.dtype());
      return tile;
    }
    default: break;
  }
  PTOX_ICHECK(false) << "no type rule for " << OpName(op);
  return std::nullopt;
}

// Elementwise tile ops: binary, unary, compare, select, cast.
std::optional<Type> ElementwiseType(const Checker& c, OpCode op,
                                    [[maybe_unused]] const std::vector<Operand>& args,
                                    [[maybe_unused]] const Attrs& attrs,
                                    [[maybe_unused]] const std::optional<Type>& declared) {
  const OpFamily family = FamilyOf(op);
  [[maybe_unused]] const Span& span = c.span();
  switch (family) {
    case OpFamily::kBinary: {
      c.Arity(2);
      const Type& a = c.Tile(0);
      c.Numeric(a);
      c.TileOrScalar(1, a);
      return a;
    }
    case OpFamily::kUnary: {
      c.Arity(1);
      const Type& a = c.Tile(0);
      c.Numeric(a);
      if (op != OpCode::kTileNeg && op != OpCode::kTileAbs && op != OpCode::kTileRelu)
        c.FloatOnly(a);
      return a;
    }
    case OpFamily::kCompare: {
      c.Arity(2);
      const Type& a = c.Tile(0);
      c.Numeric(a);
      c.TileOrScalar(1, a);
      return a.WithDType(DType::kBool);
    }
    case OpFamily::kSelect: {
      c.Arity(3);
      const Type& cond = c.Tile(0);
      PTOX_CHECK(cond.dtype() == DType::kBool, span)
          << "tile.select condition must be a bool tile, got " << cond.ToString();
      const Type& a = c.Tile(1);
      PTOX_CHECK(a.rows() == cond.rows() && a.cols() == cond.cols(), span)
          << "tile.select condition shape " << cond.ToString() << " differs from " << a.ToString();
      c.TileOrScalar(2, a);
      return a;
    }
    case OpFamily::kCausalMask: {
      c.Arity(2);
      const Type& a = c.Tile(0);
      c.FloatOnly(a);
      c.Index(1);
      return a;
    }
    case OpFamily::kCast: {
      c.Arity(1);
      const Type& a = c.Tile(0);
      Type to = c.DeclaredTile(declared);
      PTOX_CHECK(to.rows() == a.rows() && to.cols() == a.cols(), span)
          << "tile.cast cannot change the shape: " << a.ToString() << " -> " << to.ToString();
      PTOX_CHECK(to.dtype() != DType::kIndex && a.dtype() != DType::kIndex, span)
          << "tile.cast does not take index tiles";
      return to;
    }
    default: break;
  }
  PTOX_ICHECK(false) << "no type rule for " << OpName(op);
  return std::nullopt;
}

// Row / column reductions, argmax and row / column broadcasts.
std::optional<Type> ReductionType(const Checker& c, OpCode op,
                                  [[maybe_unused]] const std::vector<Operand>& args,
                                  [[maybe_unused]] const Attrs& attrs,
                                  [[maybe_unused]] const std::optional<Type>& declared) {
  const OpFamily family = FamilyOf(op);
  [[maybe_unused]] const Span& span = c.span();
  switch (family) {
    case OpFamily::kRowReduce:
    case OpFamily::kColReduce: {
      c.Arity(1);
      const Type& a = c.Tile(0);
      c.Numeric(a);
      return family == OpFamily::kRowReduce ? Type::Tile(a.rows(), 1, a.dtype())
                                            : Type::Tile(1, a.cols(), a.dtype());
    }
    case OpFamily::kRowArgmax: {
      c.Arity(1);
      const Type& a = c.Tile(0);
      c.Numeric(a);
      return Type::Tile(a.rows(), 1, DType::kI32);
    }
    case OpFamily::kRowExpand:
    case OpFamily::kColExpand: {
      c.Arity(2);
      const Type& a = c.Tile(0);
      const Type& b = c.Tile(1);
      c.Numeric(a);
      bool row = family == OpFamily::kRowExpand;
      Type want = row ? Type::Tile(a.rows(), 1, a.dtype()) : Type::Tile(1, a.cols(), a.dtype());
      PTOX_CHECK(b == want, span) << OpName(op) << " needs a " << want.ToString() << " operand for "
                                  << a.ToString() << ", got " << b.ToString();
      return a;
    }
    default: break;
  }
  PTOX_ICHECK(false) << "no type rule for " << OpName(op);
  return std::nullopt;
}

// Tile layout: transpose, reshape, slice, assemble.
std::optional<Type> LayoutType(const Checker& c, OpCode op,
                               [[maybe_unused]] const std::vector<Operand>& args,
                               [[maybe_unused]] const Attrs& attrs,
                               [[maybe_unused]] const std::optional<Type>& declared) {
  const OpFamily family = FamilyOf(op);
  [[maybe_unused]] const Span& span = c.span();
  switch (family) {
    case OpFamily::kTranspose: {
      c.Arity(1);
      const Type& a = c.Tile(0);
      return Type::Tile(a.cols(), a.rows(), a.dtype());
    }
    case OpFamily::kReshape: {
      c.Arity(1);
      const Type& a = c.Tile(0);
      Type to = c.DeclaredTile(declared);
      PTOX_CHECK(to.dtype() == a.dtype() && to.rows() * to.cols() == a.rows() * a.cols(), span)
          << "tile.reshape must keep the dtype and element count: " << a.ToString() << " -> "
          << to.ToString();
      return to;
    }
    case OpFamily::kSlice: {
      c.Arity(3);
      const Type& a = c.Tile(0);
      c.Index(1);
      c.Index(2);
      Type to = c.DeclaredTile(declared);
      PTOX_CHECK(to.dtype() == a.dtype() && to.rows() <= a.rows() && to.cols() <= a.cols(), span)
          << "tile.slice result " << to.ToString() << " does not fit in " << a.ToString();
      for (int i = 0; i < 2; ++i) {
        const Operand& off = args[1 + i];
        int64_t lim = (i == 0 ? a.rows() - to.rows() : a.cols() - to.cols());
        PTOX_CHECK(!off.is_int() || (off.int_value() >= 0 && off.int_value() <= lim), span)
            << "tile.slice offset " << off.int_value() << " is out of bounds (0.." << lim << ")";
      }
      return to;
    }
    case OpFamily::kAssemble: {
      c.Arity(4);
      const Type& dst = c.Tile(0);
      const Type& src = c.Tile(1);
      c.Index(2);
      c.Index(3);
      PTOX_CHECK(src.dtype() == dst.dtype() && src.rows() <= dst.rows() && src.cols() <= dst.cols(),
                 span)
          << "tile.assemble source " << src.ToString() << " does not fit in " << dst.ToString();
      for (int i = 0; i < 2; ++i) {
        const Operand& off = args[2 + i];
        int64_t lim = (i == 0 ? dst.rows() - src.rows() : dst.cols() - src.cols());
        PTOX_CHECK(!off.is_int() || (off.int_value() >= 0 && off.int_value() <= lim), span)
            << "tile.assemble offset " << off.int_value() << " is out of bounds (0.." << lim << ")";
      }
      return dst;
    }
    case OpFamily::kBroadcast: {
      c.Arity(1);
      const Type& a = c.Tile(0);
      Type to = c.DeclaredTile(declared);
      PTOX_CHECK(to.dtype() == a.dtype() && (a.rows() == 1 || a.rows() == to.rows()) &&
                     (a.cols() == 1 || a.cols() == to.cols()),
                 span)
          << "tile.broadcast repeats a dim of size 1: " << a.ToString() << " -> " << to.ToString();
      return to;
    }
    case OpFamily::kExtract: {
      c.Arity(3);
      const Type& a = c.Tile(0);
      c.Index(1);
      c.Index(2);
      for (int i = 0; i < 2; ++i) {
        const Operand& at = args[1 + i];
        const int64_t extent = i == 0 ? a.rows() : a.cols();
        PTOX_CHECK(!at.is_int() || (at.int_value() >= 0 && at.int_value() < extent), span)
            << "tile.extract " << (i == 0 ? "row " : "column ") << at.int_value()
            << " is out of bounds for " << a.ToString();
      }
      return Type::Scalar(a.dtype());
    }
    default: break;
  }
  PTOX_ICHECK(false) << "no type rule for " << OpName(op);
  return std::nullopt;
}

// tile.matmul and tile.matmul_acc.
std::optional<Type> MatmulFamilyType(const Checker& c, OpCode op,
                                     [[maybe_unused]] const std::vector<Operand>& args,
                                     [[maybe_unused]] const Attrs& attrs,
                                     [[maybe_unused]] const std::optional<Type>& declared) {
  const OpFamily family = FamilyOf(op);
  [[maybe_unused]] const Span& span = c.span();
  switch (family) {
    case OpFamily::kMatmul: {
      c.Arity(2);
      return CheckMatmul(c, c.Tile(0), c.Tile(1), TransposeB(attrs));
    }
    case OpFamily::kMatmulAcc: {
      c.Arity(3);
      const Type& acc = c.Tile(0);
      if (op == OpCode::kTileQMatmulAcc) {
        PTOX_CHECK(attrs.count("format"), span)
            << "tile.qmatmul_acc needs {format = \"q4_0\" | \"q4_1\" | \"q8_0\" | \"w8a8\"}";
        const Type& a = c.Tile(1);
        const Type& w = c.Tile(2);
        const quant::Format f = QuantFormat(attrs);
        PTOX_CHECK(a.dtype() == DType::kF32 && w.dtype() == DType::kI8 &&
                       a.cols() % quant::kBlock == 0 &&
                       w.cols() == quant::RowBytes(f, a.cols() / quant::kBlock),
                   span)
            << "tile.qmatmul_acc needs f32 activations R x K (K a multiple of " << quant::kBlock
            << ") and i8 weight rows C x " << quant::RowBytes(f, a.cols() / quant::kBlock)
            << " bytes (format " << quant::FormatName(f) << "), got " << a.ToString() << " and "
            << w.ToString();
        PTOX_CHECK(f != quant::Format::kW8A8 || a.cols() <= quant::kW8A8MaxK, span)
            << "tile.qmatmul_acc {format = \"w8a8\"}: K = " << a.cols() << " is beyond "
            << quant::kW8A8MaxK << ", the largest K whose int32 sum is exact";
        const Type r = Type::Tile(a.rows(), w.rows(), DType::kF32);
        PTOX_CHECK(acc == r, span) << "tile.qmatmul_acc accumulator must be " << r.ToString()
                                   << ", got " << acc.ToString();
        return acc;
      }
      Type r = CheckMatmul(c, c.Tile(1), c.Tile(2), TransposeB(attrs));
      PTOX_CHECK(acc == r, span) << "tile.matmul_acc accumulator must be " << r.ToString()
                                 << ", got " << acc.ToString();
      return acc;
    }
    default: break;
  }
  PTOX_ICHECK(false) << "no type rule for " << OpName(op);
  return std::nullopt;
}

// Scalar ops: arith.*, arith.assert, tensor.dim.
// The collectives on buffers (ops.def). Sizes that depend on the world size (allgather's and
// reduce_scatter's first dims) are checked here where both are static, else at run time.
std::optional<Type> DistCollective(const Checker& c, OpCode op, const Attrs& attrs,
                                   const Span& span) {
  const bool reduces = op == OpCode::kDistAllreduce || op == OpCode::kDistReduceScatter;
  const bool two = op == OpCode::kDistAllgather || op == OpCode::kDistReduceScatter;
  c.Arity(two ? 2 : 1);
  PTOX_CHECK(!reduces || attrs.count("op"), span)
      << OpName(op) << " needs {op = \"sum\"} or {op = \"max\"}";
  PTOX_CHECK(op != OpCode::kDistBroadcast ||
                 (attrs.count("root") && std::get<int64_t>(attrs.at("root")) >= 0),
             span)
      << "dist.broadcast needs {root = k}, the rank whose values every rank gets (k >= 0)";
  const Type& t = c.Tensor(0);
  PTOX_CHECK(!reduces || IsFloat(t.dtype()), span)
      << OpName(op) << " computes on float tensors, got " << t.ToString();
  if (!two) return std::nullopt;
  const Type& x = c.Tensor(1);
  PTOX_CHECK(x.dtype() == t.dtype() && x.rank() == t.rank() && t.rank() >= 1, span)
      << OpName(op) << " needs two tensors of one dtype and rank >= 1, got " << t.ToString()
      << " and " << x.ToString();
  for (int d = 1; d < t.rank(); ++d)
    PTOX_CHECK(!t.shape()[d].is_static() || !x.shape()[d].is_static() ||
                   t.shape()[d].size == x.shape()[d].size,
               span)
        << OpName(op) << ": " << t.ToString() << " and " << x.ToString() << " differ in dim " << d
        << " (only dim 0 grows with the ranks)";
  // The operand with world_size times the rows of the other.
  const Dim& many = op == OpCode::kDistAllgather ? t.shape()[0] : x.shape()[0];
  const Dim& one = op == OpCode::kDistAllgather ? x.shape()[0] : t.shape()[0];
  PTOX_CHECK(!many.is_static() || !one.is_static() ||
                 (one.size == 0 ? many.size == 0 : many.size % one.size == 0),
             span)
      << OpName(op) << ": " << many.size << " rows are not a whole number of ranks' " << one.size;
  return std::nullopt;
}

std::optional<Type> ScalarFamilyType(const Checker& c, OpCode op,
                                     [[maybe_unused]] const std::vector<Operand>& args,
                                     [[maybe_unused]] const Attrs& attrs,
                                     [[maybe_unused]] const std::optional<Type>& declared) {
  const OpFamily family = FamilyOf(op);
  [[maybe_unused]] const Span& span = c.span();
  switch (family) {
    case OpFamily::kScalarBinary:
    case OpFamily::kScalarCompare: {
      c.Arity(2);
      // The type comes from the first SSA operand; two immediates are index (or f32) scalars.
      const Type t = args[0].is_value()   ? args[0].type()
                     : args[1].is_value() ? args[1].type()
                                          : Type::Scalar(ScalarOperandDType(args));
      PTOX_CHECK(t.is_scalar() && t.dtype() != DType::kBool, span)
          << OpName(op) << " needs numeric scalars, got " << t.ToString();
      c.Scalar(0, t.dtype());
      c.Scalar(1, t.dtype());
      if (op == OpCode::kArithRem) {
        PTOX_CHECK(IsInteger(t.dtype()), span) << "arith.rem needs integer scalars";
      }
      return family == OpFamily::kScalarCompare ? Type::Scalar(DType::kBool) : t;
    }
    case OpFamily::kScalarSelect: {
      c.Arity(3);
      c.Scalar(0, DType::kBool);
      Type t = args[1].is_value() ? args[1].type() : args[2].type();
      PTOX_CHECK(t.is_scalar(), span) << "arith.select needs scalars, got " << t.ToString();
      c.Scalar(1, t.dtype());
      c.Scalar(2, t.dtype());
      return t;
    }
    case OpFamily::kScalarCast: {
      c.Arity(1);
      Type to = c.Declared(declared);
      PTOX_CHECK(to.is_scalar() && args[0].type().is_scalar(), span)
          << "arith.cast converts scalars, got " << args[0].type().ToString() << " -> "
          << to.ToString();
      return to;
    }
    case OpFamily::kAssert: {
      c.MinArity(1);
      c.Scalar(0, DType::kBool);
      for (size_t i = 1; i < args.size(); ++i) c.Index(i);
      const auto msg = attrs.find("msg");
      const std::string text = msg == attrs.end() ? "" : std::get<std::string>(msg->second);
      size_t holes = 0;
      for (size_t at = text.find("{}"); at != std::string::npos; at = text.find("{}", at + 2))
        ++holes;
      PTOX_CHECK(holes == args.size() - 1, span)
          << "arith.assert message has " << holes << " '{}' for " << args.size() - 1 << " values";
      return std::nullopt;
    }
    case OpFamily::kDistInfo: c.Arity(0); return Type::Scalar(DType::kIndex);
    case OpFamily::kDistCollective: return DistCollective(c, op, attrs, span);
    case OpFamily::kDistRma: {
      if (op == OpCode::kDistFence) {
        c.Arity(0);
        return std::nullopt;
      }
      // put: window, x, to, offsets; get: dst, window, from, offsets.
      const bool put = op == OpCode::kDistPut;
      const Type& win = c.Tensor(put ? 0 : 1);
      c.Arity(static_cast<size_t>(3 + win.rank()));
      const Type& x = c.Tensor(put ? 1 : 0);
      PTOX_CHECK(IsFloat(win.dtype()) && x.dtype() == win.dtype() && x.rank() == win.rank(),
                 span)
          << OpName(op) << " moves a float tensor of the window's dtype and rank, got "
          << x.ToString() << " and the window " << win.ToString();
      for (size_t i = 2; i < args.size(); ++i) c.Index(i);
      return std::nullopt;
    }
    case OpFamily::kDim: {
      c.Arity(2);
      const Type& t = c.Tensor(0);
      PTOX_CHECK(args[1].is_int() && args[1].int_value() >= 0 && args[1].int_value() < t.rank(),
                 span)
          << "tensor.dim axis must be an integer in [0, " << t.rank() << ")";
      return Type::Scalar(DType::kIndex);
    }

    default: break;
  }
  PTOX_ICHECK(false) << "no type rule for " << OpName(op);
  return std::nullopt;
}

}  // namespace

DType ScalarOperandDType(const std::vector<Operand>& args) {
  for (const Operand& a : args)
    if (a.is_value()) return a.type().dtype();
  for (const Operand& a : args)
    if (a.is_float()) return DType::kF32;
  return DType::kIndex;
}

// Attributes are checked against the op's row of ops.def (its op_attrs.def set), so an op's
// attributes are declared in one place; an error names the op and lists what it takes.
void CheckOpAttrs(OpCode op, const Attrs& attrs, const Span& span) {
  for (const auto& [name, value] : attrs) {
    const AttrSpec* spec = FindAttr(op, name);
    if (!spec) {
      std::string takes;
      for (const AttrSpec& a : OpAttrs(op))
        takes += (takes.empty() ? "" : ", ") + std::string(a.name) + " (" +
                 std::string(AttrKindName(a.kind)) + ")";
      PTOX_FAIL(span) << OpName(op) << " does not take attribute '" << name << "'; it takes "
                      << (takes.empty() ? "none" : takes);
    }
    PTOX_CHECK(KindOf(value) == spec->kind, span)
        << OpName(op) << " attribute '" << name << "' must be " << KindPhrase(spec->kind)
        << ", got " << KindPhrase(KindOf(value));
    if (!spec->values) continue;
    const std::span<const std::string_view> accepted = spec->values();
    const std::string& text = std::get<std::string>(value);
    if (std::find(accepted.begin(), accepted.end(), text) != accepted.end()) continue;
    std::string list;
    for (std::string_view v : accepted)
      list += (list.empty() ? "\"" : ", \"") + std::string(v) + "\"";
    PTOX_FAIL(span) << OpName(op) << " attribute '" << name << "' must be one of " << list
                    << ", got \"" << text << "\"";
  }
}

std::optional<Type> InferOpType(OpCode op, const std::vector<Operand>& args, const Attrs& attrs,
                                const std::optional<Type>& declared, const Span& span) {
  CheckOpAttrs(op, attrs, span);
  const OpFamily family = FamilyOf(op);
  if (declared && !HasExplicitType(family) && op != OpCode::kTensorConcat) {
    PTOX_FAIL(span) << OpName(op) << " infers its result type; remove ': " << declared->ToString()
                    << "'";
  }
  if (IsTensorLevel(family)) return InferTensorOpType(op, args, attrs, declared, span);
  const Checker c(op, args, span);
  switch (family) {
    case OpFamily::kLoad:
    case OpFamily::kStore:
    case OpFamily::kFull: return MemoryType(c, op, args, attrs, declared);
    case OpFamily::kBinary:
    case OpFamily::kUnary:
    case OpFamily::kCompare:
    case OpFamily::kSelect:
    case OpFamily::kCausalMask:
    case OpFamily::kCast: return ElementwiseType(c, op, args, attrs, declared);
    case OpFamily::kRowReduce:
    case OpFamily::kColReduce:
    case OpFamily::kRowArgmax:
    case OpFamily::kRowExpand:
    case OpFamily::kColExpand: return ReductionType(c, op, args, attrs, declared);
    case OpFamily::kDequantize: {
      c.Arity(1);
      const Type& w = c.Tile(0);
      PTOX_CHECK(attrs.count("format"), c.span())
          << "tile.dequantize needs {format = \"q4_0\" | \"q4_1\" | \"q8_0\" | \"w8a8\"}";
      const quant::Format f = QuantFormat(attrs);
      const int64_t blocks = quant::RowBlocks(f, w.cols());
      PTOX_CHECK(w.dtype() == DType::kI8 && blocks >= 0, c.span())
          << "tile.dequantize needs i8 rows of whole " << quant::BlockBytes(f) << "-byte blocks"
          << (quant::RowTrailer(f) ? " and a 4-byte scale" : "") << ", got " << w.ToString();
      return Type::Tile(w.rows(), blocks * quant::kBlock, DType::kF32);
    }
    case OpFamily::kTranspose:
    case OpFamily::kReshape:
    case OpFamily::kSlice:
    case OpFamily::kAssemble:
    case OpFamily::kBroadcast:
    case OpFamily::kExtract: return LayoutType(c, op, args, attrs, declared);
    case OpFamily::kMatmul:
    case OpFamily::kMatmulAcc: return MatmulFamilyType(c, op, args, attrs, declared);
    default: return ScalarFamilyType(c, op, args, attrs, declared);
  }
}

}  // namespace ptox::ir
