// Waiting on MPI requests with a deadline, and the lock every MPI call takes: the collectives of
// dist::World run on the task runtime's threads under MPI_THREAD_SERIALIZED, and a rank that
// never arrives must be an error, not a hang (MPI's own waits have no timeout). Built with MPI
// only (PTOX_WITH_MPI).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "support/error.h"

namespace ptox::dist {

// MPI_THREAD_SERIALIZED: one thread in MPI at a time.
std::mutex& MpiMutex();

// More ranks on this machine than cores (World sets it once MPI is up): waits yield the core
// on every test.
void SetOversubscribed(bool oversubscribed);

// Waits for the `count` requests at `reqs`, testing them under MpiMutex. Past `deadline` it
// fails, saying `rank`'s `what` did not finish within timeout_ms (the requests stay pending:
// the run ends); the message is composed only then, off the collectives' path.
void WaitAll(MPI_Request* reqs, int count, std::string_view where, const char* what, int rank,
             std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);

// Between two tests of a wait that began at `start` (`tests` counts them): see mpi_wait.cc.
void Pause(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point now,
           int64_t tests);

// Starts one non-blocking collective (`start` calls MPI under the lock) and waits for it
// (WaitAll).
template <typename Start>
void Complete(Start&& start, std::string_view where, const char* what, int rank,
              std::chrono::steady_clock::time_point deadline, int64_t timeout_ms) {
  MPI_Request req;
  {
    std::lock_guard<std::mutex> lock(MpiMutex());
    PTOX_RUNTIME_CHECK(start(&req) == MPI_SUCCESS) << where << ": MPI failed to start a collective";
  }
  WaitAll(&req, 1, where, what, rank, deadline, timeout_ms);
}

}  // namespace ptox::dist
