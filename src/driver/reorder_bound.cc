// Reordered-sum lengths of a function (see reorder_bound.h): a walk that follows index values
// it can evaluate from the arguments, so symbols bound inside the program have sizes too.
#include "driver/reorder_bound.h"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "ir/signature.h"
#include "ir/walk.h"
#include "ops/type_rules.h"

namespace ptox::driver {
namespace {

class Walker {
 public:
  Walker(const ir::Func& f, const std::vector<Arg>& args) {
    if (args.empty()) return;
    have_args_ = true;
    symbols_ = ir::BindArgs(f, args);
    for (size_t k = 0; k < args.size() && k < f.params.size(); ++k)
      if (const int64_t* v = std::get_if<int64_t>(&args[k])) known_[f.params[k].value.get()] = *v;
  }

  // The longest tile-level sum, plus every tensor-level one, over a block.
  int64_t Block(const ir::Block& block) {
    Terms t = Walk(block);
    return t.tile + t.tensor;
  }

 private:
  // A block's longest tile-level sum, and the tensor-level sums that may feed each other in it.
  struct Terms {
    int64_t tile = 0, tensor = 0;
  };

  Terms Walk(const ir::Block& block) {
    Terms t;
    for (const ir::StmtRef& s : block) {
      if (s->kind() == ir::StmtKind::kOp) {
        const auto& op = ir::As<ir::OpStmt>(*s);
        Follow(op);
        t.tensor += TensorTerms(op);
        t.tile = std::max(t.tile, TileTerms(op));
        continue;
      }
      // Tensor sums in a nested block feed what follows it; an if takes one arm; a loop that
      // carries a tensor feeds each iteration's sums into the next, so they add up per trip.
      Terms nested;
      ir::ForEachBody(*s, [&](const ir::Block& b) {
        Terms inner = Walk(b);
        nested.tile = std::max(nested.tile, inner.tile);
        nested.tensor = std::max(nested.tensor, inner.tensor);
      });
      if (s->kind() == ir::StmtKind::kFor && nested.tensor > 0)
        nested.tensor = Mul(nested.tensor, Trips(ir::As<ir::ForStmt>(*s)), s->span());
      if (s->kind() == ir::StmtKind::kWhile && nested.tensor > 0) {
        bool carries_tensor = false;
        for (const ir::Value& v : ir::As<ir::WhileStmt>(*s).results())
          carries_tensor |= v->type.is_tensor();
        PTOX_CHECK(!carries_tensor, s->span())
            << "the error bound of this while loop's tensor sums depends on its trip count, "
               "which is only known when the program runs";
      }
      t.tile = std::max(t.tile, nested.tile);
      t.tensor += nested.tensor;
    }
    return t;
  }

  // How often a loop that carries a tensor runs (1 for a loop that carries none: its
  // iterations' sums do not feed each other through the loop).
  int64_t Trips(const ir::ForStmt& f) const {
    bool carries_tensor = false;
    for (const ir::Value& v : f.results()) carries_tensor |= v->type.is_tensor();
    if (!carries_tensor) return 1;
    std::optional<int64_t> lb = Value(f.lb()), ub = Value(f.ub()), step = Value(f.step());
    PTOX_CHECK(lb && ub && step, f.span())
        << "the error bound of this loop's tensor sums depends on its trip count"
        << (!have_args_ ? ": pass the arguments" : ", which is only known when the program runs");
    if (*step <= 0 || *ub <= *lb) return 0;
    return static_cast<int64_t>((static_cast<__int128>(*ub) - *lb + *step - 1) / *step);
  }

  static int64_t Mul(int64_t a, int64_t b, const Span& span) {
    int64_t r = 0;
    PTOX_CHECK(!__builtin_mul_overflow(a, b, &r), span) << "the error bound overflows";
    return r;
  }

  std::optional<int64_t> Value(const ir::Operand& o) const {
    if (o.is_int()) return o.int_value();
    if (!o.is_value()) return std::nullopt;
    auto it = known_.find(o.value().get());
    return it == known_.end() ? std::nullopt : std::optional(it->second);
  }
  std::optional<int64_t> Size(const ir::Dim& d) const {
    if (d.is_static()) return d.size;
    auto it = symbols_.find(d.sym);
    return it == symbols_.end() ? std::nullopt : std::optional(it->second);
  }

  // Index values the walk can evaluate, and the symbols tensor.empty / concat bind.
  void Follow(const ir::OpStmt& op) {
    const auto& a = op.args();
    std::optional<int64_t> v;
    if (op.op() == ir::OpCode::kTensorDim) v = Size(a[0].type().shape()[a[1].int_value()]);
    if (ir::FamilyOf(op.op()) == ir::OpFamily::kScalarBinary) {
      std::optional<int64_t> x = Value(a[0]), y = Value(a[1]);
      int64_t r = 0;
      if (x && y && op.op() == ir::OpCode::kArithAdd && !__builtin_add_overflow(*x, *y, &r)) v = r;
      if (x && y && op.op() == ir::OpCode::kArithSub && !__builtin_sub_overflow(*x, *y, &r)) v = r;
      if (x && y && op.op() == ir::OpCode::kArithMul && !__builtin_mul_overflow(*x, *y, &r)) v = r;
      if (x && y && op.op() == ir::OpCode::kArithMax) v = std::max(*x, *y);
      if (x && y && op.op() == ir::OpCode::kArithMin) v = std::min(*x, *y);
    }
    if (v && !op.results().empty()) known_[op.result().get()] = *v;
    if (op.op() == ir::OpCode::kTensorEmpty) {
      size_t next = 0;
      for (const ir::Dim& d : op.result()->type.shape()) {
        if (d.is_static()) continue;
        if (std::optional<int64_t> n = Value(a[next++])) symbols_.emplace(d.sym, *n);
      }
    }
    if (op.op() == ir::OpCode::kTensorConcat && ir::ConcatNeedsType(a, op.attrs())) {
      const int axis = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1),
                                         op.result()->type.rank(), "", op.span());
      std::optional<int64_t> sum = 0;
      for (const ir::Operand& x : a) {
        std::optional<int64_t> n = Size(x.type().shape()[axis]);
        sum = sum && n ? std::optional(*sum + *n) : std::nullopt;
      }
      const ir::Dim& d = op.result()->type.shape()[axis];
      if (sum && !d.is_static()) symbols_.emplace(d.sym, *sum);
    }
  }

  // Terms of the sums one tensor-level op may reorder (its lowering tiles them any way).
  int64_t TensorTerms(const ir::OpStmt& op) const {
    if (!ir::IsTensorLevel(ir::FamilyOf(op.op())) || op.args().empty() ||
        !op.args()[0].is_value() || !op.args()[0].type().is_tensor())
      return 0;
    const ir::Type& x = op.args()[0].type();
    auto size = [&](const ir::Dim& d) {
      std::optional<int64_t> n = Size(d);
      PTOX_CHECK(n.has_value(), op.span())
          << "the error bound of " << ir::OpName(op.op()) << " depends on symbol " << d.sym
          << (symbols_.empty() ? ": pass the arguments"
                               : ", whose size is only known when the program runs");
      return *n;
    };
    auto axis = [&] {
      return size(x.shape()[ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1), x.rank(), "",
                                              op.span())]);
    };
    switch (op.op()) {
      case ir::OpCode::kTensorSum:
      case ir::OpCode::kTensorSoftmax:
      case ir::OpCode::kTensorLogSoftmax: return axis();
      case ir::OpCode::kTensorRmsnorm: return size(x.shape().back());
      case ir::OpCode::kTensorLayernorm: return 2 * size(x.shape().back());
      case ir::OpCode::kTensorMatmul: return size(x.shape().back());
      default: return 0;
    }
  }

  // Terms of one tile-level sum (a row / column sum's extent, a matmul's K).
  static int64_t TileTerms(const ir::OpStmt& op) {
    const auto& args = op.args();
    switch (op.op()) {
      case ir::OpCode::kTileRowSum: return args[0].type().cols();
      case ir::OpCode::kTileColSum: return args[0].type().rows();
      case ir::OpCode::kTileMatmul: return args[0].type().cols();
      case ir::OpCode::kTileMatmulAcc: return args[1].type().cols();
      default: return 0;
    }
  }

  bool have_args_ = false;
  ir::SymbolBindings symbols_;
  std::unordered_map<const ir::ValueNode*, int64_t> known_;
};

}  // namespace

int64_t ReorderedTerms(const ir::Func& func, const std::vector<Arg>& args) {
  return Walker(func, args).Block(func.body);
}

}  // namespace ptox::driver
