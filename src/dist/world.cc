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

// Waits for `req` until `deadline`; false on timeout (the request is left pending: the run ends).
bool WaitUntil(MPI_Request* req, std::chrono::steady_clock::time_point deadline) {
  auto pause = std::chrono::microseconds(1);
  for (;;) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(MpiMutex());
      PTOX_RUNTIME_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS) << "MPI_Test failed";
    }
    if (done) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

}  // namespace
#endif

std::vector<std::vector<char>> World::AllGather(const std::string& sig, const std::string& where,
                                                const void* data, size_t bytes,
                                                int64_t timeout_ms) {
  const char* p = static_cast<const char*>(data);
  if (size_ == 1) return {std::vector<char>(p, p + bytes)};
#ifdef PTOX_WITH_MPI
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // First every rank's description, fixed size, so that a mismatch is found before any payload
  // of another size moves.
  constexpr size_t kDesc = 256;
  std::vector<char> mine(kDesc, 0), all(kDesc * size_);
  const std::string desc = sig + '\0' + where;
  std::memcpy(mine.data(), desc.data(), std::min(desc.size(), kDesc - 1));
  MPI_Request req;
  {
    std::lock_guard<std::mutex> lock(MpiMutex());
    PTOX_RUNTIME_CHECK(MPI_Iallgather(mine.data(), kDesc, MPI_CHAR, all.data(), kDesc, MPI_CHAR,
                                      MPI_COMM_WORLD, &req) == MPI_SUCCESS)
        << where << ": MPI_Iallgather failed";
  }
  PTOX_RUNTIME_CHECK(WaitUntil(&req, deadline))
      << where << " on rank " << rank_ << ": not every rank reached a collective within "
      << timeout_ms << " ms";
  for (int r = 0; r < size_; ++r) {
    const char* d = all.data() + r * kDesc;
    const std::string other_sig(d), other_where(d + std::strlen(d) + 1);
    PTOX_RUNTIME_CHECK(other_sig == sig)
        << "collective mismatch: rank " << rank_ << " passed " << sig << " to " << where
        << ", rank " << r << " " << other_sig << " to " << other_where;
  }
  PTOX_RUNTIME_CHECK(bytes <= static_cast<size_t>(INT32_MAX))
      << where << ": " << bytes << " bytes per rank; MPI counts stop at 2 GiB";
  std::vector<char> gathered(bytes * size_);
  {
    std::lock_guard<std::mutex> lock(MpiMutex());
    PTOX_RUNTIME_CHECK(MPI_Iallgather(p, static_cast<int>(bytes), MPI_BYTE, gathered.data(),
                                      static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD,
                                      &req) == MPI_SUCCESS)
        << where << ": MPI_Iallgather failed";
  }
  PTOX_RUNTIME_CHECK(WaitUntil(&req, deadline))
      << where << " on rank " << rank_ << ": the collective did not finish within " << timeout_ms
      << " ms";
  std::vector<std::vector<char>> out;
  for (int r = 0; r < size_; ++r)
    out.emplace_back(gathered.begin() + r * bytes, gathered.begin() + (r + 1) * bytes);
  return out;
#else
  (void)sig, (void)where, (void)timeout_ms;
  PTOX_ICHECK(false) << "a world of " << size_ << " ranks without MPI";
  return {};
#endif
}

}  // namespace ptox::dist
