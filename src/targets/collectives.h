// How a compiled target's collectives on buffers (dist.allreduce, dist.allgather,
// dist.reduce_scatter, dist.broadcast; src/ops/ops.def) reach the other ranks of a distributed
// run. The host queues each as a task (targets/host/launch.cc) and runs it through a Collectives:
// the driver's over MPI (driver/mpi_comm.h), or SoloCollectives for a run alone. Each folds in
// the interpreter's order with its element functions, so results are the interpreter's bits.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/abi.h"
#include "ptox/dtype.h"

namespace ptox::targets {

// One collective or one-sided op, its tensors resolved (abi::CollectiveDesc).
struct CollectiveCall {
  abi::CollectiveKind kind;
  int op = 0;    // 0: sum, 1: max
  int root = 0;  // broadcast's root; the rank a put or get reaches
  DType dtype = DType::kF32;
  abi::TensorArg out{};     // written: the buffer, allgather's / reduce_scatter's out, a put's
                            // window, a get's destination
  abi::TensorArg source{};  // read: allgather's / reduce_scatter's x, a put's x, a get's window
  int64_t window = -1;      // a put's or get's window (its tensor id: a parameter)
  int64_t offsets[abi::kMaxRank] = {};  // a put's or get's box in the window
  const char* where = "";

  // A put's or get's window (the tensor the other rank addresses) and box (this rank's tile).
  bool put() const { return kind == abi::CollectiveKind::kPut; }
  const abi::TensorArg& window_tensor() const { return put() ? out : source; }
  const abi::TensorArg& box() const { return put() ? source : out; }
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Runs `c` as this rank; an error message, or empty. Puts and gets take effect at the next
  // fence (their tensors stay untouched until it).
  virtual std::string Run(const CollectiveCall& c) = 0;
  // The end of a run that registered windows, after its last task: puts or gets with no fence
  // after them are an error; windows are released (after a failed run (`ok` false) only this
  // rank's record of them: the other ranks may not be there to release them together).
  virtual std::string EndRun(bool ok) = 0;
};

// A run alone, rank 0 of 1: allgather and reduce_scatter copy x into out, allreduce and
// broadcast leave the buffer as it is; puts and gets reach this rank's own windows at the fence.
class SoloCollectives final : public Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string Run(const CollectiveCall& c) override;
  std::string EndRun(bool ok) override;

 private:
  struct Pending {
    CollectiveCall call;
    std::vector<char> values;  // a put's copy of x
  };
  std::vector<Pending> epoch_;
};

// The rows of a box in a contiguous window: calls f(box element, window element, count) for
// each run of `count` elements of the box's last dim (row-major order in both); false when the
// box does not fit the window.
bool ForBoxRows(const abi::TensorArg& window, const abi::TensorArg& box, const int64_t* offsets,
                const std::function<void(int64_t, int64_t, int64_t)>& f);

// Whether the tensor is row-major without gaps.
bool IsContiguous(const abi::TensorArg& t);

// What every rank checks before it communicates, in a world of `world` ranks: out's rows against
// world * x's (allgather), x's against world * out's (reduce_scatter), the root (broadcast).
// Empty when the call is fine.
std::string CheckCall(const CollectiveCall& c, int world);

// The call as every rank must make it, into *out: "allgather f32 8x4 <- 2x4".
void Signature(const CollectiveCall& c, std::string* out);

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
