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

#include "kernels/cpu/hwy.h"

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

// The 4 vector accumulators a row reduction carries from one piece of a row to the next. SVE
// vectors are sizeless and cannot be members, so on scalable targets they wait in memory between
// pieces (a load and a store per accumulator per piece of at least 4 vectors).
class Carried {
 public:
  V Get(int i) const {
#if HWY_HAVE_SCALABLE
    return hn::Load(D(), lanes_[i]);
#else
    return v_[i];
#endif
  }
  void Set(V a, V b, V c, V e) {
#if HWY_HAVE_SCALABLE
    const D d;
    hn::Store(a, d, lanes_[0]);
    hn::Store(b, d, lanes_[1]);
    hn::Store(c, d, lanes_[2]);
    hn::Store(e, d, lanes_[3]);
#else
    v_[0] = a, v_[1] = b, v_[2] = c, v_[3] = e;
#endif
  }
  void Fill(V x) { Set(x, x, x, x); }

 private:
#if HWY_HAVE_SCALABLE
  alignas(64) float lanes_[4][HWY_MAX_BYTES / sizeof(float)];
#else
  V v_[4];
#endif
};

// Sum of a row in f32, given in consecutive pieces (every piece but the last a multiple of
// kPiece elements, as fused loops' chunks are): 4 accumulators (hides the add latency) over
// blocks of 4 vectors, then single vectors into the first, lanes folded by a tree, and the last
// few elements added in order. Sum() is one piece, so a fused loop's sum has the same bits.
class SumAcc {
 public:
  static constexpr int64_t kPiece = 4 * HWY_MAX_BYTES / sizeof(float);
  static_assert(256 % kPiece == 0, "fused loops' chunks (targets/cpu/fusion.cc) are 256 wide");

  SumAcc() { s_.Fill(hn::Zero(D())); }
  void Add(const float* p, int64_t n) {
    const D d;
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    V s0 = s_.Get(0), s1 = s_.Get(1), s2 = s_.Get(2), s3 = s_.Get(3);
    int64_t k = 0;
    for (; k + 4 * N <= n; k += 4 * N) {
      s0 = hn::Add(s0, hn::LoadU(d, p + k));
      s1 = hn::Add(s1, hn::LoadU(d, p + k + N));
      s2 = hn::Add(s2, hn::LoadU(d, p + k + 2 * N));
      s3 = hn::Add(s3, hn::LoadU(d, p + k + 3 * N));
    }
    for (; k + N <= n; k += N) s0 = hn::Add(s0, hn::LoadU(d, p + k));
    for (; k < n; ++k) tail_[tails_++] = p[k];  // fewer than N, and only in the last piece
    s_.Set(s0, s1, s2, s3);
  }
  float Result() const {
    const D d;
    const V all = hn::Add(hn::Add(s_.Get(0), s_.Get(1)), hn::Add(s_.Get(2), s_.Get(3)));
    float acc = hn::GetLane(hn::SumOfLanes(d, all));
    for (int k = 0; k < tails_; ++k) acc += tail_[k];
    return acc;
  }

 private:
  Carried s_;
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
  ExtremeAcc() { m_.Fill(hn::Zero(D())); }
  void Add(const float* p, int64_t n) {
    if (done_) return;
    const D d;
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    const bool started = started_;
    V m0 = m_.Get(0), m1 = m_.Get(1), m2 = m_.Get(2), m3 = m_.Get(3);
    const V b0 = m0, b1 = m1, b2 = m2, b3 = m3;
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
      m0 = m1 = m2 = m3 = hn::LoadU(d, p);
      seen(0, m0);
      started_ = true;
      k = N;
    }
    auto step = [&](int i, V& m, const float* q) {
      const V x = hn::LoadU(d, q);
      m = Ordered<Fn>(m, x);
      seen(i, x);
    };
    for (; k + 4 * N <= n; k += 4 * N) {
      step(0, m0, p + k);
      step(1, m1, p + k + N);
      step(2, m2, p + k + 2 * N);
      step(3, m3, p + k + 3 * N);
    }
    for (; k + N <= n; k += N) step(0, m0, p + k);
    for (; k < n; ++k) tail_[tails_++] = p[k];  // fewer than N, and only in the last piece
#if HWY_TARGET <= HWY_AVX3
    const bool nan = (ordered[0] & ordered[1] & ordered[2] & ordered[3]) != 0xFFFF;
#else
    const V all = Apply<Fn>(Apply<Fn>(m0, m1), Apply<Fn>(m2, m3));  // NaN if any lane is
    const bool nan = !hn::AllFalse(d, hn::IsNaN(all));
#endif
    m_.Set(m0, m1, m2, m3);
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
    float acc = started_ ? Fold(m_.Get(0), m_.Get(1), m_.Get(2), m_.Get(3)) : tail_[k++];
    for (; k < tails_; ++k) acc = Fn::F(acc, tail_[k]);
    return acc;
  }

 private:
  // The accumulators' lanes, which hold no NaN: a row's first NaN ends the accumulation (done_),
  // and the fold that follows it starts from the accumulators before its piece.
  float Fold(V a, V b, V c, V e) const {
#if HWY_TARGET <= HWY_AVX3
    // Without NaN the order does not matter: a tree of shuffles, where the scalar chain below took
    // 15 compare-and-branch steps, mispredicted on random data (~4 % of a 4096-column softmax).
    V m = Ordered<Fn>(Ordered<Fn>(a, b), Ordered<Fn>(c, e));
    m = Ordered<Fn>(m, V{_mm512_shuffle_f32x4(m.raw, m.raw, 0x4E)});  // 256-bit halves swapped
    m = Ordered<Fn>(m, V{_mm512_shuffle_f32x4(m.raw, m.raw, 0xB1)});  // 128-bit quarters
    m = Ordered<Fn>(m, V{_mm512_permute_ps(m.raw, 0x4E)});            // lane pairs
    m = Ordered<Fn>(m, V{_mm512_permute_ps(m.raw, 0xB1)});            // lanes
    return hn::GetLane(m);
#else
    const D d;
    alignas(64) float lanes[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(Apply<Fn>(Apply<Fn>(a, b), Apply<Fn>(c, e)), d, lanes);
    float acc = lanes[0];
    for (size_t j = 1; j < hn::Lanes(d); ++j) acc = Fn::F(acc, lanes[j]);
    return acc;
#endif
  }

  Carried m_;  // valid once started_
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
