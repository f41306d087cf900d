#ifdef PTOX_WITH_MPI
#include "dist/mpi_wait.h"

#include <thread>

namespace ptox::dist {
namespace {

bool oversubscribed = false;

}  // namespace

std::mutex& MpiMutex() {
  static std::mutex mu;
  return mu;
}

void SetOversubscribed(bool o) { oversubscribed = o; }

// Nothing for 20 us (short collectives), then a yield every 64th test for 50 ms, then sleeping
// 1 ms. A thread of this process that needs the core (a worker with compute to overlap) gets it
// within 64 tests, and a rank alone on its core does not make a system call per test: yielding
// on every test made a 1 MiB allgather on 2 ranks 1.5-2 us slower (dist_bench, Xeon VM).
// Oversubscribed (more ranks than cores) it yields on every test from the start: the rank it
// waits for may need the core (sleeping instead made 4 ranks on 2 cores 10x slower than MPI's
// own waits).
void Pause(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point now,
           int64_t tests) {
  const auto waited = now - start;
  if (waited >= std::chrono::milliseconds(50))
    return std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (oversubscribed || (waited >= std::chrono::microseconds(20) && tests % 64 == 0))
    std::this_thread::yield();
}

void WaitAll(MPI_Request* reqs, int count, std::string_view where, const char* what, int rank,
             std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  const auto begin = std::chrono::steady_clock::now();
  for (int64_t tests = 1;; ++tests) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(MpiMutex());
      PTOX_RUNTIME_CHECK(MPI_Testall(count, reqs, &done, MPI_STATUSES_IGNORE) == MPI_SUCCESS)
          << where << ": MPI_Testall failed";
    }
    if (done) return;
    const auto now = std::chrono::steady_clock::now();
    PTOX_RUNTIME_CHECK(now <= deadline) << where << " on rank " << rank << ": the " << what
                                        << " did not finish within " << timeout_ms << " ms";
    Pause(begin, now, tests);
  }
}

}  // namespace ptox::dist
#endif
