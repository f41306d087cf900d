// Layout ops: transpose, reshape, slice, assemble, broadcast (copies) and extract (one element as
// a scalar);
// matmul lives in kernels/cpu/matmul.h.
#pragma once

#include <algorithm>

#include "kernels/cpu/core.h"

namespace ptox::cpu {

template <DT D, int R, int C>
void Transpose(Ctx&, Tile<D, C, R>& o, const Tile<D, R, C>& a) {
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) o.at(c, r) = a.at(r, c);
  o.vr = a.vc;
  o.vc = a.vr;
}

template <DT D, int R, int C, int R2, int C2>
void Reshape(Ctx& ctx, Tile<D, R2, C2>& o, const Tile<D, R, C>& a, const char* where) {
  static_assert(R * C == R2 * C2, "reshape keeps the element count");
  if (a.vr != R || a.vc != C) {
    ctx.Error("%s: cannot reshape a partial tile (valid region %lldx%lld of %dx%d)", where,
              static_cast<long long>(a.vr), static_cast<long long>(a.vc), R, C);
    return;
  }
  std::copy(a.v, a.v + R * C, o.v);
  o.vr = R2;
  o.vc = C2;
}

inline bool CheckSubOffsets(Ctx& ctx, int64_t i, int64_t j, int64_t max_i, int64_t max_j,
                            const char* where) {
  if (i >= 0 && i <= max_i && j >= 0 && j <= max_j) return true;
  ctx.Error("%s: offsets [%lld, %lld] are out of bounds (row offset in [0, %lld], column offset "
            "in [0, %lld])", where, static_cast<long long>(i), static_cast<long long>(j),
            static_cast<long long>(max_i), static_cast<long long>(max_j));
  return false;
}

template <DT D, int R, int C, int SR, int SC>
void Slice(Ctx& ctx, Tile<D, SR, SC>& o, const Tile<D, R, C>& a, int64_t i, int64_t j,
           const char* where) {
  if (!CheckSubOffsets(ctx, i, j, R - SR, C - SC, where)) return;
  for (int64_t r = 0; r < SR; ++r)
    for (int64_t c = 0; c < SC; ++c) o.at(r, c) = a.at(i + r, j + c);
  o.vr = std::clamp<int64_t>(a.vr - i, 0, SR);
  o.vc = std::clamp<int64_t>(a.vc - j, 0, SC);
}

template <DT D, int R, int C, int SR, int SC>
void Assemble(Ctx& ctx, Tile<D, R, C>& o, const Tile<D, R, C>& dst, const Tile<D, SR, SC>& src,
              int64_t i, int64_t j, const char* where) {
  if (!CheckSubOffsets(ctx, i, j, R - SR, C - SC, where)) return;
  o = dst;
  for (int64_t r = 0; r < src.vr; ++r)
    for (int64_t c = 0; c < src.vc; ++c) o.at(i + r, j + c) = src.at(r, c);
}

// An R2 x 1, 1 x C2 or 1 x 1 tile repeated to R2 x C2 (exact copies, any dtype).
template <DT D, int R, int C, int R2, int C2>
void Broadcast(Ctx&, Tile<D, R2, C2>& o, const Tile<D, R, C>& a) {
  static_assert((R == 1 || R == R2) && (C == 1 || C == C2), "broadcast repeats dims of size 1");
  for (int64_t r = 0; r < R2; ++r)
    for (int64_t c = 0; c < C2; ++c) o.at(r, c) = a.at(R == 1 ? 0 : r, C == 1 ? 0 : c);
  o.vr = R == 1 ? R2 : a.vr;
  o.vc = C == 1 ? C2 : a.vc;
}

// One element of the valid region as a scalar (an error outside it, as in the interpreter).
template <DT D, int R, int C>
ScalarC<D> Extract(Ctx& ctx, const Tile<D, R, C>& a, int64_t r, int64_t c, const char* where) {
  if (r < 0 || r >= a.vr || c < 0 || c >= a.vc) {
    ctx.Error("%s: element [%lld, %lld] is outside the valid region %lldx%lld of the %dx%d tile",
              where, static_cast<long long>(r), static_cast<long long>(c),
              static_cast<long long>(a.vr), static_cast<long long>(a.vc), R, C);
    return {};
  }
  return a.at(r, c);
}

}  // namespace ptox::cpu
