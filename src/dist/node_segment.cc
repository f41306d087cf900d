#ifdef PTOX_WITH_MPI
#include "dist/node_segment.h"

#include <mutex>

#include "dist/mpi_wait.h"
#include "support/error.h"

namespace ptox::dist {

NodeSegment::NodeSegment(int size, std::string_view where) : bases_(size) {
  std::lock_guard<std::mutex> lock(MpiMutex());
  char* mine = nullptr;
  const size_t bytes = kHeaderBytes + 2 * kSlotBytes;
  PTOX_RUNTIME_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL,
                                             MPI_COMM_WORLD, &mine, &win_) == MPI_SUCCESS)
      << where << ": MPI could not map " << bytes
      << " bytes of shared memory per rank (PTOX_DIST_SHM=0 moves every value by MPI messages)";
  for (int r = 0; r < size; ++r) {
    MPI_Aint got = 0;
    int unit = 0;
    PTOX_RUNTIME_CHECK(MPI_Win_shared_query(win_, r, &got, &unit, &bases_[r]) == MPI_SUCCESS)
        << where << ": MPI_Win_shared_query failed";
  }
  // MPI_Win_sync needs a passive-target epoch; it stays open (no lock is ever taken in it).
  PTOX_RUNTIME_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_) == MPI_SUCCESS)
      << where << ": MPI_Win_lock_all failed";
  // MPI does not promise zeroed memory: each rank clears its own count, and no rank reads
  // another's before every rank has (the barrier; like the mapping it has no deadline, and
  // every rank is here: the mapping is collective).
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(mine)).store(0, std::memory_order_relaxed);
  MPI_Win_sync(win_);
  PTOX_RUNTIME_CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS) << where << ": MPI_Barrier failed";
  MPI_Win_sync(win_);
}

void NodeSegment::Sync() {
  std::lock_guard<std::mutex> lock(MpiMutex());
  MPI_Win_sync(win_);
}

}  // namespace ptox::dist
#endif
