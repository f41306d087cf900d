// Reductions over a tile's valid region (row_* / col_* sum, max, min; row_argmax) and the
// row_expand_* / col_expand_* broadcasts. Sums run in the interpreter's order (sequential from
// +0 in f32, rounded to the dtype once at the end), so they match it bit for bit.
#pragma once

#include <algorithm>

#include "kernels/cpu/functors.h"

namespace ptox::cpu {

// Reduces `len` elements at base[k * stride] into *out; false (with an error) on failure.
template <typename Fn, DT D>
bool ReduceLine(Ctx& ctx, const Storage<D>* base, int64_t stride, int64_t len, Storage<D>* out,
                const char* where, int64_t line) {
  constexpr bool kSum = std::is_same_v<Fn, FnAdd>;
  if (!kSum && len == 0) {
    ctx.Error("%s: %s of an empty line %lld of the valid region", where, Fn::kName,
              static_cast<long long>(line));
    return false;
  }
  if constexpr (IsFloatDT(D)) {
    float acc = kSum ? 0.0f : base[0];
    for (int64_t k = kSum ? 0 : 1; k < len; ++k) acc = Fn::F(acc, base[k * stride]);
    *out = RoundTo<D>(acc);
  } else {
    int64_t acc = kSum ? 0 : base[0];
    bool ok = true;
    for (int64_t k = kSum ? 0 : 1; k < len && ok; ++k) ok = Fn::I(acc, base[k * stride], &acc);
    if (!ok || acc < IntMin<D>() || acc > IntMax<D>()) {
      ctx.Error("%s: integer overflow in line %lld", where, static_cast<long long>(line));
      return false;
    }
    *out = static_cast<Storage<D>>(acc);
  }
  return true;
}

template <typename Fn, DT D, int R, int C>
void RowReduce(Ctx& ctx, Tile<D, R, 1>& o, const Tile<D, R, C>& a, const char* where) {
  std::fill(o.v, o.v + R, Storage<D>{});
  o.vr = a.vr;
  o.vc = 1;
  for (int64_t r = 0; r < a.vr; ++r)
    if (!ReduceLine<Fn, D>(ctx, a.v + r * C, 1, a.vc, &o.v[r], where, r)) return;
}

template <typename Fn, DT D, int R, int C>
void ColReduce(Ctx& ctx, Tile<D, 1, C>& o, const Tile<D, R, C>& a, const char* where) {
  std::fill(o.v, o.v + C, Storage<D>{});
  o.vr = 1;
  o.vc = a.vc;
  for (int64_t c = 0; c < a.vc; ++c)
    if (!ReduceLine<Fn, D>(ctx, a.v + c, C, a.vr, &o.v[c], where, c)) return;
}

// x beats best for argmax: NaN beats everything (first NaN wins), +0 beats -0.
inline bool Beats(float x, float best) {
  if (best != best) return false;
  if (x != x) return true;
  if (x == 0.0f && best == 0.0f) return !__builtin_signbit(x) && __builtin_signbit(best);
  return x > best;
}

template <DT D, int R, int C>
void RowArgmax(Ctx& ctx, Tile<DT::kI32, R, 1>& o, const Tile<D, R, C>& a, const char* where) {
  std::fill(o.v, o.v + R, 0);
  o.vr = a.vr;
  o.vc = 1;
  for (int64_t r = 0; r < a.vr; ++r) {
    if (a.vc == 0) {
      ctx.Error("%s: argmax of an empty row %lld", where, static_cast<long long>(r));
      return;
    }
    int64_t best = 0;
    for (int64_t c = 1; c < a.vc; ++c) {
      bool wins;
      if constexpr (IsFloatDT(D)) wins = Beats(a.at(r, c), a.at(r, best));
      else wins = a.at(r, c) > a.at(r, best);
      if (wins) best = c;
    }
    o.v[r] = static_cast<int32_t>(best);
  }
}

// row (v is R x 1) or column (v is 1 x C) broadcast of Fn.
template <typename Fn, bool kRow, DT D, int R, int C, int VR, int VC>
void Expand(Ctx& ctx, Tile<D, R, C>& o, const Tile<D, R, C>& a, const Tile<D, VR, VC>& v,
            const char* where) {
  o.vr = kRow ? std::min(a.vr, v.vr) : a.vr;
  o.vc = kRow ? a.vc : std::min(a.vc, v.vc);
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t c = 0; c < C; ++c) {
      const Storage<D> y = v.v[kRow ? r : c];
      if constexpr (IsFloatDT(D)) {
        o.at(r, c) = RoundTo<D>(Fn::F(a.at(r, c), y));
      } else {
        int64_t x = 0;
        bool ok = Fn::I(a.at(r, c), y, &x) && x >= IntMin<D>() && x <= IntMax<D>();
        if (!ok && r < o.vr && c < o.vc) {
          ctx.Error("%s: integer overflow or division by zero at element [%lld, %lld]", where,
                    static_cast<long long>(r), static_cast<long long>(c));
          return;
        }
        o.at(r, c) = ok ? static_cast<Storage<D>>(x) : 0;
      }
    }
  }
}

template <typename Fn, DT D, int R, int C>
void RowExpand(Ctx& ctx, Tile<D, R, C>& o, const Tile<D, R, C>& a, const Tile<D, R, 1>& v,
               const char* where) {
  Expand<Fn, true>(ctx, o, a, v, where);
}

template <typename Fn, DT D, int R, int C>
void ColExpand(Ctx& ctx, Tile<D, R, C>& o, const Tile<D, R, C>& a, const Tile<D, 1, C>& v,
               const char* where) {
  Expand<Fn, false>(ctx, o, a, v, where);
}

}  // namespace ptox::cpu
