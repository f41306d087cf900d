// fold-constants: evaluates scalar ops whose operands are all immediates, and tensor.dim of a
// static dimension, replacing their uses with immediates; repeated tensor.dim of one dimension
// symbol reuse the first function-level one.
//
// Requires: verified IR. Establishes: no arith.* op has only immediate operands (except those
// whose evaluation would fail at run time — division by zero, overflow — which are kept so the
// program still reports the error when it runs), no tensor.dim of a static dim.
// Algorithm: one pre-order walk with a substitution map (value -> immediate); folded ops are
// dropped, later operands are rewritten through the map. Float folding computes in f32 exactly
// like the interpreter (immediates are rounded to f32 first). O(statements + operands).
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <optional>
#include <unordered_map>

#include "passes/pass.h"

namespace ptox::passes {
namespace {

using Subst = std::unordered_map<const ir::ValueNode*, ir::Operand>;

// Floor division and modulo (the IR's integer semantics); nullopt where the op would fail.
std::optional<int64_t> FoldInt(ir::OpCode op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case ir::OpCode::kArithAdd: if (__builtin_add_overflow(a, b, &r)) return {}; return r;
    case ir::OpCode::kArithSub: if (__builtin_sub_overflow(a, b, &r)) return {}; return r;
    case ir::OpCode::kArithMul: if (__builtin_mul_overflow(a, b, &r)) return {}; return r;
    case ir::OpCode::kArithMax: return std::max(a, b);
    case ir::OpCode::kArithMin: return std::min(a, b);
    case ir::OpCode::kArithDiv:
    case ir::OpCode::kArithRem: {
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return {};
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) --q, m += b;
      return op == ir::OpCode::kArithDiv ? q : m;
    }
    default: return {};
  }
}

// IEEE f32 add / sub / mul / div (max / min have NaN and signed-zero rules: left to run time).
std::optional<double> FoldFloat(ir::OpCode op, double a, double b) {
  float x = static_cast<float>(a), y = static_cast<float>(b);
  switch (op) {
    case ir::OpCode::kArithAdd: return x + y;
    case ir::OpCode::kArithSub: return x - y;
    case ir::OpCode::kArithMul: return x * y;
    case ir::OpCode::kArithDiv: return x / y;
    default: return {};
  }
}

// Integer identities of index arithmetic: x + 0, 0 + x, x - 0, x * 1, 1 * x -> x; x * 0 -> 0
// (exact for integers; floats keep them: NaN and signed zeros).
std::optional<ir::Operand> Identity(ir::OpCode op, const std::vector<ir::Operand>& a) {
  auto is = [](const ir::Operand& o, int64_t v) { return o.is_int() && o.int_value() == v; };
  switch (op) {
    case ir::OpCode::kArithAdd:
      if (is(a[1], 0)) return a[0];
      if (is(a[0], 0)) return a[1];
      return {};
    case ir::OpCode::kArithSub: return is(a[1], 0) ? std::optional(a[0]) : std::nullopt;
    case ir::OpCode::kArithMul:
      if (is(a[1], 1)) return a[0];
      if (is(a[0], 1)) return a[1];
      if (is(a[0], 0) || is(a[1], 0)) return ir::Operand::Int(0);
      return {};
    default: return {};
  }
}

class Folder {
 public:
  ir::Block FoldBlock(const ir::Block& block) {
    ++depth_;
    ir::Block out;
    for (const ir::StmtRef& s : block) {
      ir::StmtRef r = FoldStmt(s);
      if (r) out.push_back(std::move(r));
    }
    --depth_;
    return out;
  }

 private:
  ir::Operand Sub(const ir::Operand& o) const {
    if (!o.is_value()) return o;
    auto it = subst_.find(o.value().get());
    return it == subst_.end() ? o : it->second;
  }
  std::vector<ir::Operand> Sub(const std::vector<ir::Operand>& ops) const {
    std::vector<ir::Operand> out;
    for (const auto& o : ops) out.push_back(Sub(o));
    return out;
  }

  // Returns the folded immediate for an op, if it folds.
  std::optional<ir::Operand> TryFold(const ir::OpStmt& op, const std::vector<ir::Operand>& args) {
    if (op.op() == ir::OpCode::kTensorDim) {
      const ir::Dim d = args[0].type().shape()[args[1].int_value()];  // type() is a copy
      if (d.is_static()) return ir::Operand::Int(d.size);
      // Every dim with one symbol has one size: the first function-level tensor.dim of a
      // symbol dominates everything after it.
      if (auto it = dims_.find(d.sym); it != dims_.end()) return ir::Operand(it->second);
      if (depth_ == 1) dims_[d.sym] = op.result();
      return {};
    }
    if (ir::FamilyOf(op.op()) != ir::OpFamily::kScalarBinary) return {};
    const ir::Type& t = op.result()->type;
    if (args[0].is_int() && args[1].is_int() && t.dtype() == DType::kIndex) {
      if (auto v = FoldInt(op.op(), args[0].int_value(), args[1].int_value()))
        return ir::Operand::Int(*v);
    }
    if (IsInteger(t.dtype())) {
      if (auto v = Identity(op.op(), args)) return v;
    }
    if (!args[0].is_value() && !args[1].is_value() && t.dtype() == DType::kF32) {
      auto as_double = [](const ir::Operand& o) {
        return o.is_int() ? static_cast<double>(o.int_value()) : o.float_value();
      };
      if (auto v = FoldFloat(op.op(), as_double(args[0]), as_double(args[1])))
        return ir::Operand::Float(*v);
    }
    return {};
  }

  ir::StmtRef FoldStmt(const ir::StmtRef& s) {
    switch (s->kind()) {
      case ir::StmtKind::kOp: {
        const auto& op = ir::As<ir::OpStmt>(*s);
        std::vector<ir::Operand> args = Sub(op.args());
        if (auto v = TryFold(op, args)) {
          subst_[op.result().get()] = *v;
          return nullptr;
        }
        return args == op.args() ? s : op.WithArgs(std::move(args));
      }
      case ir::StmtKind::kFor: {
        const auto& f = ir::As<ir::ForStmt>(*s);
        return ir::ForStmt::Make(f.iv(), Sub(f.lb()), Sub(f.ub()), Sub(f.step()), f.loop_kind(),
                                 f.iter_args(), Sub(f.inits()), FoldBlock(f.body()), f.results(),
                                 f.span());
      }
      case ir::StmtKind::kIf: {
        const auto& i = ir::As<ir::IfStmt>(*s);
        return ir::IfStmt::Make(Sub(i.cond()), FoldBlock(i.then_body()), FoldBlock(i.else_body()),
                                i.results(), i.span());
      }
      case ir::StmtKind::kWhile: {  // folds inside; a condition never folds (bools have no
                                     // immediates), so the loop itself stays
        const auto& w = ir::As<ir::WhileStmt>(*s);
        return ir::WhileStmt::Make(w.iter_args(), Sub(w.inits()), FoldBlock(w.cond_body()),
                                   FoldBlock(w.body()), w.results(), w.span());
      }
      case ir::StmtKind::kIncore:
        return ir::As<ir::IncoreStmt>(*s).WithBody(FoldBlock(ir::As<ir::IncoreStmt>(*s).body()));
      case ir::StmtKind::kYield:
        return ir::YieldStmt::Make(Sub(ir::As<ir::YieldStmt>(*s).values()), s->span());
      case ir::StmtKind::kCall: PTOX_ICHECK(false) << "calls are inlined first (inline-calls)"; return s;
    }
    return s;
  }

  Subst subst_;
  std::map<std::string, ir::Value> dims_;  // symbol -> its function-level tensor.dim
  int depth_ = 0;                          // 1 while folding the function's own block
};

}  // namespace

ir::Module FoldConstants(const ir::Module& module, const PassContext&) {
  ir::Module out;
  for (const ir::FuncRef& f : module.funcs) {
    auto nf = std::make_shared<ir::Func>(*f);
    nf->body = Folder().FoldBlock(f->body);
    out.funcs.push_back(std::move(nf));
  }
  return out;
}

}  // namespace ptox::passes
