// The order in which a sum over the ranks of a distributed run is taken (docs/ops.md,
// tensor.allreduce): a pairwise tree, S(lo, hi) = S(lo, mid) + S(mid, hi) with mid = lo + the
// largest power of two below hi - lo. For 4 ranks that is ((x0 + x1) + (x2 + x3)), for 3
// ((x0 + x1) + x2), for 6 ((x0 + x1) + (x2 + x3)) + (x4 + x5).
// Why a tree, not rank order: on a power-of-two world it is the order recursive halving
// (Rabenseifner's allreduce, dist::World::AllReduce) adds in, the pattern that moves the least
// data per rank and lets each rank fold with one peer at a time; a rank-order sum forces every
// element through one rank.
#pragma once

#include <utility>

namespace ptox {

// The split of [lo, hi) (hi - lo >= 2) into the tree's two subtrees.
inline int RankTreeMid(int lo, int hi) {
  int s = 1;
  while (2 * s < hi - lo) s *= 2;
  return lo + s;
}

// leaf(r) of every r in [lo, hi) (lo < hi) combined in the tree's order: combine(left, right).
template <typename T, typename Leaf, typename Combine>
T RankTreeFold(int lo, int hi, const Leaf& leaf, const Combine& combine) {
  if (hi - lo == 1) return leaf(lo);
  const int mid = RankTreeMid(lo, hi);
  T left = RankTreeFold<T>(lo, mid, leaf, combine);
  return combine(std::move(left), RankTreeFold<T>(mid, hi, leaf, combine));
}

}  // namespace ptox
