// Reference interpreter: the environment, control flow (for / if / incore / yield) and dispatch
// of each op to its evaluator. Loops of every kind run sequentially, which defines their result.
#include "interp/interpreter.h"

#include <algorithm>
#include <set>

#include "interp/comm.h"
#include "interp/eval.h"
#include "interp/numeric.h"
#include "ir/signature.h"
#include "ir/walk.h"

namespace ptox::interp {

Comm& Env::comm() const {
  static SoloComm solo;
  return comm_ ? *comm_ : solo;
}

const RtValue& Env::Get(const ir::Value& v) const {
  auto it = values_.find(v.get());
  PTOX_ICHECK(it != values_.end()) << "interpreter: %" << v->name << " has no value";
  return it->second;
}

const TileRef& Env::GetTileRef(const ir::Operand& o) const {
  PTOX_ICHECK(o.is_value()) << "interpreter: a tile operand is an immediate";
  const RtValue& v = Get(o.value());
  PTOX_ICHECK(std::holds_alternative<TileRef>(v))
      << "interpreter: %" << o.value()->name << " is not a tile";
  return std::get<TileRef>(v);
}

const Tensor& Env::GetTensor(const ir::Operand& o) const {
  PTOX_ICHECK(o.is_value()) << "interpreter: a tensor operand is an immediate";
  const RtValue& v = Get(o.value());
  PTOX_ICHECK(std::holds_alternative<const Tensor*>(v))
      << "interpreter: %" << o.value()->name << " is not a tensor";
  return *std::get<const Tensor*>(v);
}

Scalar Env::GetScalar(const ir::Operand& o, DType dtype, std::string_view op) const {
  Scalar from;
  if (o.is_int()) {
    from = Scalar::Int(DType::kIndex, o.int_value());
  } else if (o.is_float()) {
    from = Scalar::Float(DType::kF32, static_cast<float>(o.float_value()));
  } else {
    const RtValue& v = Get(o.value());
    PTOX_ICHECK(std::holds_alternative<Scalar>(v))
        << "interpreter: %" << o.value()->name << " is not a scalar";
    from = std::get<Scalar>(v);
  }
  if (from.dtype == dtype) return from;
  Scalar out;
  PTOX_RUNTIME_CHECK(Cast(from, dtype, &out))
      << op << ": value " << ToString(from) << " does not fit in " << DTypeName(dtype);
  return out;
}

int64_t Env::GetIndex(const ir::Operand& o) const {
  if (o.is_int()) return o.int_value();
  Scalar s = GetScalar(o, DType::kIndex, "index operand");
  return s.i;
}

const Tensor* Env::Own(DType dtype, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const size_t bytes = static_cast<size_t>(n) * DTypeBytes(dtype);
  std::vector<uint64_t> words(std::max<size_t>(1, (bytes + 7) / 8), 0);  // never a null pointer
  Owned& o = owned_.emplace_back();
  o.words = std::move(words);  // the heap block (and the view's pointer into it) stays put
  o.view = Tensor::Contiguous(o.words.data(), dtype, std::move(shape));
  return &o.view;
}

void Env::BindSymbol(const std::string& sym, int64_t size, std::string_view op) {
  for (const auto& [name, bound] : symbols_) {
    if (name != sym) continue;
    PTOX_RUNTIME_CHECK(bound == size)
        << op << ": size " << size << " for symbol " << sym << ", which is " << bound
        << " here";
    return;
  }
  symbols_.emplace_back(sym, size);
}

std::string OpWhere(const ir::OpStmt& op, std::string_view name) {
  std::string s(name.empty() ? ir::OpName(op.op()) : name);
  if (op.span().known()) s += " (" + op.span().file + ":" + std::to_string(op.span().line) +
                                  FormatCallChain(op.span()) + ")";
  return s;
}

namespace {

class Interpreter {
 public:
  explicit Interpreter(Env& env) : env_(env) {}

  // Runs a block; returns the operands of its closing yield (empty when it has none).
  // Symbols bound in the block end with it.
  std::vector<RtValue> RunBlock(const ir::Block& block) {
    const size_t mark = env_.ScopeMark();
    std::vector<RtValue> yields = RunStmts(block);
    env_.EndScope(mark);
    return yields;
  }

  std::vector<RtValue> RunStmts(const ir::Block& block) {
    for (const ir::StmtRef& s : block) {
      switch (s->kind()) {
        case ir::StmtKind::kOp: RunOp(ir::As<ir::OpStmt>(*s)); break;
        case ir::StmtKind::kFor: RunFor(ir::As<ir::ForStmt>(*s)); break;
        case ir::StmtKind::kIf: RunIf(ir::As<ir::IfStmt>(*s)); break;
        case ir::StmtKind::kWhile: RunWhile(ir::As<ir::WhileStmt>(*s)); break;
        case ir::StmtKind::kIncore: RunBlock(ir::As<ir::IncoreStmt>(*s).body()); break;
        case ir::StmtKind::kYield: return Values(ir::As<ir::YieldStmt>(*s).values());
        case ir::StmtKind::kCall: PTOX_ICHECK(false) << "calls are inlined first (inline-calls)"; break;
      }
    }
    return {};
  }

 private:
  RtValue ValueOf(const ir::Operand& o) {
    if (o.is_value()) return env_.Get(o.value());
    return env_.GetScalar(o, o.type().dtype(), "yield");
  }
  std::vector<RtValue> Values(const std::vector<ir::Operand>& ops) {
    std::vector<RtValue> out;
    for (const ir::Operand& o : ops) out.push_back(ValueOf(o));
    return out;
  }
  // Loop-carried and if results take the declared type of their value: an immediate yielded
  // for an i32 iter arg becomes an i32 scalar.
  void Bind(const std::vector<ir::Value>& vals, const std::vector<RtValue>& xs, const char* what) {
    PTOX_ICHECK(vals.size() == xs.size())
        << what << ": yields " << xs.size() << " values for " << vals.size();
    for (size_t k = 0; k < vals.size(); ++k) {
      RtValue x = xs[k];
      if (auto* s = std::get_if<Scalar>(&x); s && s->dtype != vals[k]->type.dtype()) {
        Scalar out;
        PTOX_RUNTIME_CHECK(Cast(*s, vals[k]->type.dtype(), &out))
            << what << ": value " << ToString(*s) << " does not fit in "
            << DTypeName(vals[k]->type.dtype());
        x = out;
      }
      env_.Set(vals[k], std::move(x));
    }
  }

  void RunOp(const ir::OpStmt& op) {
    std::optional<RtValue> r;
    switch (ir::FamilyOf(op.op())) {
      case ir::OpFamily::kLoad:
      case ir::OpFamily::kStore:
      case ir::OpFamily::kFull: r = EvalMemoryOp(op, env_); break;
      case ir::OpFamily::kBinary:
      case ir::OpFamily::kUnary:
      case ir::OpFamily::kCompare:
      case ir::OpFamily::kSelect:
      case ir::OpFamily::kCausalMask:
      case ir::OpFamily::kCast: r = EvalElementwiseOp(op, env_); break;
      case ir::OpFamily::kRowReduce:
      case ir::OpFamily::kColReduce:
      case ir::OpFamily::kRowArgmax:
      case ir::OpFamily::kRowExpand:
      case ir::OpFamily::kColExpand: r = EvalReduceOp(op, env_); break;
      case ir::OpFamily::kTranspose:
      case ir::OpFamily::kReshape:
      case ir::OpFamily::kSlice:
      case ir::OpFamily::kAssemble:
      case ir::OpFamily::kExtract:
      case ir::OpFamily::kBroadcast:
      case ir::OpFamily::kMatmul:
      case ir::OpFamily::kDequantize:
      case ir::OpFamily::kMatmulAcc: r = EvalLayoutOp(op, env_); break;
      case ir::OpFamily::kScalarBinary:
      case ir::OpFamily::kScalarCompare:
      case ir::OpFamily::kScalarSelect:
      case ir::OpFamily::kScalarCast:
      case ir::OpFamily::kDistInfo:
      case ir::OpFamily::kDim: r = EvalScalarOp(op, env_); break;
      case ir::OpFamily::kAssert: EvalAssert(op, env_); break;
      default: r = EvalTensorOp(op, env_); break;  // tensor level, and dist.allreduce
    }
    if (r) env_.Set(op.result(), std::move(*r));
  }

  void RunFor(const ir::ForStmt& f) {
    const int64_t lb = env_.GetIndex(f.lb());
    const int64_t ub = env_.GetIndex(f.ub());
    const int64_t step = env_.GetIndex(f.step());
    PTOX_RUNTIME_CHECK(step > 0) << "for: step must be positive, got " << step << " (bounds " << lb
                                 << " to " << ub << ")";
    std::vector<RtValue> carried = Values(f.inits());
    for (int64_t iv = lb; iv < ub;) {
      env_.Set(f.iv(), Scalar::Int(f.iv()->type.dtype(), iv));
      Bind(f.iter_args(), carried, "for");
      carried = RunBlock(f.body());
      if (__builtin_add_overflow(iv, step, &iv)) break;  // past ub anyway
    }
    Bind(f.results(), carried, "for");
  }

  // Each trip binds the carried values, runs the condition block (its closing yield is the
  // condition) and, while it holds, the body (its closing yield: the next carried values).
  void RunWhile(const ir::WhileStmt& w) {
    std::vector<RtValue> carried = Values(w.inits());
    for (;;) {
      Bind(w.iter_args(), carried, "while");
      std::vector<RtValue> c = RunBlock(w.cond_body());
      PTOX_ICHECK(c.size() == 1) << "while: the condition block yields " << c.size() << " values";
      const Scalar* cond = std::get_if<Scalar>(&c[0]);
      PTOX_ICHECK(cond != nullptr && cond->dtype == DType::kBool) << "while: condition is not a bool";
      if (cond->i == 0) break;
      carried = RunBlock(w.body());
    }
    Bind(w.results(), carried, "while");
  }

  void RunIf(const ir::IfStmt& s) {
    Scalar c = env_.GetScalar(s.cond(), DType::kBool, "if");
    std::vector<RtValue> ys = RunBlock(c.i != 0 ? s.then_body() : s.else_body());
    Bind(s.results(), ys, "if");
  }

  Env& env_;
};

}  // namespace

void Run(const ir::Func& func, const std::vector<Arg>& args, Comm* comm) {
  Env env(comm);
  RunInEnv(func, args, env);
}

void RunInEnv(const ir::Func& func, const std::vector<Arg>& args, Env& env) {
  std::set<size_t> windows;
  for (const auto& [sym, size] : ir::BindArgs(func, args)) env.BindSymbol(sym, size, "");
  for (size_t k = 0; k < args.size(); ++k) {
    const ir::Value& p = func.params[k].value;
    const DType d = p->type.dtype();
    if (const Tensor* t = std::get_if<Tensor>(&args[k])) {
      env.Set(p, t);
    } else if (const double* x = std::get_if<double>(&args[k])) {
      env.Set(p, Scalar::Float(d, RoundTo(d, static_cast<float>(*x))));
    } else {
      int64_t v = std::get<int64_t>(args[k]);
      PTOX_CHECK(InRange(d, v), Span{})
          << "argument for %" << p->name << " = " << v << " does not fit in " << DTypeName(d);
      env.Set(p, Scalar::Int(d, v));
    }
  }
  // The window parameters, in parameter order (every rank's fence goes through this list).
  ir::ForEachOp(func.body, [&](const ir::OpStmt& op) {
    if (op.op() != ir::OpCode::kDistPut && op.op() != ir::OpCode::kDistGet) return;
    const ir::Value& w = op.args()[op.op() == ir::OpCode::kDistPut ? 0 : 1].value();
    for (size_t k = 0; k < func.params.size(); ++k)
      if (func.params[k].value == w) windows.insert(k);
  });
  for (size_t k : windows) env.windows.push_back(&env.GetTensor(func.params[k].value));
  Interpreter(env).RunBlock(func.body);
  CheckNoPendingRma(env);
}

}  // namespace ptox::interp
