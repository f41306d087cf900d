// The tiling policy of the CPU targets (passes/policy.h): what the generic passes ask of them.
#pragma once

#include "passes/pass.h"
#include "passes/policy.h"

namespace ptox::targets::cpu {

class CpuPolicy final : public passes::TargetPolicy {
 public:
  passes::MatmulTiles Matmul(const passes::Capabilities& caps, int64_t m, int64_t n,
                             int64_t k) const override;
  int64_t TileBytes(const ir::Type& tile) const override;
  bool MatmulOperandsInPlace() const override { return true; }
  static const CpuPolicy& Get();

 private:
  static passes::MatmulTiles Skinny(int64_t m, int64_t n, int64_t k);
};

}  // namespace ptox::targets::cpu
