// Elementwise tile ops: binary (tile-tile, tile-scalar), unary, compare, select, causal_mask,
// cast. Every op
// computes all R x C elements (padding included, as the interpreter does); integer errors are
// reported only inside the result's valid region, and padding gets 0.
#pragma once

#include <algorithm>

#include "kernels/cpu/functors.h"

namespace ptox::cpu {

// Valid region of a result: the first operand's, clipped by a tile second operand.
template <typename Out, typename A, typename B>
void ClipValid(Out& o, const A& a, const B& b) {
  o.vr = a.vr;
  o.vc = a.vc;
  if constexpr (IsTile<B>::value) {
    o.vr = std::min(o.vr, b.vr);
    o.vc = std::min(o.vc, b.vc);
  }
}

// Element k of a tile or a broadcast scalar.
template <typename B, typename S>
inline S Elem(const B& b, int64_t k, S scalar) {
  if constexpr (IsTile<B>::value) return b.v[k];
  else return scalar;
}

template <typename B, DT D>
inline Storage<D> RhsScalar(Ctx& ctx, const B& b, const char* where) {
  if constexpr (IsTile<B>::value) return Storage<D>{};
  else return ScalarAs<D>(ctx, b, where);
}

template <int C>
inline bool InValid(int64_t k, int64_t vr, int64_t vc) {
  return k / C < vr && k % C < vc;
}

template <typename Fn, DT D, int R, int C, typename B>
void Binary(Ctx& ctx, Tile<D, R, C>& o, const Tile<D, R, C>& a, const B& b, const char* where) {
  const Storage<D> s = RhsScalar<B, D>(ctx, b, where);
  if (ctx.failed()) return;
  ClipValid(o, a, b);
  if constexpr (IsFloatDT(D)) {
    for (int64_t k = 0; k < R * C; ++k) o.v[k] = RoundTo<D>(Fn::F(a.v[k], Elem(b, k, s)));
  } else {
    for (int64_t k = 0; k < R * C; ++k) {
      int64_t x = a.v[k], y = Elem(b, k, s), r = 0;
      bool ok = Fn::I(x, y, &r) && r >= IntMin<D>() && r <= IntMax<D>();
      if (!ok && InValid<C>(k, o.vr, o.vc)) {
        ctx.Error("%s: integer overflow or division by zero at element [%lld, %lld]: %lld %s %lld",
                  where, static_cast<long long>(k / C), static_cast<long long>(k % C),
                  static_cast<long long>(x), Fn::kName, static_cast<long long>(y));
        return;
      }
      o.v[k] = ok ? static_cast<Storage<D>>(r) : 0;
    }
  }
}

template <typename Fn, DT D, int R, int C>
void Unary(Ctx& ctx, Tile<D, R, C>& o, const Tile<D, R, C>& a, const char* where) {
  o.vr = a.vr;
  o.vc = a.vc;
  if constexpr (IsFloatDT(D)) {
    for (int64_t k = 0; k < R * C; ++k) o.v[k] = RoundTo<D>(Fn::F(a.v[k]));
  } else {
    for (int64_t k = 0; k < R * C; ++k) {
      int64_t r = 0;
      bool ok = Fn::I(a.v[k], &r) && r >= IntMin<D>() && r <= IntMax<D>();
      if (!ok && InValid<C>(k, o.vr, o.vc)) {
        ctx.Error("%s: integer overflow at element [%lld, %lld]: %s %lld", where,
                  static_cast<long long>(k / C), static_cast<long long>(k % C), Fn::kName,
                  static_cast<long long>(a.v[k]));
        return;
      }
      o.v[k] = ok ? static_cast<Storage<D>>(r) : 0;
    }
  }
}

template <typename Fn, DT D, int R, int C, typename B>
void Compare(Ctx& ctx, Tile<DT::kBool, R, C>& o, const Tile<D, R, C>& a, const B& b,
             const char* where) {
  const Storage<D> s = RhsScalar<B, D>(ctx, b, where);
  if (ctx.failed()) return;
  ClipValid(o, a, b);
  for (int64_t k = 0; k < R * C; ++k) o.v[k] = Fn::C(a.v[k], Elem(b, k, s)) ? 1 : 0;
}

template <DT D, int R, int C, typename B>
void Select(Ctx& ctx, Tile<D, R, C>& o, const Tile<DT::kBool, R, C>& cond, const Tile<D, R, C>& a,
            const B& b, const char* where) {
  const Storage<D> s = RhsScalar<B, D>(ctx, b, where);
  if (ctx.failed()) return;
  ClipValid(o, a, b);
  o.vr = std::min(o.vr, cond.vr);
  o.vc = std::min(o.vc, cond.vc);
  for (int64_t k = 0; k < R * C; ++k) o.v[k] = cond.v[k] ? a.v[k] : Elem(b, k, s);
}

// -inf where c - r > k (above diagonal k), else a; every element, padding included.
template <DT D, int R, int C>
void CausalMask(Ctx&, Tile<D, R, C>& o, const Tile<D, R, C>& a, int64_t k) {
  static_assert(IsFloatDT(D), "causal_mask takes float tiles");
  o.vr = a.vr;
  o.vc = a.vc;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) o.at(r, c) = c - r > k ? -__builtin_inff() : a.at(r, c);
}

template <DT To, DT From, int R, int C>
void Cast(Ctx& ctx, Tile<To, R, C>& o, const Tile<From, R, C>& a, const char* where) {
  o.vr = a.vr;
  o.vc = a.vc;
  for (int64_t k = 0; k < R * C; ++k) {
    Storage<To> v{};
    if (!CastValue<From, To>(a.v[k], &v)) {
      if (InValid<C>(k, o.vr, o.vc)) {
        ctx.Error("%s: value %lld at element [%lld, %lld] does not fit in the result type", where,
                  static_cast<long long>(a.v[k]), static_cast<long long>(k / C),
                  static_cast<long long>(k % C));
        return;
      }
      v = 0;
    }
    o.v[k] = v;
  }
}

}  // namespace ptox::cpu
