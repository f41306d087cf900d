// Target policy: the choices the generic passes leave to the target they lower for — how big a
// matmul's tiles are, how many bytes a tile takes on chip, whether matmuls read their loaded
// operands in place. A target hands its policy to the passes in Capabilities::policy; the
// passes never name a target. The defaults (GenericPolicy) are what the interpreter lowers for.
#pragma once

#include <cstdint>

#include "ir/type.h"

namespace ptox::passes {

struct Capabilities;

// A matmul's output tile (rows x cols) and K slice.
struct MatmulTiles {
  int64_t rows, cols, k;
};

class TargetPolicy {
 public:
  virtual ~TargetPolicy() = default;
  // The tiles of an m x k x n matmul (a size <= 0 is symbolic). Callers clamp them to static
  // sizes (convert::MatmulTiling). Default: A, B, a packed B (T x 4T each) and C (T x T) f32
  // tiles fit in L2, T a power of two in [16, 256], K slices of 4T; skinny M takes 512-wide
  // stripes over 256-deep slices.
  virtual MatmulTiles Matmul(const Capabilities& caps, int64_t m, int64_t n, int64_t k) const;
  // The bytes one tile takes on chip (plan-memory's arena). Default: its elements, densely.
  virtual int64_t TileBytes(const ir::Type& tile) const;
  // Whether matmuls read the tile.load operands of analysis::InPlaceMatmulOperands from the
  // tensor (those loads then take no on-chip bytes). Default: no.
  virtual bool MatmulOperandsInPlace() const { return false; }
};

const TargetPolicy& GenericPolicy();

}  // namespace ptox::passes
