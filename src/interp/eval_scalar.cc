// Scalar ops: arith.* (checked integer arithmetic with floor division, f32 via scalar.h),
// arith.select, arith.cast, arith.assert and tensor.dim.
#include <string>

#include "interp/comm.h"
#include "interp/eval.h"
#include "interp/numeric.h"
#include "ops/type_rules.h"

namespace ptox::interp {
namespace {

RtValue EvalBinary(const ir::OpStmt& op, const Env& env, bool compare) {
  const DType d = ir::ScalarOperandDType(op.args());
  const std::string where = OpWhere(op);
  Scalar a = env.GetScalar(op.args()[0], d, where);
  Scalar b = env.GetScalar(op.args()[1], d, where);
  const Fn fn = FnOf(op.op());
  if (compare) {
    bool r = IsFloat(d) ? FloatCompare(fn, a.f, b.f) : IntCompare(fn, a.i, b.i);
    return Scalar::Int(DType::kBool, r ? 1 : 0);
  }
  if (IsFloat(d)) return Scalar::Float(d, RoundTo(d, FloatBinary(fn, a.f, b.f)));
  int64_t r = 0;
  IntStatus st = IntBinary(fn, d, a.i, b.i, &r);
  PTOX_RUNTIME_CHECK(st == IntStatus::kOk)
      << where << ": " << IntStatusName(st) << " in " << DTypeName(d) << ": " << a.i << " "
      << FnName(fn) << " " << b.i;
  return Scalar::Int(d, r);
}

RtValue EvalSelect(const ir::OpStmt& op, const Env& env) {
  const DType d = op.result()->type.dtype();
  const std::string where = OpWhere(op);
  Scalar c = env.GetScalar(op.args()[0], DType::kBool, where);
  return env.GetScalar(op.args()[c.i != 0 ? 1 : 2], d, where);
}

RtValue EvalCast(const ir::OpStmt& op, const Env& env) {
  const DType to = op.result()->type.dtype();
  const ir::Operand& o = op.args()[0];
  Scalar from = env.GetScalar(o, o.type().dtype(), OpWhere(op));
  Scalar out;
  PTOX_RUNTIME_CHECK(Cast(from, to, &out))
      << OpWhere(op) << ": value " << ToString(from) << " does not fit in " << DTypeName(to);
  return out;
}

RtValue EvalDim(const ir::OpStmt& op, const Env& env) {
  const Tensor& t = env.GetTensor(op.args()[0]);
  return Scalar::Int(DType::kIndex, t.shape[op.args()[1].int_value()]);
}

// The attribute `name`, or `fallback` when the op has none.
std::string TextAttr(const ir::OpStmt& op, const char* name, const char* fallback) {
  auto it = op.attrs().find(name);
  return it == op.attrs().end() ? fallback : std::get<std::string>(it->second);
}

}  // namespace

void EvalAssert(const ir::OpStmt& op, const Env& env) {
  if (env.GetScalar(op.args()[0], DType::kBool, OpWhere(op)).i != 0) return;
  const std::string msg = TextAttr(op, "msg", "assertion failed");
  std::string out = OpWhere(op, TextAttr(op, "op", "arith.assert")) + ": ";
  size_t k = 1, from = 0;
  for (size_t at = msg.find("{}"); at != std::string::npos; at = msg.find("{}", from)) {
    out += msg.substr(from, at - from) + std::to_string(env.GetIndex(op.args()[k++]));
    from = at + 2;
  }
  PTOX_RUNTIME_CHECK(false) << out << msg.substr(from);
}

RtValue EvalScalarOp(const ir::OpStmt& op, const Env& env) {
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kScalarBinary: return EvalBinary(op, env, /*compare=*/false);
    case ir::OpFamily::kScalarCompare: return EvalBinary(op, env, /*compare=*/true);
    case ir::OpFamily::kScalarSelect: return EvalSelect(op, env);
    case ir::OpFamily::kScalarCast: return EvalCast(op, env);
    case ir::OpFamily::kDim: return EvalDim(op, env);
    case ir::OpFamily::kDistInfo:
      return Scalar::Int(DType::kIndex, op.op() == ir::OpCode::kDistRank ? env.comm().rank()
                                                                          : env.comm().size());
    default: PTOX_ICHECK(false) << "not a scalar op: " << OpWhere(op);
  }
  return Scalar{};
}

}  // namespace ptox::interp
