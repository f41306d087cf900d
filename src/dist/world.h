// This process's place among the ranks of a distributed run launched by an MPI launcher
// (`mpirun -np N ptox ...`; docs/distributed.md). MPI does the communication; ptox adds the checks
// that turn a mismatched or missing collective into an error instead of a hang or corrupt data.
// Without a launcher the process is rank 0 of 1 and MPI is never initialized.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ptox::dist {

class World {
 public:
  // The process's world: found from the launcher's environment on first use (MPI is initialized
  // then, with MPI_THREAD_SERIALIZED).
  static World& Get();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's `bytes` bytes at `data`, in rank order. `sig` describes the operand (dtype and
  // shape) and must be the same on every rank; `where` names the op. Errors (on every rank):
  // another rank's `sig` differs (both are named), or not every rank arrives within `timeout_ms`.
  std::vector<std::vector<char>> AllGather(const std::string& sig, const std::string& where,
                                           const void* data, size_t bytes, int64_t timeout_ms);

  // Prints "ptox: rank K: message" on stderr and ends every rank of the run with `code` (MPI_Abort):
  // a rank that fails must not leave the others waiting in a collective.
  [[noreturn]] void Abort(const std::string& message, int code);

  // The default wait of a collective: PTOX_DIST_TIMEOUT_MS, else 60 s.
  static int64_t DefaultTimeoutMs();

  ~World();

 private:
  World();
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;  // MPI was initialized here
};

}  // namespace ptox::dist
