// Reductions over a tile's valid region (row_* / col_* sum, max, min; row_argmax) and the
// row_expand_* / col_expand_* broadcasts. Float reductions are vectorized with Highway (static
// dispatch: generated code is compiled once per ISA):
//  - row_sum uses 4 vector accumulators and a tree at the end, so it reorders the sum; the bound is
//    |err| <= n * eps * sum|x| (docs/ops.md).
//  - row_max / row_min are bit-identical to the interpreter: max / min over a set without NaN does
//    not depend on the order (-0 < +0, equal values have equal bits), and the part of a row that
//    brings the first NaN is reduced again sequentially, so the first NaN of the row (its exact
//    payload) wins as in src/interp.
//  - SumAcc / ExtremeAcc take a row in pieces, for fused loops that compute the elements chunk by
//    chunk (targets/cpu/fusion.cc); the tile reductions are the one-piece case, so both give the
//    same bits.
//  - col_* keep the sequential order per column (vectorized across columns): bit-identical,
//    col_sum included.
// Integer reductions and row_argmax stay scalar.
#pragma once

#include <algorithm>

// Highway 1.0 enables its AVX2 / AVX-512 targets only with -maes -mpclmul, which x86-64-v3 / v4 do
// not imply; without this the static target would fall back to SSSE3. No AES / CLMUL op is used.
#ifndef HWY_DISABLE_PCLMUL_AES
#define HWY_DISABLE_PCLMUL_AES
#endif
#include <hwy/highway.h>

#include "kernels/cpu/functors.h"

namespace ptox::cpu {

namespace hn = hwy::HWY_NAMESPACE;

namespace vred {

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// scalar::Max / scalar::Min lane by lane, exactly: NaN a wins, then NaN b; equal operands pick by
// sign (bitwise AND gives +0 for {-0, +0}, OR gives -0; equal nonzero values have equal bits).
inline V MaxExact(V a, V b) {
  const V m = hn::IfThenElse(hn::Lt(a, b), b, hn::IfThenElse(hn::Lt(b, a), a, hn::And(a, b)));
  return hn::IfThenElse(hn::IsNaN(a), a, hn::IfThenElse(hn::IsNaN(b), b, m));
}
inline V MinExact(V a, V b) {
  const V m = hn::IfThenElse(hn::Lt(a, b), a, hn::IfThenElse(hn::Lt(b, a), b, hn::Or(a, b)));
  return hn::IfThenElse(hn::IsNaN(a), a, hn::IfThenElse(hn::IsNaN(b), b, m));
}

// The vector form of functor Fn (FnAdd, FnMax, FnMin).
template <typename Fn>
inline V Apply(V a, V b) {
  if constexpr (std::is_same_v<Fn, FnAdd>) return hn::Add(a, b);
  else if constexpr (std::is_same_v<Fn, FnMax>) return MaxExact(a, b);
  else return MinExact(a, b);
}

// Sum of a row in f32, given in consecutive pieces (every piece but the last a multiple of
// kPiece elements, as fused loops' chunks are): 4 accumulators (hides the add latency) over
// blocks of 4 vectors, then single vectors into the first, lanes folded by a tree, and the last
// few elements added in order. Sum() is one piece, so a fused loop's sum has the same bits.
class SumAcc {
 public:
  static constexpr int64_t kPiece = 4 * HWY_MAX_BYTES / sizeof(float);
  static_assert(256 % kPiece == 0, "fused loops' chunks (targets/cpu/fusion.cc) are 256 wide");

  void Add(const float* p, int64_t n) {
    const int64_t N = static_cast<int64_t>(hn::Lanes(d_));
    int64_t k = 0;
    for (; k + 4 * N <= n; k += 4 * N) {
      s0_ = hn::Add(s0_, hn::LoadU(d_, p + k));
      s1_ = hn::Add(s1_, hn::LoadU(d_, p + k + N));
      s2_ = hn::Add(s2_, hn::LoadU(d_, p + k + 2 * N));
      s3_ = hn::Add(s3_, hn::LoadU(d_, p + k + 3 * N));
    }
    for (; k + N <= n; k += N) s0_ = hn::Add(s0_, hn::LoadU(d_, p + k));
    for (; k < n; ++k) tail_[tails_++] = p[k];  // fewer than N, and only in the last piece
  }
  float Result() const {
    float acc = hn::GetLane(hn::SumOfLanes(d_, hn::Add(hn::Add(s0_, s1_), hn::Add(s2_, s3_))));
    for (int k = 0; k < tails_; ++k) acc += tail_[k];
    return acc;
  }

 private:
  D d_;
  V s0_ = hn::Zero(d_), s1_ = s0_, s2_ = s0_, s3_ = s0_;
  float tail_[HWY_MAX_BYTES / sizeof(float)];
  int tails_ = 0;
};

inline float Sum(const float* p, int64_t n) {
  SumAcc acc;
  acc.Add(p, n);
  return acc.Result();
}

// acc[c] = Fn(acc[c], row[c]) for c in [0, n): the per-column step of a column reduction.
template <typename Fn>
inline void Accumulate(float* acc, const float* row, int64_t n) {
  const D d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t c = 0;
  for (; c + N <= n; c += N)
    hn::StoreU(Apply<Fn>(hn::LoadU(d, acc + c), hn::LoadU(d, row + c)), d, acc + c);
  for (; c < n; ++c) acc[c] = Fn::F(acc[c], row[c]);
}

// Fn(a, b) (FnMax, FnMin) on lanes where neither is NaN. On AVX-512 that is one vrangeps (max /
// min with -0 < +0, the exact rule); it returns the other operand for a quiet NaN, so callers
// find NaN lanes apart (ExtremeAcc). Elsewhere it is the exact form.
template <typename Fn>
inline V Ordered(V a, V b) {
#if HWY_TARGET <= HWY_AVX3
  return V{_mm512_range_ps(a.raw, b.raw, std::is_same_v<Fn, FnMax> ? 5 : 4)};
#else
  return Apply<Fn>(a, b);
#endif
}

// Max / min of a row given in consecutive pieces (every piece but the last a multiple of
// kPiece elements), bit-identical to the interpreter's sequential fold from the first element:
// max / min over a set without NaN does not depend on the order (-0 < +0, equal values have equal
// bits), so 4 vector accumulators take the elements in any order; when a piece brings the first
// NaN into them, that piece is folded again in order from the result so far, which gives the
// row's first NaN (its exact payload), and later pieces cannot change it.
template <typename Fn>
class ExtremeAcc {
 public:
  void Add(const float* p, int64_t n) {
    if (done_) return;
    const int64_t N = static_cast<int64_t>(hn::Lanes(d_));
    const bool started = started_;
    const V b0 = m0_, b1 = m1_, b2 = m2_, b3 = m3_;
    int64_t k = 0;
#if HWY_TARGET <= HWY_AVX3
    // Whether each lane has been free of NaN so far, kept by a masked compare: one instruction
    // per vector, in one mask per accumulator: one mask was a chain of dependent compares that
    // bounded the loop (f32 softmax of 256 x 4096 in the L3 ran 1.08-1.13x faster with four,
    // paired A/B on 1 thread; at 4096 rows its max pass waits on memory either way).
    __mmask16 ordered[4] = {0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF};
    auto seen = [&](int i, V x) {
      ordered[i] = _mm512_mask_cmp_ps_mask(ordered[i], x.raw, x.raw, _CMP_ORD_Q);
    };
#else
    auto seen = [](int, V) {};  // Apply keeps NaN: the accumulators show it
#endif
    if (!started_ && n >= N) {  // Fn(x, x) == x: every accumulator may start from one vector
      m0_ = m1_ = m2_ = m3_ = hn::LoadU(d_, p);
      seen(0, m0_);
      started_ = true;
      k = N;
    }
    auto step = [&](int i, V& m, const float* q) {
      const V x = hn::LoadU(d_, q);
      m = Ordered<Fn>(m, x);
      seen(i, x);
    };
    for (; k + 4 * N <= n; k += 4 * N) {
      step(0, m0_, p + k);
      step(1, m1_, p + k + N);
      step(2, m2_, p + k + 2 * N);
      step(3, m3_, p + k + 3 * N);
    }
    for (; k + N <= n; k += N) step(0, m0_, p + k);
    for (; k < n; ++k) tail_[tails_++] = p[k];  // fewer than N, and only in the last piece
#if HWY_TARGET <= HWY_AVX3
    const bool nan = (ordered[0] & ordered[1] & ordered[2] & ordered[3]) != 0xFFFF;
#else
    const V all = Apply<Fn>(Apply<Fn>(m0_, m1_), Apply<Fn>(m2_, m3_));  // NaN if any lane is
    const bool nan = !hn::AllFalse(d_, hn::IsNaN(all));
#endif
    if (started_ && nan) {
      int64_t j = 0;
      float acc = started ? Fold(b0, b1, b2, b3) : p[j++];
      for (; j < n; ++j) acc = Fn::F(acc, p[j]);
      result_ = acc;
      done_ = true;
    }
  }
  // The reduction of a nonempty row.
  float Result() const {
    if (done_) return result_;
    int k = 0;
    float acc = started_ ? Fold(m0_, m1_, m2_, m3_) : tail_[k++];
    for (; k < tails_; ++k) acc = Fn::F(acc, tail_[k]);
    return acc;
  }

 private:
  float Fold(V a, V b, V c, V e) const {
    alignas(64) float lanes[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(Apply<Fn>(Apply<Fn>(a, b), Apply<Fn>(c, e)), d_, lanes);
    float acc = lanes[0];
    for (size_t j = 1; j < hn::Lanes(d_); ++j) acc = Fn::F(acc, lanes[j]);
    return acc;
  }

  D d_;
  V m0_ = hn::Zero(d_), m1_ = m0_, m2_ = m0_, m3_ = m0_;
  float tail_[HWY_MAX_BYTES / sizeof(float)];
  int tails_ = 0;
  bool started_ = false, done_ = false;
  float result_ = 0.0f;
};

// Max / min of p[0, n), n >= 1.
template <typename Fn>
inline float Extreme(const float* p, int64_t n) {
  ExtremeAcc<Fn> acc;
  acc.Add(p, n);
  return acc.Result();
}

// The accumulator of a fused row reduction (targets/cpu/fusion.cc) by functor.
template <typename Fn>
using RowAcc = std::conditional_t<std::is_same_v<Fn, FnAdd>, SumAcc, ExtremeAcc<Fn>>;

}  // namespace vred

template <typename Fn>
inline void EmptyLineError(Ctx& ctx, const char* where, int64_t line) {
  ctx.Error("%s: %s of an empty line %lld of the valid region", where, Fn::kName,
            static_cast<long long>(line));
}

// Integer reduction of `len` elements at base[k * stride] into *out (sequential, checked);
// false (with an error) on failure.
template <typename Fn, DT D>
bool ReduceIntLine(Ctx& ctx, const Storage<D>* base, int64_t stride, int64_t len,
                   Storage<D>* out, const char* where, int64_t line) {
  constexpr bool kSum = std::is_same_v<Fn, FnAdd>;
  if (!kSum && len == 0) {
    EmptyLineError<Fn>(ctx, where, line);
    return false;
  }
  int64_t acc = kSum ? 0 : base[0];
  bool ok = true;
  for (int64_t k = kSum ? 0 : 1; k < len && ok; ++k) ok = Fn::I(acc, base[k * stride], &acc);
  if (!ok || acc < IntMin<D>() || acc > IntMax<D>()) {
    ctx.Error("%s: integer overflow in line %lld", where, static_cast<long long>(line));
    return false;
  }
  *out = static_cast<Storage<D>>(acc);
  return true;
}

template <typename Fn, DT D, int R, int C>
void RowReduce(Ctx& ctx, Tile<D, R, 1>& o, const Tile<D, R, C>& a, const char* where) {
  std::fill(o.v, o.v + R, Storage<D>{});
  o.vr = a.vr;
  o.vc = 1;
  if constexpr (IsFloatDT(D)) {
    constexpr bool kSum = std::is_same_v<Fn, FnAdd>;
    if (!kSum && a.vc == 0 && a.vr > 0) return EmptyLineError<Fn>(ctx, where, 0);
    for (int64_t r = 0; r < a.vr; ++r) {
      const float* row = a.v + r * C;
      o.v[r] = RoundTo<D>(kSum ? vred::Sum(row, a.vc) : vred::Extreme<Fn>(row, a.vc));
    }
  } else {
    for (int64_t r = 0; r < a.vr; ++r)
      if (!ReduceIntLine<Fn, D>(ctx, a.v + r * C, 1, a.vc, &o.v[r], where, r)) return;
  }
}

template <typename Fn, DT D, int R, int C>
void ColReduce(Ctx& ctx, Tile<D, 1, C>& o, const Tile<D, R, C>& a, const char* where) {
  std::fill(o.v, o.v + C, Storage<D>{});
  o.vr = 1;
  o.vc = a.vc;
  if constexpr (IsFloatDT(D)) {
    // The interpreter's order per column: from +0 (sum) or row 0 (max / min), rows in order.
    constexpr bool kSum = std::is_same_v<Fn, FnAdd>;
    if (!kSum && a.vr == 0 && a.vc > 0) return EmptyLineError<Fn>(ctx, where, 0);
    if (!kSum && a.vr > 0) std::copy(a.v, a.v + a.vc, o.v);
    for (int64_t r = kSum ? 0 : 1; r < a.vr; ++r) vred::Accumulate<Fn>(o.v, a.v + r * C, a.vc);
    for (int64_t c = 0; c < a.vc; ++c) o.v[c] = RoundTo<D>(o.v[c]);
  } else {
    for (int64_t c = 0; c < a.vc; ++c)
      if (!ReduceIntLine<Fn, D>(ctx, a.v + c, C, a.vr, &o.v[c], where, c)) return;
  }
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
      if (scalar::ArgmaxGt(a.at(r, c), a.at(r, best))) best = c;
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
