#ifdef PTOX_WITH_MPI
#include "dist/node_segment.h"

#include <mutex>

#include "dist/mpi_wait.h"
#include "support/error.h"

namespace ptox::dist {

NodeSegment::NodeSegment(int size, std::string_view where) : bases_(size) {
  std::lock_guard<std::mutex> lock(MpiMutex());
  char* mine = nullptr;
  PTOX_RUNTIME_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(2 * kSlotBytes), 1,
                                             MPI_INFO_NULL, MPI_COMM_WORLD, &mine,
                                             &win_) == MPI_SUCCESS)
      << where << ": MPI could not map " << 2 * kSlotBytes
      << " bytes of shared memory per rank (PTOX_DIST_SHM=0 moves every value by MPI messages)";
  for (int r = 0; r < size; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    PTOX_RUNTIME_CHECK(MPI_Win_shared_query(win_, r, &bytes, &unit, &bases_[r]) == MPI_SUCCESS)
        << where << ": MPI_Win_shared_query failed";
  }
  // MPI_Win_sync needs a passive-target epoch; it stays open (no lock is ever taken in it).
  PTOX_RUNTIME_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_) == MPI_SUCCESS)
      << where << ": MPI_Win_lock_all failed";
}

void NodeSegment::Sync() {
  std::lock_guard<std::mutex> lock(MpiMutex());
  MPI_Win_sync(win_);
}

}  // namespace ptox::dist
#endif
