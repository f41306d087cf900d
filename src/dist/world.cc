#include "dist/world.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "support/error.h"
#include "support/stream_copy.h"

#ifdef PTOX_WITH_MPI
#include "dist/mpi_wait.h"
#include "dist/node_segment.h"
#else
namespace ptox::dist {
class NodeSegment {};  // never made without MPI; ~World needs the type complete
}  // namespace ptox::dist
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

// Read once: every collective asks, and getenv scans the whole environment.
int64_t World::DefaultTimeoutMs() {
  static const int64_t timeout_ms = [] {
    const char* s = std::getenv("PTOX_DIST_TIMEOUT_MS");
    char* end = nullptr;
    const long long v = s ? std::strtoll(s, &end, 10) : 0;
    return s && *s && *end == '\0' && v > 0 ? v : 60000;
  }();
  return timeout_ms;
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
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) ==
      MPI_SUCCESS) {
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
  }
  // Not the affinity mask: a launcher may bind each rank to one core.
  SetOversubscribed(local_size_ > static_cast<int>(std::thread::hardware_concurrency()));
  const char* shm = std::getenv("PTOX_DIST_SHM");
  node_shm_ = local_size_ == size_ && !(shm && std::strcmp(shm, "0") == 0);
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

template <typename Body>
void World::Guarded(std::string_view where, Body&& body) {
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(failure_mu_);
    PTOX_RUNTIME_CHECK(false) << where << " on rank " << rank_
                              << ": an earlier collective failed on this rank, and its messages "
                                 "may still be in flight, so this run cannot communicate any "
                                 "more (that failure: "
                              << failure_ << ")";
  }
  try {
    body();
  } catch (const std::exception& e) {
    Abandon(e.what());
    throw;
  }
}

#ifdef PTOX_WITH_MPI
namespace {

int Count(size_t bytes, std::string_view where) {
  PTOX_RUNTIME_CHECK(bytes <= static_cast<size_t>(INT32_MAX))
      << where << ": " << bytes << " bytes per rank; MPI counts stop at 2 GiB";
  return static_cast<int>(bytes);
}

constexpr size_t kDesc = NodeSegment::kDescBytes;  // an operand's description: Describe
constexpr int kTag = 1;
constexpr int kDataTag = 2;  // a later round's payloads (World::Transfer)
// Payload pieces: up to the exchange's split size, the first travels behind the description,
// in one message of at most 3840 bytes, and the rest in pieces of kPiece bytes; above it the
// description goes alone and the payload in one message, from the caller's (aligned) memory.
// Why: OpenMPI's shared-memory transport sends messages up to 4 KB (header included) eagerly and
// larger ones by rendezvous, which cost 2.5 us more here at 4 KB (a 4096-byte exchange took
// 3.1 us, a 3840-byte one 1.1 us). Exchanges split up to 32 KiB, allgathers up to 4 KiB: on a
// Xeon VM, 2 ranks, an 8-32 KiB allgather took 4.9-7.2 us in one message after the description
// and 5.6-16.8 us in pieces (raw MPI_Allgather: 2.7-5.3 us), while the allreduce's exchange of
// 8-16 KiB took 5.8-10.0 us in pieces and 7.2-13.0 us in one message.
constexpr size_t kPiece = 3584;
constexpr size_t kAllGatherSplitBytes = size_t{4} << 10;
constexpr size_t kNativeAllGatherBytes = size_t{8} << 20;  // see World::AllGather
// On 2 ranks, allgathers go through the node segment up to the first and from the second; ditto.
constexpr size_t kNodeAllGatherSmall2 = size_t{16} << 10, kNodeAllGatherLarge2 = size_t{16} << 20;

// The [begin, end) byte ranges of a payload's pieces, in the order they are sent (computed, not
// stored: an exchange runs per collective, and each allocation of its own was a cache miss more
// at sizes that sweep the caches).
class Pieces {
 public:
  Pieces(size_t bytes, size_t split_bytes) : bytes_(bytes), whole_(bytes > split_bytes) {}
  size_t size() const { return whole_ ? 2 : std::max<size_t>(1, (bytes_ + kPiece - 1) / kPiece); }
  std::pair<size_t, size_t> operator[](size_t k) const {
    if (whole_) return {0, k == 0 ? 0 : bytes_};
    return {k * kPiece, std::min(bytes_, (k + 1) * kPiece)};
  }

 private:
  size_t bytes_;
  bool whole_;  // the description goes alone, the payload in one message after it
};

// An operand's description, as every rank sends or shows it: kDesc bytes at `out`, "sig\0where"
// zero-padded (cut to fit).
void Describe(std::string_view sig, std::string_view where, char* out) {
  std::memset(out, 0, kDesc);
  const size_t sig_bytes = std::min<size_t>(sig.size(), kDesc - 1);
  std::memcpy(out, sig.data(), sig_bytes);
  if (sig_bytes + 1 < kDesc)
    std::memcpy(out + sig_bytes + 1, where.data(),
                std::min<size_t>(where.size(), kDesc - 2 - sig_bytes));
}

std::string_view SigOf(const char* desc) { return {desc, strnlen(desc, kDesc)}; }

// Whether `desc` (another rank's, Describe) describes the operand `sig` as well.
bool SameSig(const char* desc, std::string_view sig) {
  return SigOf(desc) == sig.substr(0, kDesc - 1);
}

// The error when rank `other`'s description `desc` differs from this rank's.
std::string Mismatch(int rank, std::string_view sig, std::string_view where, int other,
                     const char* desc) {
  const std::string_view other_sig = SigOf(desc);
  const char* w = desc + std::min<size_t>(other_sig.size() + 1, kDesc - 1);
  const std::string_view other_where(w, strnlen(w, kDesc - (w - desc)));
  return "collective mismatch: rank " + std::to_string(rank) + " passed " + std::string(sig) +
         " to " + std::string(where) + ", rank " + std::to_string(other) + " " +
         std::string(other_sig) + " to " + std::string(other_where);
}

}  // namespace

// Per thread: collectives on one thread never nest, and each call's own vectors cost an
// allocation each, a cache miss or more at sizes that sweep the caches.
struct World::Pad {
  // `peers` and `values` sized for a world of n ranks (their entries are the caller's to set).
  std::vector<Peer>& Peers(int n) {
    peers.resize(n);
    return peers;
  }
  std::vector<const void*>& Values(int n) {
    values.resize(n);
    return values;
  }
  std::vector<Peer> peers;
  std::vector<const void*> values;
  std::vector<size_t> counts, displs;
  std::vector<MPI_Request> reqs;  // Exchange's and Transfer's
  std::vector<int> pending;
  std::vector<char> heads, got;
};

World::Pad& World::ThisThreadsPad() {
  thread_local Pad pad;
  return pad;
}

// A round that carries descriptions only.
const std::vector<World::Peer>& World::NoPayloads() {
  std::vector<Peer>& peers = ThisThreadsPad().peers;
  peers.assign(size_, Peer{});
  return peers;
}

// Each rank sends every peer its description with the first piece of what it sends that peer in
// one message, then the other pieces (from the caller's memory, no copy), all at once: one round,
// which short collectives need. A peer's first message is received once a probe has seen its
// size, and the other pieces only after its description matched, so values of another size never
// land in a buffer: a mismatch is an error on every rank, and the descriptions name both sides.
void World::Exchange(std::string_view sig, std::string_view where, const std::vector<Peer>& peers,
                     std::chrono::steady_clock::time_point deadline, int64_t timeout_ms,
                     const std::function<void()>& meanwhile, size_t split_bytes) {
  size_t messages = 0, first = 0;  // requests to wait for; the largest first piece sent
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const Pieces send(peers[r].send_bytes, split_bytes);
    messages += send.size() + Pieces(peers[r].recv_bytes, split_bytes).size() - 1;
    first = std::max(first, send[0].second);
  }
  // To each peer: the description ("sig\0where", zero-padded), then the first piece.
  const size_t head_bytes = kDesc + first;
  Pad& pad = ThisThreadsPad();
  pad.heads.resize(std::max(pad.heads.size(), static_cast<size_t>(size_) * head_bytes));
  char* const heads = pad.heads.data();
  std::vector<MPI_Request>& reqs = pad.reqs;
  reqs.clear();
  reqs.reserve(messages);
  std::vector<int>& pending = pad.pending;  // peers whose first message has not come
  pending.clear();
  pending.reserve(size_);
  {
    std::lock_guard<std::mutex> lock(MpiMutex());
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const Peer& p = peers[r];
      const Pieces pieces(p.send_bytes, split_bytes);
      char* const head = heads + static_cast<size_t>(r) * head_bytes;
      Describe(sig, where, head);
      if (pieces[0].second) std::memcpy(head + kDesc, p.send, pieces[0].second);
      reqs.emplace_back();
      PTOX_RUNTIME_CHECK(MPI_Isend(head, Count(kDesc + pieces[0].second, where), MPI_BYTE, r,
                                   kTag, MPI_COMM_WORLD, &reqs.back()) == MPI_SUCCESS)
          << where << ": MPI_Isend failed";
      for (size_t k = 1; k < pieces.size(); ++k) {
        reqs.emplace_back();
        PTOX_RUNTIME_CHECK(MPI_Isend(p.send + pieces[k].first,
                                     Count(pieces[k].second - pieces[k].first, where), MPI_BYTE,
                                     r, kTag, MPI_COMM_WORLD, &reqs.back()) == MPI_SUCCESS)
            << where << ": MPI_Isend failed";
      }
      pending.push_back(r);
    }
  }
  if (meanwhile) meanwhile();
  std::vector<char>& got = pad.got;
  std::string mismatch;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t tests = 1;; ++tests) {
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
        // Zero past what came, so that a short message reads as a short description.
        const size_t came = static_cast<size_t>(count);
        got.resize(std::max({got.size(), came, kDesc}));
        if (came < kDesc) std::memset(got.data() + came, 0, kDesc - came);
        PTOX_RUNTIME_CHECK(MPI_Mrecv(got.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) ==
                           MPI_SUCCESS)
            << where << ": MPI_Mrecv failed";
        const Peer& p = peers[r];
        const Pieces pieces(p.recv_bytes, split_bytes);
        if (!SameSig(got.data(), sig) || came != kDesc + pieces[0].second) {
          mismatch = Mismatch(rank_, sig, where, r, got.data());
          break;
        }
        if (pieces[0].second) std::memcpy(p.recv, got.data() + kDesc, pieces[0].second);
        for (size_t q = 1; q < pieces.size(); ++q) {
          reqs.emplace_back();
          PTOX_RUNTIME_CHECK(MPI_Irecv(p.recv + pieces[q].first,
                                       Count(pieces[q].second - pieces[q].first, where), MPI_BYTE,
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
    Pause(start, now, tests);
  }
}

void World::Transfer(std::string_view where, const std::vector<Peer>& peers,
                     std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  std::vector<MPI_Request>& reqs = ThisThreadsPad().reqs;
  reqs.clear();
  {
    std::lock_guard<std::mutex> lock(MpiMutex());
    for (int send = 0; send < 2; ++send)
      for (int r = 0; r < size_; ++r) {
        const Peer& p = peers[r];
        const size_t bytes = send ? p.send_bytes : p.recv_bytes;
        if (r == rank_ || bytes == 0) continue;
        reqs.emplace_back();
        const int count = Count(bytes, where);
        PTOX_RUNTIME_CHECK((send ? MPI_Isend(p.send, count, MPI_BYTE, r, kDataTag, MPI_COMM_WORLD,
                                             &reqs.back())
                                 : MPI_Irecv(p.recv, count, MPI_BYTE, r, kDataTag, MPI_COMM_WORLD,
                                             &reqs.back())) == MPI_SUCCESS)
            << where << ": MPI failed to start a transfer";
      }
  }
  WaitAll(reqs.data(), static_cast<int>(reqs.size()), where, "collective", rank_, deadline,
          timeout_ms);
}

namespace {

std::chrono::steady_clock::time_point Deadline(int64_t timeout_ms) {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
}

}  // namespace

// Received values land in a buffer kept across calls: a fresh one per call cost its page faults
// (a 64 MB allreduce ran at 0.58x raw MPI's speed).
char* World::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

void World::ScatterFold(std::string_view sig, std::string_view where, const char* data,
                        const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                        int elem_bytes, char* out, const Fold& fold,
                        std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  const size_t mine = counts[rank_];
  char* const chunks = Scratch(mine * size_);
  Pad& pad = ThisThreadsPad();
  std::vector<Peer>& peers = pad.Peers(size_);
  for (int r = 0; r < size_; ++r) peers[r] = {data + displs[r], counts[r], chunks + r * mine, mine};
  Exchange(sig, where, peers, deadline, timeout_ms);
  // This rank's own chunk is folded where it lies (a copy cost 20 us of 107 at 1 MB on 2 ranks).
  std::vector<const void*>& values = pad.Values(size_);
  for (int r = 0; r < size_; ++r) values[r] = r == rank_ ? data + displs[r] : chunks + r * mine;
  fold(out, values.data(), size_, static_cast<int64_t>(mine) / elem_bytes);
}
#endif

#ifdef PTOX_WITH_MPI
void World::MapNode(std::string_view sig, std::string_view where,
                    std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  if (node_) return;
  Exchange(sig, where, NoPayloads(), deadline, timeout_ms);
  node_ = std::make_unique<NodeSegment>(size_, where);
}

// Barrier k (this rank's k-th): this rank writes its description into its header's description
// k % 2, stores k as its arrival count (release), and waits until every other rank's count is k or
// more; then every description k % 2 must match its own. A rank passes barrier k only once every
// rank arrived at it, so no rank writes description k % 2 again (at barrier k + 2) before every
// rank has arrived at k + 1, past reading the descriptions of k. No MPI message: at 4 KiB on 2
// ranks, a barrier of description messages cost 2-3 us in slow phases of the VM.
void World::NodeBarrier(std::string_view sig, std::string_view where,
                        std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  const uint64_t k = ++node_barriers_;
  const int parity = static_cast<int>(k & 1);
  Describe(sig, where, node_->desc(rank_, parity));
  node_->Sync();
  node_->arrived(rank_).store(k, std::memory_order_release);
  const auto start = std::chrono::steady_clock::now();
  int64_t tests = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    while (node_->arrived(r).load(std::memory_order_acquire) < k) {
      const auto now = std::chrono::steady_clock::now();
      PTOX_RUNTIME_CHECK(now <= deadline)
          << where << " on rank " << rank_ << ": not every rank reached a collective within "
          << timeout_ms << " ms (rank " << r << " did not)";
      Pause(start, now, ++tests);
    }
  }
  node_->Sync();
  for (int r = 0; r < size_; ++r) {
    const char* desc = node_->desc(r, parity);
    PTOX_RUNTIME_CHECK(r == rank_ || SameSig(desc, sig)) << Mismatch(rank_, sig, where, r, desc);
  }
}

void World::Arrive(std::string_view sig, std::string_view where,
                   std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  if (node_)
    NodeBarrier(sig, where, deadline, timeout_ms);
  else
    Exchange(sig, where, NoPayloads(), deadline, timeout_ms);
}

// In pieces of at most a slot. Below kNodeSplitBytes: every rank copies its values into its slot;
// a barrier; every rank folds every rank's slot where it lies (the tree, in rank order) into its
// own values. From it, rank c owns chunk c: every rank copies the chunks it does not own into its
// slot; a barrier; rank c folds its own chunk c and chunk c of every other slot into its slot and
// copies that back into its values; a barrier; every rank copies the chunks others folded out.
// Pieces (an allreduce's, or the next collective's) alternate between the two slots, and a rank
// writes one only after the barrier of the piece before, which no rank reaches before it read
// all it reads of the piece before that, the slot's last use: so a rank that runs ahead never
// writes values another still reads. Each barrier checks the descriptions (NodeBarrier), so a
// mismatched collective is an error on every rank before any rank reads another's slot. The
// segment is mapped (a collective MPI call that has no deadline) only after an Exchange of the
// descriptions, once every rank came to the first collective that uses it (MapNode).
// On 4 ranks sharing 2 cores of an AMD EPYC VM (bench/dist_bench) this ran at 1.3-2.6x raw
// MPI_Allreduce from 16 KB to 64 MB, where the recursive halving ran at 0.86-1.01x from 1 MB: it
// moves as many bytes per rank, but with two barriers instead of four rounds of messages, and no
// copy from one process to another in the kernel. On 2 ranks, 1.0-1.6x from 1 to 16 MB, where
// the messages ran at 0.97-1.06x from 4 MB; copying the own chunk in and out as well
// (a copy of every value in, and out) took 1.2-1.3x at 4 MB and 0.97-1.03x at 16 MB. At 4 KB,
// one barrier made of description messages took 1.6-1.9x on 4 ranks (raw MPI 34-45 us) where one
// exchange of the values took 0.99-1.01x; on 2 ranks 0.5-0.8 us more than raw MPI in quiet runs
// (2-3 us more in slow ones), the exchange 1.1-1.8 us more. At 16 KB one barrier and two were
// alike.
void World::NodeAllReduce(std::string_view sig, std::string_view where, char* data, int64_t n,
                          int elem_bytes, const Fold& fold,
                          std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  MapNode(sig, where, deadline, timeout_ms);
  std::vector<const void*>& values = ThisThreadsPad().Values(size_);
  if (static_cast<size_t>(n) * elem_bytes < kNodeSplitBytes) {
    const int parity = node_parity_ ^= 1;
    std::memcpy(node_->slot(rank_, parity), data, n * elem_bytes);
    NodeBarrier(sig, where, deadline, timeout_ms);
    for (int r = 0; r < size_; ++r) values[r] = node_->slot(r, parity);
    fold(data, values.data(), size_, n);
    return;
  }
  const int64_t per_piece = static_cast<int64_t>(NodeSegment::kSlotBytes) / elem_bytes;
  for (int64_t at = 0; at < n; at += per_piece) {
    const int64_t m = std::min(per_piece, n - at);
    const int parity = node_parity_ ^= 1;
    auto lo = [&](int c) { return m * c / size_ * elem_bytes; };  // chunk c's first byte
    char* const piece = data + at * elem_bytes;
    char* const own = node_->slot(rank_, parity);
    for (int c = 0; c < size_; ++c)
      if (c != rank_) std::memcpy(own + lo(c), piece + lo(c), lo(c + 1) - lo(c));
    NodeBarrier(sig, where, deadline, timeout_ms);
    for (int r = 0; r < size_; ++r)
      values[r] = (r == rank_ ? piece : node_->slot(r, parity)) + lo(rank_);
    fold(own + lo(rank_), values.data(), size_, (lo(rank_ + 1) - lo(rank_)) / elem_bytes);
    std::memcpy(piece + lo(rank_), own + lo(rank_), lo(rank_ + 1) - lo(rank_));
    NodeBarrier(sig, where, deadline, timeout_ms);
    for (int c = 0; c < size_; ++c)
      if (c != rank_) std::memcpy(piece + lo(c), node_->slot(c, parity) + lo(c), lo(c + 1) - lo(c));
  }
}
#endif

#ifdef PTOX_WITH_MPI
// In pieces of at most a slot (at least one: an allgather of nothing checks the descriptions too),
// alternating between the two as NodeAllReduce's: every rank copies its piece into its slot; a
// barrier; every rank copies every rank's piece out, its own from `x`. The copies out stream
// (StreamCopy): the output is written once, and from megabytes is larger than a cache (at 4-64
// KiB, measured only so).
void World::NodeAllGather(std::string_view sig, std::string_view where, const char* x, size_t bytes,
                          char* out, std::chrono::steady_clock::time_point deadline,
                          int64_t timeout_ms) {
  MapNode(sig, where, deadline, timeout_ms);
  for (size_t at = 0; at == 0 || at < bytes; at += NodeSegment::kSlotBytes) {
    const size_t m = std::min(NodeSegment::kSlotBytes, bytes - at);
    const int parity = node_parity_ ^= 1;
    if (m) std::memcpy(node_->slot(rank_, parity), x + at, m);
    NodeBarrier(sig, where, deadline, timeout_ms);
    for (int r = 0; r < size_ && m; ++r)
      StreamCopy(out + r * bytes + at, r == rank_ ? x + at : node_->slot(r, parity), m);
  }
}

// In pieces of at most a slot, alternating between the two as NodeAllReduce's; a piece is the
// elements [at, at + m) of every chunk: every rank copies the pieces of the chunks it does not
// own into its slot; a barrier; rank c folds the piece of its own chunk, where it lies, with the
// piece of chunk c in every other slot. One barrier per piece, and at least one (a reduce_scatter
// of nothing checks the descriptions too).
void World::NodeReduceScatter(std::string_view sig, std::string_view where, const char* data,
                              int64_t n, int elem_bytes, char* out, const Fold& fold,
                              std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  MapNode(sig, where, deadline, timeout_ms);
  std::vector<const void*>& values = ThisThreadsPad().Values(size_);
  const int64_t per_piece = static_cast<int64_t>(NodeSegment::kSlotBytes) / (size_ * elem_bytes);
  for (int64_t at = 0; at == 0 || at < n; at += per_piece) {
    const int64_t m = std::min(per_piece, n - at);
    const size_t piece_bytes = static_cast<size_t>(m) * elem_bytes;
    auto from = [&](int c) { return data + (c * n + at) * elem_bytes; };  // chunk c's piece
    const int parity = node_parity_ ^= 1;
    char* const own = node_->slot(rank_, parity);
    for (int c = 0; c < size_; ++c)
      if (c != rank_ && piece_bytes) std::memcpy(own + c * piece_bytes, from(c), piece_bytes);
    NodeBarrier(sig, where, deadline, timeout_ms);
    for (int r = 0; r < size_; ++r)
      values[r] = r == rank_ ? from(rank_) : node_->slot(r, parity) + rank_ * piece_bytes;
    fold(out + at * elem_bytes, values.data(), size_, m);
  }
}
#endif

// A pending send may still read its header, and a pending receive write the scratch: both buffers
// move to abandoned_, destroyed after MPI_Finalize (~World). MPI cannot cancel a started
// non-blocking collective (Broadcast's, a large AllGather's); its request stays pending.
void World::Abandon(const char* what) {
  std::lock_guard<std::mutex> failure_lock(failure_mu_);
  if (failed_.exchange(true)) return;
  failure_ = what;
#ifdef PTOX_WITH_MPI
  Pad& pad = ThisThreadsPad();
  {
    std::lock_guard<std::mutex> lock(MpiMutex());
    for (MPI_Request& req : pad.reqs)
      if (req != MPI_REQUEST_NULL) MPI_Cancel(&req), MPI_Request_free(&req);
  }
  pad.reqs.clear();
  abandoned_.push_back(std::move(pad.heads));
  std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
  abandoned_.push_back(std::move(scratch_));
#endif
}

#ifdef PTOX_WITH_MPI
namespace {

std::vector<MPI_Win>& Windows() {  // the windows of this process, in creation order
  static std::vector<MPI_Win> windows;
  return windows;
}

}  // namespace

int World::CreateWindow(std::string_view sig, std::string_view where, void* base, size_t bytes,
                        int elem_bytes, int64_t timeout_ms) {
  Guarded(where, [&] {
    std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
    Arrive(sig, where, Deadline(timeout_ms), timeout_ms);
    MPI_Win win;
    std::lock_guard<std::mutex> lock(MpiMutex());
    PTOX_RUNTIME_CHECK(MPI_Win_create(base, static_cast<MPI_Aint>(bytes), elem_bytes, MPI_INFO_NULL,
                                      MPI_COMM_WORLD, &win) == MPI_SUCCESS &&
                       MPI_Win_fence(0, win) == MPI_SUCCESS)
        << where << ": MPI failed to create a window";
    Windows().push_back(win);
  });
  return static_cast<int>(Windows().size()) - 1;
}

void World::Put(int window, int peer, const void* data, size_t bytes, int64_t disp,
                std::string_view where) {
  Guarded(where, [&] {
    const int count = Count(bytes, where);
    std::lock_guard<std::mutex> lock(MpiMutex());
    PTOX_RUNTIME_CHECK(MPI_Put(data, count, MPI_BYTE, peer, disp, count, MPI_BYTE,
                               Windows().at(window)) == MPI_SUCCESS)
        << where << ": MPI_Put failed";
  });
}

void World::Get(int window, int peer, void* data, size_t bytes, int64_t disp,
                std::string_view where) {
  Guarded(where, [&] {
    const int count = Count(bytes, where);
    std::lock_guard<std::mutex> lock(MpiMutex());
    PTOX_RUNTIME_CHECK(MPI_Get(data, count, MPI_BYTE, peer, disp, count, MPI_BYTE,
                               Windows().at(window)) == MPI_SUCCESS)
        << where << ": MPI_Get failed";
  });
}

// The barrier is ours (descriptions, a deadline); MPI's fences then find every rank there.
void World::Fence(std::string_view where, int64_t timeout_ms) {
  Guarded(where, [&] {
    std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
    Arrive("fence", where, Deadline(timeout_ms), timeout_ms);
    std::lock_guard<std::mutex> lock(MpiMutex());
    for (MPI_Win w : Windows())
      PTOX_RUNTIME_CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS) << where << ": MPI_Win_fence failed";
  });
}

void World::FreeWindows() {
  std::lock_guard<std::mutex> lock(MpiMutex());
  for (MPI_Win& w : Windows()) MPI_Win_free(&w);
  Windows().clear();
}
#else
int World::CreateWindow(std::string_view, std::string_view, void*, size_t, int, int64_t) {
  PTOX_ICHECK(false) << "windows need MPI";
  return -1;
}
void World::Put(int, int, const void*, size_t, int64_t, std::string_view) {}
void World::Get(int, int, void*, size_t, int64_t, std::string_view) {}
void World::Fence(std::string_view, int64_t) {}
void World::FreeWindows() {}
#endif

void World::AllGather(std::string_view sig, std::string_view where, const void* data, size_t bytes,
                      void* out, int64_t timeout_ms) {
  Guarded(where, [&] {
    char* const o = static_cast<char*>(out);
    const char* x = static_cast<const char*>(data);
    if (size_ == 1) {
      if (bytes) std::memmove(o, x, bytes);
      return;
    }
#ifdef PTOX_WITH_MPI
    std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
    const auto deadline = Deadline(timeout_ms);
    // x in the output (an allgather in place): x is copied aside first, so that no copy into the
    // output overwrites values not yet sent, and every rank takes the same path below (a path
    // chosen by where x lies could differ from one rank to another).
    if (bytes && x < o + bytes * size_ && o < x + bytes)
      x = static_cast<const char*>(std::memcpy(Scratch(bytes), x, bytes));
    // When every rank is on this machine, through the node segment (NodeAllGather); on 2 ranks
    // up to 16 KiB and from 16 MiB a rank. On an AMD EPYC VM (2 cores), in a throwaway benchmark
    // of plain MPI calls, its pattern took 0.75-0.79x MPI_Allgather's time from 16 to 64 MiB on 2
    // ranks (MPI's copy moves each byte once, by the kernel, but through the cache), and on 4
    // ranks 0.50-0.68x from 1 to 64 MiB. In dist_bench, with barriers of flags: on 4 ranks
    // 1.5-3.7x raw MPI from 4 KiB to 64 MiB; on 2 ranks 1.3-3.0x at 4 KiB and 0.8-1.5x at 16 KiB,
    // where the exchange below took 0.9-1.0x and 0.7x, but from 64 KiB to 1 MiB it took 0.5-0.6x in
    // some runs (1.1-3.9x in others, alike with plain copies out), the exchange 0.8-1.0x in all.
    const bool node = size_ > 2 || bytes <= kNodeAllGatherSmall2 || bytes >= kNodeAllGatherLarge2;
    if (node_shm_ && node) return NodeAllGather(sig, where, x, bytes, o, deadline, timeout_ms);
    // Otherwise, from 8 MiB a rank, once the descriptions matched, MPI's own non-blocking
    // allgather moves the values (dist_bench, 2 ranks: 1.0-1.1x raw MPI_Allgather at 16 and 64
    // MiB, 0.88-0.93x with the one-round exchange below; 4 ranks on 2 cores: 1.3-1.5x). Below
    // it, MPI_Iallgather ran at 0.4-0.6x (1 and 4 MiB) and the exchange at 0.93-0.98x.
    if (bytes >= kNativeAllGatherBytes) {
      Arrive(sig, where, deadline, timeout_ms);
      const int count = Count(bytes, where);
      Complete(
          [&](MPI_Request* req) {
            return MPI_Iallgather(x, count, MPI_BYTE, o, count, MPI_BYTE, MPI_COMM_WORLD, req);
          },
          where, "allgather", rank_, deadline, timeout_ms);
      return;
    }
    // Once the node segment is mapped, another rank may be in a collective that waits there: the
    // descriptions are checked there first, so that a mismatch is an error, not a wait.
    if (node_) NodeBarrier(sig, where, deadline, timeout_ms);
    std::vector<Peer>& peers = ThisThreadsPad().Peers(size_);
    for (int r = 0; r < size_; ++r) peers[r] = {x, bytes, o + r * bytes, bytes};
    // The own values are copied while the messages travel. One pointer captured: std::function
    // keeps it without allocating.
    const struct {
      char* to;
      const char* from;
      size_t bytes;
    } own{o + rank_ * bytes, x, bytes};
    Exchange(
        sig, where, peers, deadline, timeout_ms,
        [c = &own] {
          if (c->bytes) std::memcpy(c->to, c->from, c->bytes);
        },
        kAllGatherSplitBytes);
#else
    (void)sig, (void)where, (void)timeout_ms;
    PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
#endif
  });
}

void World::Broadcast(std::string_view sig, std::string_view where, void* data, size_t bytes,
                      int root, int64_t timeout_ms) {
  Guarded(where, [&] {
    if (size_ == 1) return;
#ifdef PTOX_WITH_MPI
    std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
    const auto deadline = Deadline(timeout_ms);
    Arrive(sig, where, deadline, timeout_ms);
    const int count = Count(bytes, where);
    Complete(
        [&](MPI_Request* req) {
          return MPI_Ibcast(data, count, MPI_BYTE, root, MPI_COMM_WORLD, req);
        },
        where, "broadcast", rank_, deadline, timeout_ms);
#else
    (void)sig, (void)where, (void)data, (void)bytes, (void)root, (void)timeout_ms;
    PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
#endif
  });
}

void World::ReduceScatter(std::string_view sig, std::string_view where, const void* data, int64_t n,
                          int elem_bytes, void* out, const Fold& fold, int64_t timeout_ms) {
  Guarded(where, [&] {
    const size_t chunk = static_cast<size_t>(n) * elem_bytes;
    if (size_ == 1) {
      if (chunk) std::memmove(out, data, chunk);
      return;
    }
#ifdef PTOX_WITH_MPI
    std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
    if (node_shm_)
      return NodeReduceScatter(sig, where, static_cast<const char*>(data), n, elem_bytes,
                               static_cast<char*>(out), fold, Deadline(timeout_ms), timeout_ms);
    Pad& pad = ThisThreadsPad();
    std::vector<size_t>&counts = pad.counts, &displs = pad.displs;
    counts.assign(size_, chunk);
    displs.resize(size_);
    for (int c = 0; c < size_; ++c) displs[c] = chunk * c;
    ScatterFold(sig, where, static_cast<const char*>(data), counts, displs, elem_bytes,
                static_cast<char*>(out), fold, Deadline(timeout_ms), timeout_ms);
#else
    (void)sig, (void)where, (void)fold, (void)timeout_ms;
    PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
#endif
  });
}

void World::AllReduce(std::string_view sig, std::string_view where, void* data, int64_t n,
                      int elem_bytes, const Fold& fold, int64_t timeout_ms) {
  Guarded(where, [&] {
    if (size_ == 1) return;
#ifdef PTOX_WITH_MPI
    const auto deadline = Deadline(timeout_ms);
    const size_t bytes = static_cast<size_t>(n) * elem_bytes;
    char* const base = static_cast<char*>(data);
    std::lock_guard<std::mutex> scratch_lock(scratch_mu_);
    Pad& pad = ThisThreadsPad();
    if (node_shm_)
      return NodeAllReduce(sig, where, base, n, elem_bytes, fold, deadline, timeout_ms);
    // Small messages: every rank gets every rank's values in one round and folds all of them.
    if (bytes * (size_ - 1) <= (size_t{64} << 10)) {
      char* const all = Scratch(bytes * size_);
      std::vector<Peer>& peers = pad.Peers(size_);
      for (int r = 0; r < size_; ++r) peers[r] = {base, bytes, all + r * bytes, bytes};
      Exchange(sig, where, peers, deadline, timeout_ms);
      std::vector<const void*>& values = pad.Values(size_);
      for (int r = 0; r < size_; ++r) values[r] = r == rank_ ? base : all + r * bytes;
      fold(base, values.data(), size_, n);
      return;
    }
    // Larger ones on 4, 8, ... ranks: recursive halving, then doubling (Rabenseifner). In round
    // d = 1, 2, ..., p / 2 a rank and its partner (rank ^ d) hold partial sums of one range; the
    // lower rank keeps its lower half, the upper one the upper half, each sends the other half and
    // folds lower rank's + upper rank's, which is the pairwise tree's order (support/rank_tree.h)
    // for every element. Then the rounds run backwards, each rank sending the range it holds.
    // 2 (p - 1) / p of the data per rank, each round with one peer. From 256 KB: on 4 ranks
    // sharing 2 cores of an AMD EPYC VM (bench/dist_patterns) this pattern took 0.97x
    // MPI_Allreduce at 1 and 4 MB, where the scatter below took 0.75-0.79x; at 64 KB it took
    // 0.70x and the scatter 0.80x (its rounds are fewer). The first round is an Exchange: the
    // description goes to every rank, the payload to the partner only, and the partner's payload
    // is received only once its description matched, so a mismatched collective is an error on
    // every rank before any payload lands, one round fewer than a descriptions-only round ahead
    // of the halving.
    if (size_ >= 4 && (size_ & (size_ - 1)) == 0 && bytes >= (size_t{256} << 10)) {
      char* const got = Scratch((static_cast<size_t>(n) / 2 + 1) * elem_bytes);
      std::vector<size_t>& ranges = pad.displs;  // each round's [lo, hi), in elements
      ranges.clear();
      size_t lo = 0, hi = static_cast<size_t>(n);
      auto at = [&](size_t e) { return base + e * elem_bytes; };
      std::vector<const void*>& values = pad.Values(2);
      auto only = [&](int peer, const Peer& p) -> const std::vector<Peer>& {  // one peer's traffic
        std::vector<Peer>& peers = pad.Peers(size_);
        std::fill(peers.begin(), peers.end(), Peer{});
        peers[peer] = p;
        return peers;
      };
      for (int d = 1; d < size_; d *= 2) {
        const bool lower = (rank_ & d) == 0;
        const size_t mid = lo + (hi - lo) / 2;
        const size_t keep = lower ? lo : mid, keep_end = lower ? mid : hi;
        const size_t give = lower ? mid : lo, give_end = lower ? hi : mid;
        const std::vector<Peer>& peers = only(rank_ ^ d, {at(give), (give_end - give) * elem_bytes,
                                                          got, (keep_end - keep) * elem_bytes});
        if (d == 1)
          Exchange(sig, where, peers, deadline, timeout_ms);
        else
          Transfer(where, peers, deadline, timeout_ms);
        values[0] = lower ? at(keep) : got;
        values[1] = lower ? got : at(keep);
        fold(at(keep), values.data(), 2, static_cast<int64_t>(keep_end - keep));
        ranges.push_back(lo), ranges.push_back(hi);
        lo = keep, hi = keep_end;
      }
      for (int d = size_ / 2; d >= 1; d /= 2) {
        const size_t up_hi = ranges.back(), up_lo = ranges[ranges.size() - 2];
        ranges.resize(ranges.size() - 2);
        const size_t other = lo == up_lo ? hi : up_lo, other_end = lo == up_lo ? up_hi : lo;
        Transfer(where,
                 only(rank_ ^ d, {at(lo), (hi - lo) * elem_bytes, at(other),
                                  (other_end - other) * elem_bytes}),
                 deadline, timeout_ms);
        lo = up_lo, hi = up_hi;
      }
      return;
    }
    // Other large ones: rank c owns elements [lo(c), lo(c + 1)); every rank sends it that chunk,
    // it folds them (the tree over the ranks' chunks), and sends the folded chunk to every rank:
    // 2 (p - 1) / p of the data per rank, as a ring allreduce moves, in two rounds.
    auto lo = [&](int c) { return static_cast<size_t>(n * c / size_) * elem_bytes; };
    std::vector<size_t>&counts = pad.counts, &displs = pad.displs;
    counts.resize(size_), displs.resize(size_);
    for (int c = 0; c < size_; ++c) counts[c] = lo(c + 1) - lo(c), displs[c] = lo(c);
    char* const folded = base + displs[rank_];
    ScatterFold(sig, where, base, counts, displs, elem_bytes, folded, fold, deadline, timeout_ms);
    std::vector<Peer>& peers = pad.Peers(size_);
    for (int r = 0; r < size_; ++r) peers[r] = {folded, counts[rank_], base + displs[r], counts[r]};
    Transfer(where, peers, deadline, timeout_ms);
#else
    (void)sig, (void)where, (void)data, (void)n, (void)elem_bytes, (void)fold, (void)timeout_ms;
    PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
#endif
  });
}

}  // namespace ptox::dist
