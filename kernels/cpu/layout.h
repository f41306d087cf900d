// Layout ops (transpose, reshape, slice, assemble) and matmul / matmul_acc. Matmul accumulates
// each output element in f32 in increasing k from its starting value, product rounded before the
// add (no FMA: the build uses -ffp-contract=off) — the interpreter's order, so results match it
// bit for bit; the i-k-j loop order vectorizes over j without changing any element's order.
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

// o (M x N, holding the starting values) += a * b over k < k_valid; every element computed.
template <bool kTransB, DT D, int M, int K, int BR, int BC>
void MatmulInto(Tile<DT::kF32, M, (kTransB ? BR : BC)>& o, const Tile<D, M, K>& a,
                const Tile<D, BR, BC>& b) {
  constexpr int N = kTransB ? BR : BC;
  const int64_t k_valid = std::min<int64_t>(a.vc, kTransB ? b.vc : b.vr);
  for (int64_t i = 0; i < M; ++i) {
    float* orow = o.v + i * N;
    for (int64_t k = 0; k < k_valid; ++k) {
      const float aik = a.at(i, k);
      if constexpr (kTransB) {
        for (int64_t j = 0; j < N; ++j) orow[j] = orow[j] + aik * b.at(j, k);
      } else {
        const float* brow = b.v + k * BC;
        for (int64_t j = 0; j < N; ++j) orow[j] = orow[j] + aik * brow[j];
      }
    }
  }
}

template <bool kTransB, DT D, int M, int K, int BR, int BC>
void Matmul(Ctx&, Tile<DT::kF32, M, (kTransB ? BR : BC)>& o, const Tile<D, M, K>& a,
            const Tile<D, BR, BC>& b) {
  std::fill(o.v, o.v + M * (kTransB ? BR : BC), 0.0f);
  MatmulInto<kTransB>(o, a, b);
  o.vr = a.vr;
  o.vc = kTransB ? b.vr : b.vc;
}

template <bool kTransB, DT D, int M, int K, int BR, int BC>
void MatmulAcc(Ctx&, Tile<DT::kF32, M, (kTransB ? BR : BC)>& o,
               const Tile<DT::kF32, M, (kTransB ? BR : BC)>& c, const Tile<D, M, K>& a,
               const Tile<D, BR, BC>& b) {
  o = c;
  MatmulInto<kTransB>(o, a, b);
  o.vr = std::min<int64_t>(c.vr, a.vr);
  o.vc = std::min<int64_t>(c.vc, kTransB ? b.vr : b.vc);
}

}  // namespace ptox::cpu
