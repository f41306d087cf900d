// How the reference interpreter's distributed ops (dist.rank, dist.world_size, tensor.allreduce;
// docs/distributed.md) reach the other ranks of a run. The interpreter defines the collectives
// from one primitive, every rank's value in rank order, so their semantics (the tree of a sum,
// which NaN wins) live in the evaluator, not in a transport.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "interp/eval_tensor.h"

namespace ptox::interp {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `x`, in rank order. Each rank must pass the same dtype and shape (a runtime
  // error naming both ranks otherwise); `where` names the op in messages.
  virtual std::vector<Dense> Gather(const Dense& x, const std::string& where) = 0;
};

// A run without ranks: rank 0 of 1.
class SoloComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<Dense> Gather(const Dense& x, const std::string&) override { return {x}; }
};

// N ranks simulated by threads of one process, each running the interpreter with rank(r). A
// collective waits for every rank to reach it; it fails instead of hanging when a rank failed
// (Fail), finished without reaching it (Finish), brought another dtype or shape, or did not come
// within `timeout`.
class SimWorld {
 public:
  SimWorld(int size, std::chrono::milliseconds timeout);
  ~SimWorld();
  Comm& rank(int r);
  void Fail(int rank, const std::string& message);  // rank's run failed with `message`
  void Finish(int rank);                            // rank's run returned
  // The rank whose failure came first and was its own (not a collective that failed because of
  // another rank, a mismatch or the timeout); -1 when none.
  int first_failure() const;

 private:
  class Rank;
  friend class Rank;
  std::vector<Dense> Gather(int rank, const Dense& x, const std::string& where);

  const int size_;
  const std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t generation_ = 0;  // completed collectives
  int arrived_ = 0;         // ranks waiting in the current one
  struct Slot {
    const Dense* x = nullptr;
    std::string where;
  };
  std::vector<Slot> slots_;     // per rank, for the current collective
  std::vector<Dense> result_;   // the last completed collective's values
  std::string error_;           // set: every waiting and later collective fails with it
  std::vector<bool> finished_;
  int first_failure_ = -1;
};

}  // namespace ptox::interp
