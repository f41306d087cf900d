// Scalar ops in generated code: arith.* with the interpreter's checked integer semantics (floor
// division, overflow and division by zero are errors) and f32 math from kernels/scalar.h.
#pragma once

#include "kernels/cpu/functors.h"

namespace ptox::cpu {

template <typename Fn, DT D, typename A, typename B>
ScalarC<D> Arith(Ctx& ctx, A a, B b, const char* where) {
  const Storage<D> x = ScalarAs<D>(ctx, a, where), y = ScalarAs<D>(ctx, b, where);
  if (ctx.failed()) return {};
  if constexpr (IsFloatDT(D)) {
    return RoundTo<D>(Fn::F(x, y));
  } else {
    int64_t r = 0;
    if (!Fn::I(x, y, &r) || r < IntMin<D>() || r > IntMax<D>()) {
      ctx.Error("%s: integer overflow or division by zero: %lld %s %lld", where,
                static_cast<long long>(x), Fn::kName, static_cast<long long>(y));
      return {};
    }
    return r;
  }
}

template <typename Fn, DT D, typename A, typename B>
bool ArithCompare(Ctx& ctx, A a, B b, const char* where) {
  return Fn::C(ScalarAs<D>(ctx, a, where), ScalarAs<D>(ctx, b, where));
}

template <DT From, DT To, typename X>
ScalarC<To> ScalarCast(Ctx& ctx, X x, const char* where) {
  const Storage<From> from = ScalarAs<From>(ctx, x, where);
  Storage<To> out{};
  if (!CastValue<From, To>(from, &out)) {
    ctx.Error("%s: value %lld does not fit in the result type", where,
              static_cast<long long>(from));
    return {};
  }
  return out;
}

}  // namespace ptox::cpu
