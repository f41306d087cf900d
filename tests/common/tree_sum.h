// The sum (or another fold) over the ranks of a distributed run as docs/ops.md defines it, written
// for the tests from the definition (not with the library's support/rank_tree.h): a pairwise tree
// whose left subtree holds the largest power of two of ranks below the count.
#pragma once

#include <bit>

namespace ptox::test {

// value(r) of the ranks r in [lo, hi) (lo < hi), combined by op(a, b) in the tree's order.
template <typename Value, typename Op>
auto TreeFold(int lo, int hi, const Value& value, const Op& op) {
  if (hi - lo == 1) return value(lo);
  const int mid = lo + static_cast<int>(std::bit_floor(static_cast<unsigned>(hi - lo - 1)));
  return op(TreeFold(lo, mid, value, op), TreeFold(mid, hi, value, op));
}

// value(r) of the ranks r in [lo, hi) (lo < hi), summed in f32 in the tree's order.
template <typename Value>
float TreeSum(int lo, int hi, const Value& value) {
  return TreeFold(lo, hi, value, [](float a, float b) { return a + b; });
}

}  // namespace ptox::test
