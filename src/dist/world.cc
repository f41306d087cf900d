#include "dist/world.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "support/error.h"

#ifdef PTOX_WITH_MPI
#include <mpi.h>
#endif

namespace ptox::dist {
namespace {

// The world size the launcher announces (OpenMPI, MPICH / PMI, PMIx), or 0 without a launcher.
int LauncherSize() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return std::getenv("PMIX_RANK") ? 1 : 0;
}

}  // namespace

World& World::Get() {
  static World world;
  return world;
}

int64_t World::DefaultTimeoutMs() {
  const char* s = std::getenv("PTOX_DIST_TIMEOUT_MS");
  char* end = nullptr;
  const long long v = s ? std::strtoll(s, &end, 10) : 0;
  return s && *s && *end == '\0' && v > 0 ? v : 60000;
}

World::World() {
  if (LauncherSize() == 0) return;
#ifdef PTOX_WITH_MPI
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "ptox: MPI_Init_thread failed\n");
    std::exit(1);
  }
  mpi_ = true;
  if (provided < MPI_THREAD_SERIALIZED) {  // collectives run on the runtime's worker threads
    std::fprintf(stderr, "ptox: this MPI gives threads level %d; ptox needs MPI_THREAD_SERIALIZED\n",
                 provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Errors come back as codes (checked below), not as MPI's own abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
#else
  if (LauncherSize() > 1) {
    std::fprintf(stderr,
                 "ptox: started by an MPI launcher with %d ranks, but this ptox was built without "
                 "MPI (install libopenmpi-dev and rebuild; docs/distributed.md)\n",
                 LauncherSize());
    std::exit(2);
  }
#endif
}

World::~World() {
#ifdef PTOX_WITH_MPI
  if (mpi_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
#endif
}

void World::Abort(const std::string& message, int code) {
  std::fprintf(stderr, "ptox: rank %d: %s\n", rank_, message.c_str());
  std::fflush(stderr);
#ifdef PTOX_WITH_MPI
  if (mpi_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

#ifdef PTOX_WITH_MPI
namespace {

std::mutex& MpiMutex() {  // MPI_THREAD_SERIALIZED: one thread in MPI at a time
  static std::mutex mu;
  return mu;
}

// Between two tests of a wait that began at `start`: nothing for 20 us (short collectives), then
// yielding the core for 50 ms (more ranks than cores: the rank it waits for may need it; sleeping
// instead made 4 ranks on 2 cores 10x slower than MPI's own waits), then sleeping 1 ms.
void Pause(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point now) {
  if (now - start < std::chrono::microseconds(20)) return;
  if (now - start < std::chrono::milliseconds(50)) return std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Starts one non-blocking collective (`start` calls MPI under the lock) and waits for it,
// pausing between tests as Pause says. Past `deadline` it fails with `late` (the request stays
// pending: the run ends).
template <typename Start>
void Complete(Start&& start, const std::string& where,
              std::chrono::steady_clock::time_point deadline, const std::string& late) {
  MPI_Request req;
  {
    std::lock_guard<std::mutex> lock(MpiMutex());
    PTOX_RUNTIME_CHECK(start(&req) == MPI_SUCCESS) << where << ": MPI failed to start a collective";
  }
  const auto begin = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(MpiMutex());
      PTOX_RUNTIME_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS)
          << where << ": MPI_Test failed";
    }
    if (done) return;
    const auto now = std::chrono::steady_clock::now();
    PTOX_RUNTIME_CHECK(now <= deadline) << late;
    Pause(begin, now);
  }
}

int Count(size_t bytes, const std::string& where) {
  PTOX_RUNTIME_CHECK(bytes <= static_cast<size_t>(INT32_MAX))
      << where << ": " << bytes << " bytes per rank; MPI counts stop at 2 GiB";
  return static_cast<int>(bytes);
}

constexpr int kDesc = 256;  // bytes of an operand's description: "sig\0where"
constexpr int kTag = 1;
// Payload pieces: the first travels behind the description, in one message of at most 3840
// bytes; up to kSplitBytes the rest goes in pieces of kPiece bytes, above it in one message.
// Why: OpenMPI's shared-memory transport sends messages up to 4 KB (header included) eagerly and
// larger ones by rendezvous, which cost 2.5 us more here at 4 KB (a 4096-byte exchange took
// 3.1 us, a 3840-byte one 1.1 us).
constexpr size_t kPiece = 3584;
constexpr size_t kSplitBytes = size_t{32} << 10;

// The [begin, end) byte ranges of a payload's pieces, in the order they are sent.
std::vector<std::pair<size_t, size_t>> Pieces(size_t bytes) {
  std::vector<std::pair<size_t, size_t>> out = {{0, std::min(bytes, kPiece)}};
  while (out.back().second < bytes) {
    const size_t at = out.back().second;
    out.push_back({at, bytes <= kSplitBytes ? std::min(bytes, at + kPiece) : bytes});
  }
  return out;
}

}  // namespace

// Every other rank's payload (`bytes`) into slot r * bytes of `recv` (this rank's slot
// untouched), and its description. Each rank sends every peer its description with the
// payload's first piece in one message, then the other pieces (from `data`, no copy), all at
// once: one round, which short collectives need. The first message is received once a probe has
// seen its size, and the other pieces only after its description matched, so a payload of
// another size never lands in a slot: a mismatch is an error on every rank, and the descriptions
// name both sides.
void World::Exchange(const std::string& sig, const std::string& where, const void* data,
                     size_t bytes, char* recv, std::chrono::steady_clock::time_point deadline,
                     int64_t timeout_ms) {
  const std::vector<std::pair<size_t, size_t>> pieces = Pieces(bytes);
  const size_t first = pieces[0].second;
  std::vector<char> head(kDesc + first);  // the description, then the first piece
  const std::string desc = sig + '\0' + where;
  std::memcpy(head.data(), desc.data(), std::min<size_t>(desc.size(), kDesc - 1));
  if (first) std::memcpy(head.data() + kDesc, data, first);
  const int head_count = Count(head.size(), where);
  std::vector<MPI_Request> reqs;
  std::vector<int> pending;  // peers whose first message has not come
  {
    std::lock_guard<std::mutex> lock(MpiMutex());
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      reqs.emplace_back();
      PTOX_RUNTIME_CHECK(MPI_Isend(head.data(), head_count, MPI_BYTE, r, kTag, MPI_COMM_WORLD,
                                   &reqs.back()) == MPI_SUCCESS)
          << where << ": MPI_Isend failed";
      for (size_t k = 1; k < pieces.size(); ++k) {
        reqs.emplace_back();
        PTOX_RUNTIME_CHECK(MPI_Isend(static_cast<const char*>(data) + pieces[k].first,
                                     Count(pieces[k].second - pieces[k].first, where), MPI_BYTE,
                                     r, kTag, MPI_COMM_WORLD, &reqs.back()) == MPI_SUCCESS)
            << where << ": MPI_Isend failed";
      }
      pending.push_back(r);
    }
  }
  std::vector<char> got_head;
  std::string mismatch;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(MpiMutex());
      for (size_t k = 0; k < pending.size() && mismatch.empty();) {
        const int r = pending[k];
        int found = 0;
        MPI_Message msg;
        MPI_Status st;
        PTOX_RUNTIME_CHECK(MPI_Improbe(r, kTag, MPI_COMM_WORLD, &found, &msg, &st) == MPI_SUCCESS)
            << where << ": MPI_Improbe failed";
        if (!found) {
          ++k;
          continue;
        }
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        got_head.assign(std::max(count, kDesc), '\0');
        PTOX_RUNTIME_CHECK(MPI_Mrecv(got_head.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) ==
                           MPI_SUCCESS)
            << where << ": MPI_Mrecv failed";
        const char* d = got_head.data();
        const std::string other_sig(d, strnlen(d, kDesc));
        const char* w = d + std::min<size_t>(other_sig.size() + 1, kDesc - 1);
        const std::string other_where(w, strnlen(w, kDesc - (w - d)));
        if (other_sig != sig || count != head_count) {
          mismatch = "collective mismatch: rank " + std::to_string(rank_) + " passed " + sig +
                     " to " + where + ", rank " + std::to_string(r) + " " + other_sig + " to " +
                     other_where;
          break;
        }
        char* slot = recv + static_cast<size_t>(r) * bytes;
        if (first) std::memcpy(slot, got_head.data() + kDesc, first);
        for (size_t p = 1; p < pieces.size(); ++p) {
          reqs.emplace_back();
          PTOX_RUNTIME_CHECK(MPI_Irecv(slot + pieces[p].first,
                                       Count(pieces[p].second - pieces[p].first, where), MPI_BYTE,
                                       r, kTag, MPI_COMM_WORLD, &reqs.back()) == MPI_SUCCESS)
              << where << ": MPI_Irecv failed";
        }
        pending[k] = pending.back();
        pending.pop_back();
      }
      if (pending.empty() && mismatch.empty()) {
        PTOX_RUNTIME_CHECK(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done,
                                       MPI_STATUSES_IGNORE) == MPI_SUCCESS)
            << where << ": MPI_Testall failed";
      }
    }
    PTOX_RUNTIME_CHECK(mismatch.empty()) << mismatch;
    if (done) break;
    const auto now = std::chrono::steady_clock::now();
    PTOX_RUNTIME_CHECK(now <= deadline)
        << where << " on rank " << rank_ << ": not every rank reached a collective within "
        << timeout_ms << " ms";
    Pause(start, now);
  }
}
#endif

#ifdef PTOX_WITH_MPI
namespace {

std::chrono::steady_clock::time_point Deadline(int64_t timeout_ms) {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
}

std::string Late(const std::string& where, int rank, int64_t timeout_ms) {
  return where + " on rank " + std::to_string(rank) + ": the collective did not finish within " +
         std::to_string(timeout_ms) + " ms";
}

}  // namespace

// Received values land in a buffer kept across calls: a fresh one per call cost its page faults
// (a 64 MB allreduce ran at 0.58x raw MPI's speed).
char* World::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

void World::ScatterFold(const std::string& where, const char* data, const std::vector<int>& counts,
                        const std::vector<int>& displs, int elem_bytes, char* out,
                        const Fold& fold, std::chrono::steady_clock::time_point deadline,
                        const std::string& late) {
  // This rank's own chunk is folded where it lies (a copy through MPI cost 20 us of 107 at 1 MB
  // on 2 ranks), unless `out` overlaps it and other ranks' chunks come first.
  const int mine = counts[rank_];
  const char* const own = data + displs[rank_];
  std::vector<int> send_counts = counts, recv_counts(size_, mine), recv_displs(size_);
  send_counts[rank_] = recv_counts[rank_] = 0;
  for (int r = 0; r < size_; ++r) recv_displs[r] = r * mine;
  char* const chunks = Scratch(static_cast<size_t>(mine) * size_);
  Complete(
      [&](MPI_Request* req) {
        return MPI_Ialltoallv(data, send_counts.data(), displs.data(), MPI_BYTE, chunks,
                              recv_counts.data(), recv_displs.data(), MPI_BYTE, MPI_COMM_WORLD,
                              req);
      },
      where, deadline, late);
  const bool copy_own = rank_ >= 2 && out < own + mine && own < out + mine;
  if (copy_own && mine) std::memcpy(chunks + static_cast<size_t>(rank_) * mine, own, mine);
  auto values = [&](int r) {
    return r == rank_ && !copy_own ? own : chunks + static_cast<size_t>(r) * mine;
  };
  const int64_t k = mine / elem_bytes;
  fold(out, values(0), values(1), k);
  for (int r = 2; r < size_; ++r) fold(out, out, values(r), k);
}
#endif

void World::AllGather(const std::string& sig, const std::string& where, const void* data,
                      size_t bytes, void* out, int64_t timeout_ms) {
  char* const o = static_cast<char*>(out);
  if (bytes) std::memmove(o + rank_ * bytes, data, bytes);
  if (size_ == 1) return;
#ifdef PTOX_WITH_MPI
  Exchange(sig, where, o + rank_ * bytes, bytes, o, Deadline(timeout_ms), timeout_ms);
#else
  (void)sig, (void)where, (void)timeout_ms;
  PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
#endif
}

void World::Broadcast(const std::string& sig, const std::string& where, void* data, size_t bytes,
                      int root, int64_t timeout_ms) {
  if (size_ == 1) return;
#ifdef PTOX_WITH_MPI
  const auto deadline = Deadline(timeout_ms);
  Exchange(sig, where, nullptr, 0, nullptr, deadline, timeout_ms);  // the descriptions only
  const int count = Count(bytes, where);
  Complete(
      [&](MPI_Request* req) {
        return MPI_Ibcast(data, count, MPI_BYTE, root, MPI_COMM_WORLD, req);
      },
      where, deadline, Late(where, rank_, timeout_ms));
#else
  (void)sig, (void)where, (void)data, (void)bytes, (void)root, (void)timeout_ms;
  PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
#endif
}

void World::ReduceScatter(const std::string& sig, const std::string& where, const void* data,
                          int64_t n, int elem_bytes, void* out, const Fold& fold,
                          int64_t timeout_ms) {
  const size_t chunk = static_cast<size_t>(n) * elem_bytes;
  if (size_ == 1) {
    if (chunk) std::memcpy(out, data, chunk);
    return;
  }
#ifdef PTOX_WITH_MPI
  const auto deadline = Deadline(timeout_ms);
  std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
  Exchange(sig, where, nullptr, 0, nullptr, deadline, timeout_ms);  // the descriptions only
  std::vector<int> counts(size_, Count(chunk, where)), displs(size_);
  for (int c = 0; c < size_; ++c) displs[c] = Count(chunk * c, where);
  ScatterFold(where, static_cast<const char*>(data), counts, displs, elem_bytes,
              static_cast<char*>(out), fold, deadline, Late(where, rank_, timeout_ms));
#else
  (void)sig, (void)where, (void)fold, (void)timeout_ms;
  PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
#endif
}

void World::AllReduce(const std::string& sig, const std::string& where, void* data, int64_t n,
                      int elem_bytes, const Fold& fold, int64_t timeout_ms) {
  if (size_ == 1) return;
#ifdef PTOX_WITH_MPI
  const auto deadline = Deadline(timeout_ms);
  const size_t bytes = static_cast<size_t>(n) * elem_bytes;
  char* const base = static_cast<char*>(data);
  std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
  // Two ranks, or small messages: every rank gets every rank's values in one round and folds all
  // of them (for two ranks these are a ring allreduce's bytes).
  if (bytes <= (size_t{64} << 10)) {
    char* const all = Scratch(bytes * size_);
    Exchange(sig, where, base, bytes, all, deadline, timeout_ms);
    // Its own values in place, unless they are read after `base` starts holding the fold.
    const bool copy_own = rank_ >= 2;
    if (copy_own) std::memcpy(all + rank_ * bytes, base, bytes);
    auto values = [&](int r) { return r == rank_ && !copy_own ? base : all + r * bytes; };
    fold(base, values(0), values(1), n);
    for (int r = 2; r < size_; ++r) fold(base, base, values(r), n);
    return;
  }
  // Larger messages on more ranks: rank c owns elements [lo(c), lo(c + 1)); every rank sends it
  // that chunk (all-to-all), it folds them in rank order, and every rank gathers the folded
  // chunks: 2 (p - 1) / p of the data per rank, as a ring allreduce moves.
  Exchange(sig, where, nullptr, 0, nullptr, deadline, timeout_ms);  // the descriptions only
  auto lo = [&](int c) { return n * c / size_; };
  std::vector<int> counts(size_), displs(size_);
  for (int c = 0; c < size_; ++c) {
    counts[c] = Count(static_cast<size_t>(lo(c + 1) - lo(c)) * elem_bytes, where);
    displs[c] = Count(static_cast<size_t>(lo(c)) * elem_bytes, where);
  }
  const std::string late = Late(where, rank_, timeout_ms);
  ScatterFold(where, base, counts, displs, elem_bytes, base + displs[rank_], fold, deadline, late);
  Complete(
      [&](MPI_Request* req) {
        return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, base, counts.data(), displs.data(),
                               MPI_BYTE, MPI_COMM_WORLD, req);
      },
      where, deadline, late);
#else
  (void)sig, (void)where, (void)data, (void)n, (void)elem_bytes, (void)fold, (void)timeout_ms;
  PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
#endif
}

}  // namespace ptox::dist
