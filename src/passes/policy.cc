// GenericPolicy: tiles sized for a nominal cache, dense tile bytes.
#include "passes/policy.h"

#include <algorithm>

#include "passes/pass.h"

namespace ptox::passes {

MatmulTiles TargetPolicy::Matmul(const Capabilities& caps, int64_t m, int64_t, int64_t) const {
  if (m > 0 && m <= 16) return {m, 512, 256};
  int64_t tile = 16;
  const int64_t fit = std::min(caps.l2_bytes, caps.onchip_budget_bytes);
  while (tile < 256 && 13 * (2 * tile) * (2 * tile) * 4 <= fit) tile *= 2;
  return {tile, tile, 4 * tile};
}

int64_t TargetPolicy::TileBytes(const ir::Type& tile) const {
  return tile.rows() * tile.cols() * DTypeBytes(tile.dtype());
}

const TargetPolicy& GenericPolicy() {
  static const TargetPolicy policy;
  return policy;
}

}  // namespace ptox::passes
