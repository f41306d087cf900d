// How a compiled target's collectives on buffers (dist.allreduce, dist.allgather,
// dist.reduce_scatter, dist.broadcast; src/ops/ops.def) reach the other ranks of a distributed
// run. The host queues each as a task (targets/host/launch.cc) and runs it through a Collectives:
// the driver's over MPI (driver/mpi_comm.h), or SoloCollectives for a run alone. Each folds in
// rank order with the interpreter's element functions, so results are the interpreter's bits.
#pragma once

#include <string>
#include <vector>

#include "kernels/abi.h"
#include "ptox/dtype.h"

namespace ptox::targets {

// One collective, its tensors resolved (abi::CollectiveDesc).
struct CollectiveCall {
  abi::CollectiveKind kind;
  int op = 0;    // 0: sum, 1: max
  int root = 0;  // broadcast
  DType dtype = DType::kF32;
  abi::TensorArg out{};     // written: the buffer, or allgather's / reduce_scatter's out
  abi::TensorArg source{};  // read: allgather's / reduce_scatter's x
  const char* where = "";
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Runs `c` as this rank; an error message, or empty.
  virtual std::string Run(const CollectiveCall& c) = 0;
};

// A run alone, rank 0 of 1: allgather and reduce_scatter copy x into out, allreduce and
// broadcast leave the buffer as it is.
class SoloCollectives final : public Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string Run(const CollectiveCall& c) override;
};

// What every rank checks before it communicates, in a world of `world` ranks: out's rows against
// world * x's (allgather), x's against world * out's (reduce_scatter), the root (broadcast).
// Empty when the call is fine.
std::string CheckCall(const CollectiveCall& c, int world);

// The call as every rank must make it: "allgather f32 8x4 <- 2x4".
std::string Signature(const CollectiveCall& c);

int64_t Numel(const abi::TensorArg& t);

// A tensor's elements in row-major order as one contiguous run: the tensor's own memory when it
// is contiguous, else a copy (of its values when `read`) that Store() writes back.
class Flat {
 public:
  Flat(const abi::TensorArg& t, int elem_bytes, bool read);
  char* data() { return copy_ ? buf_.data() : static_cast<char*>(t_.data); }
  size_t bytes() const { return bytes_; }
  void Store();

 private:
  abi::TensorArg t_;
  int elem_bytes_;
  size_t bytes_;
  bool copy_;
  std::vector<char> buf_;
};

}  // namespace ptox::targets
