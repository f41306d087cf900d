// The ranks of an MPI launch as the interpreter (interp::Comm) and the compiled targets
// (targets::Collectives, targets/collectives.h) see them, over dist::World (docs/distributed.md).
// Both fold the ranks' values in the interpreter's order (the pairwise tree of a sum,
// support/rank_tree.h) with its element functions, so a target's collective has its bits.
#pragma once

#include <map>
#include <vector>

#include "dist/world.h"
#include "interp/comm.h"
#include "targets/target.h"

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

class MpiCollectives final : public targets::Collectives {
 public:
  explicit MpiCollectives(dist::World& world) : world_(world) {}
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.size(); }
  std::string Run(const targets::CollectiveCall& c) override;
  std::string EndRun(bool ok) override;

 private:
  std::string Rma(const targets::CollectiveCall& c);  // window, put, get, fence
  dist::World& world_;
  std::map<int64_t, int> windows_;  // window parameter id -> dist::World window
  struct Transfer {                 // a put's or get's contiguous copy, until the fence
    std::vector<char> data;
    targets::CollectiveCall call;   // a get's: its destination is written at the fence
  };
  std::vector<Transfer> epoch_;
};

}  // namespace ptox::driver
