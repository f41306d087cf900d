// This process's place among the ranks of a distributed run launched by an MPI launcher
// (`mpirun -np N ptox ...`; docs/distributed.md). MPI does the communication; ptox adds the checks
// that turn a mismatched or missing collective into an error instead of a hang or corrupt data.
// Without a launcher the process is rank 0 of 1 and MPI is never initialized.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
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

  // Every rank's `bytes` bytes at `data` into `out`, rank r's at out + r * bytes. `sig` describes
  // the operand (dtype and shape) and must be the same on every rank; `where` names the op.
  // Errors (on every rank): another rank's `sig` differs (both are named), or not every rank
  // arrives within `timeout_ms`.
  void AllGather(const std::string& sig, const std::string& where, const void* data, size_t bytes,
                 void* out, int64_t timeout_ms);

  // Rank root's `bytes` bytes at `data` into every rank's `data`. `sig` (which should name the
  // root) and `where` as for AllGather.
  void Broadcast(const std::string& sig, const std::string& where, void* data, size_t bytes,
                 int root, int64_t timeout_ms);

  // Reduces the `n` elements of `elem_bytes` bytes at `data` in place over every rank, with the
  // bits of a sequential fold in rank order (`fold(out, a, b, count)`: out = a op b elementwise;
  // out may be a or b). Two ranks or small messages: one exchange of every rank's values; else
  // rank c gets the c-th chunk from every rank (an all-to-all), folds it, and every rank gathers
  // the folded chunks. Either way the bytes of a ring allreduce for two ranks, 2 (p - 1) / p of
  // the data per rank for more. `sig` and `where` as for AllGather.
  using Fold = std::function<void(void* out, const void* a, const void* b, int64_t count)>;
  void AllReduce(const std::string& sig, const std::string& where, void* data, int64_t n,
                 int elem_bytes, const Fold& fold, int64_t timeout_ms);

  // Chunk `rank()` of every rank's `size() * n` elements at `data` (n each), folded in rank order
  // into the n elements at `out` (which may not overlap `data`). `fold`, `sig` and `where` as for
  // AllReduce.
  void ReduceScatter(const std::string& sig, const std::string& where, const void* data,
                     int64_t n, int elem_bytes, void* out, const Fold& fold, int64_t timeout_ms);

  // Prints "ptox: rank K: message" on stderr and ends every rank of the run with `code` (MPI_Abort):
  // a rank that fails must not leave the others waiting in a collective.
  [[noreturn]] void Abort(const std::string& message, int code);

  // The default wait of a collective: PTOX_DIST_TIMEOUT_MS, else 60 s.
  static int64_t DefaultTimeoutMs();

  ~World();

 private:
  World();
  void Exchange(const std::string& sig, const std::string& where, const void* data, size_t bytes,
                char* recv, std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // Rank c gets bytes [displs[c], displs[c] + counts[c]) of every rank's `data` (an all-to-all)
  // and folds them in rank order into `out`; counts[c] is a multiple of elem_bytes.
  void ScatterFold(const std::string& where, const char* data, const std::vector<int>& counts,
                   const std::vector<int>& displs, int elem_bytes, char* out, const Fold& fold,
                   std::chrono::steady_clock::time_point deadline, const std::string& late);
  char* Scratch(size_t bytes);  // scratch_, at least `bytes` (under scratch_mu_)
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;  // MPI was initialized here
  std::mutex scratch_mu_;
  std::vector<char> scratch_;  // what the other ranks sent (under scratch_mu_)
};

}  // namespace ptox::dist
