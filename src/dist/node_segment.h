// Memory that every rank of a run on one machine maps: an MPI-3 shared-memory window
// (MPI_Win_allocate_shared over MPI_COMM_WORLD) with two slots per rank. World::AllReduce folds
// through it (world.cc): each rank copies its values into its own slot, and each rank reads the
// others' slots where they lie, instead of MPI copying every value from one process to another.
// Built with MPI only (PTOX_WITH_MPI).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string_view>
#include <vector>

namespace ptox::dist {

class NodeSegment {
 public:
  // A slot's size: a collective moves values through it in pieces of at most this many bytes,
  // so the memory mapped stays 2 * kSlotBytes per rank whatever the size.
  static constexpr size_t kSlotBytes = size_t{4} << 20;

  // Collective over MPI_COMM_WORLD (`size` ranks), whose ranks must share one machine; an error
  // names `where`.
  NodeSegment(int size, std::string_view where);
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;
  // The window is left to MPI_Finalize: freeing it is collective, and a rank that failed may
  // never come to free it.

  // Rank `rank`'s slot `parity` (0 or 1): kSlotBytes.
  char* slot(int rank, int parity) const { return bases_[rank] + parity * kSlotBytes; }

  // MPI_Win_sync: around a barrier, so that what this rank stored into the segment before it is
  // seen by every rank after it.
  void Sync();

 private:
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<char*> bases_;  // each rank's slots, as mapped in this process
};

}  // namespace ptox::dist
