// The interpreter's view of an MPI launch: interp::Comm over dist::World, so that
// `mpirun -np N ptox run --target=interp` runs the specification of every distributed op across
// processes (docs/distributed.md).
#pragma once

#include "dist/world.h"
#include "interp/comm.h"

namespace ptox::driver {

class MpiComm final : public interp::Comm {
 public:
  explicit MpiComm(dist::World& world) : world_(world) {}
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.size(); }
  std::vector<interp::Dense> Gather(const interp::Dense& x, const std::string& where) override;

 private:
  dist::World& world_;
};

}  // namespace ptox::driver
