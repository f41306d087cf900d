// This process's place among the ranks of a distributed run launched by an MPI launcher
// (`mpirun -np N ptox ...`; docs/distributed.md). MPI does the communication; ptox adds the checks
// that turn a mismatched or missing collective into an error instead of a hang or corrupt data.
// Without a launcher the process is rank 0 of 1 and MPI is never initialized.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ptox::dist {

class NodeSegment;

class World {
 public:
  // The process's world: found from the launcher's environment on first use (MPI is initialized
  // then, with MPI_THREAD_SERIALIZED).
  static World& Get();

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_size() const { return local_size_; }  // the ranks on this machine, this one included

  // Every rank's `bytes` bytes at `data` into `out`, rank r's at out + r * bytes. `sig` describes
  // the operand (dtype and shape) and must be the same on every rank; `where` names the op.
  // Errors (on every rank): another rank's `sig` differs (both are named), or not every rank
  // arrives within `timeout_ms`.
  void AllGather(std::string_view sig, std::string_view where, const void* data, size_t bytes,
                 void* out, int64_t timeout_ms);

  // Rank root's `bytes` bytes at `data` into every rank's `data`. `sig` (which should name the
  // root) and `where` as for AllGather.
  void Broadcast(std::string_view sig, std::string_view where, void* data, size_t bytes, int root,
                 int64_t timeout_ms);

  // Reduces the `n` elements of `elem_bytes` bytes at `data` in place over every rank, with the
  // bits of the pairwise tree over the ranks (support/rank_tree.h): `fold(out, values, count, n)`
  // sets out[i] to the tree of values[0][i], ..., values[count - 1][i], rounded after each op;
  // out may be one of the values. When every rank runs on this machine: through memory every
  // rank maps (NodeSegment; world.cc), each rank folding every value below kNodeSplitBytes and
  // one chunk from it, unless PTOX_DIST_SHM=0 (which must then be set on every rank).
  // Otherwise, up to 64 KB to every peer: one exchange of every rank's values; from 256 KB on
  // 4, 8, ... ranks: recursive halving and doubling, folding two values at a time; other sizes:
  // rank c gets the c-th chunk from every rank, folds it, and sends it to every rank. Both move
  // 2 (p - 1) / p of the data per rank, as a ring allreduce does. `sig` and `where` as for
  // AllGather.
  using Fold = std::function<void(void* out, const void* const* values, int count, int64_t n)>;
  static constexpr size_t kNodeSplitBytes = size_t{16} << 10;
  void AllReduce(std::string_view sig, std::string_view where, void* data, int64_t n,
                 int elem_bytes, const Fold& fold, int64_t timeout_ms);

  // Chunk `rank()` of every rank's `size() * n` elements at `data` (n each), folded (the tree)
  // into the n elements at `out` (which may not overlap `data`): when every rank runs on this
  // machine, through the node segment (unless PTOX_DIST_SHM=0), else by messages. `fold`, `sig`
  // and `where` as for AllReduce.
  void ReduceScatter(std::string_view sig, std::string_view where, const void* data, int64_t n,
                     int elem_bytes, void* out, const Fold& fold, int64_t timeout_ms);

  // After a collective (or window call) failed on this rank, every later one fails at once with
  // an error that names the first failure: MPI may still hold the failed one's messages (a
  // peer's pieces this rank never received, sends from this rank's buffers), and a later
  // collective would take them for its own. `ptox run` ends the run on a failure; a caller that
  // catches the error gets this one instead of data mixed across collectives.

  // One-sided windows over MPI-3 RMA (docs/distributed.md). CreateWindow is collective: every
  // rank registers its own `bytes` at `base` (elements of `elem_bytes`) in the same order, with
  // the same `sig` (checked), and the window's first epoch opens; it returns the window's
  // handle. Put / Get queue a transfer of `bytes` between `data` and rank `peer`'s window at
  // element `disp`; `data` must stay valid and untouched until the next Fence. Fence ends the
  // epoch on every window (after a checked barrier: every rank must reach it within
  // `timeout_ms`), so every transfer has landed; FreeWindows (collective) releases them.
  int CreateWindow(std::string_view sig, std::string_view where, void* base, size_t bytes,
                   int elem_bytes, int64_t timeout_ms);
  void Put(int window, int peer, const void* data, size_t bytes, int64_t disp,
           std::string_view where);
  void Get(int window, int peer, void* data, size_t bytes, int64_t disp, std::string_view where);
  void Fence(std::string_view where, int64_t timeout_ms);
  void FreeWindows();

  // Prints "ptox: rank K: message" on stderr and ends every rank of the run with `code`
  // (MPI_Abort): a rank that fails must not leave the others waiting in a collective.
  [[noreturn]] void Abort(const std::string& message, int code);

  // The default wait of a collective: PTOX_DIST_TIMEOUT_MS (as the process found it at its first
  // collective), else 60 s.
  static int64_t DefaultTimeoutMs();

  ~World();

 private:
  World();
  // What this rank sends one peer in an Exchange, and where what that peer sends it goes.
  struct Peer {
    const char* send = nullptr;
    size_t send_bytes = 0;
    char* recv = nullptr;
    size_t recv_bytes = 0;
  };
  // One round in which every rank sends every other rank r peers[r].send_bytes bytes and
  // receives what r sends it into peers[r].recv (peers[rank()] is not used), with the operands'
  // descriptions (`sig`, `where`) checked: a mismatch, or a peer that does not come by
  // `deadline`, is an error. `meanwhile`, when set, runs once the sends are posted. Payloads of
  // at most `split_bytes` travel in eager pieces, the first behind the description; larger
  // ones in one message after it (world.cc, Pieces).
  static constexpr size_t kSplitBytes = size_t{32} << 10;
  void Exchange(std::string_view sig, std::string_view where, const std::vector<Peer>& peers,
                std::chrono::steady_clock::time_point deadline, int64_t timeout_ms,
                const std::function<void()>& meanwhile = {}, size_t split_bytes = kSplitBytes);
  // A later round of a collective whose descriptions already matched: the same traffic as an
  // Exchange, with every receive posted before the sends and no description (one message less
  // per peer, and no payload waiting for its receive). A peer late past `deadline` is an error.
  void Transfer(std::string_view where, const std::vector<Peer>& peers,
                std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // Rank c gets bytes [displs[c], displs[c] + counts[c]) of every rank's `data` and folds them
  // (values in rank order) into `out` (counts[c] a multiple of elem_bytes). Under scratch_mu_.
  void ScatterFold(std::string_view sig, std::string_view where, const char* data,
                   const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                   int elem_bytes, char* out, const Fold& fold,
                   std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // Maps the node segment unless it is mapped, once the descriptions matched (an Exchange).
  // Under scratch_mu_.
  void MapNode(std::string_view sig, std::string_view where,
               std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // A barrier over every rank through the mapped node segment's headers (no MPI message), which
  // checks the descriptions (`sig`) as an Exchange does: what every rank stored into the segment
  // before it, every rank sees after it. A rank late past `deadline` is an error. Under
  // scratch_mu_.
  void NodeBarrier(std::string_view sig, std::string_view where,
                   std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // Every rank reached this collective, with the same `sig`: a NodeBarrier once the node segment
  // is mapped (then another rank may wait there), else an Exchange of the descriptions. Under
  // scratch_mu_.
  void Arrive(std::string_view sig, std::string_view where,
              std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // AllGather through the node segment (world.cc); x does not overlap out. Under scratch_mu_.
  void NodeAllGather(std::string_view sig, std::string_view where, const char* x, size_t bytes,
                     char* out, std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // ReduceScatter through the node segment (world.cc). Under scratch_mu_.
  void NodeReduceScatter(std::string_view sig, std::string_view where, const char* data, int64_t n,
                         int elem_bytes, char* out, const Fold& fold,
                         std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // AllReduce through the node segment (world.cc). Under scratch_mu_.
  void NodeAllReduce(std::string_view sig, std::string_view where, char* data, int64_t n,
                     int elem_bytes, const Fold& fold,
                     std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  // Runs the collective `body` unless an earlier one failed (then throws); when `body` throws,
  // records the failure and abandons its pending requests (Abandon) before rethrowing.
  template <typename Body>
  void Guarded(std::string_view where, Body&& body);
  // Cancels and frees this thread's pending requests and keeps the buffers they may still read
  // or write (this thread's send headers, the scratch) alive until MPI is finalized.
  void Abandon(const char* what);
  char* Scratch(size_t bytes);  // scratch_, at least `bytes` (under scratch_mu_)
  struct Pad;                   // the vectors a collective call fills, kept per thread (world.cc)
  static Pad& ThisThreadsPad();
  const std::vector<Peer>& NoPayloads();  // this thread's pad's peers, every one empty
  int rank_ = 0, size_ = 1, local_size_ = 1;
  bool mpi_ = false;  // MPI was initialized here
  bool node_shm_ = false;              // every rank is on this machine, and PTOX_DIST_SHM is not 0
  std::unique_ptr<NodeSegment> node_;  // mapped by MapNode (under scratch_mu_)
  int node_parity_ = 0;                // the slot the last piece through node_ used
  uint64_t node_barriers_ = 0;         // this rank's NodeBarriers so far
  std::mutex scratch_mu_;
  std::vector<char> scratch_;  // what the other ranks sent (under scratch_mu_)
  std::atomic<bool> failed_{false};  // a collective failed here (see Guarded)
  std::mutex failure_mu_;
  std::string failure_;                       // its error (under failure_mu_)
  std::vector<std::vector<char>> abandoned_;  // a failed collective's buffers (under failure_mu_)
};

}  // namespace ptox::dist
