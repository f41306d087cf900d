// Memory that every rank of a run on one machine maps: an MPI-3 shared-memory window
// (MPI_Win_allocate_shared over MPI_COMM_WORLD). Each rank's part holds a header, which its
// barriers go through (World::NodeBarrier: an arrival count and the description of the
// collective), and two slots: World's collectives move values through them (world.cc), each rank
// copying its values into its own slot and reading the others' slots where they lie, instead of
// MPI copying every value from one process to another. Built with MPI only (PTOX_WITH_MPI).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ptox::dist {

class NodeSegment {
 public:
  // A slot's size: a collective moves values through it in pieces of at most this many bytes,
  // so the memory mapped stays 2 * kSlotBytes per rank whatever the size.
  static constexpr size_t kSlotBytes = size_t{4} << 20;
  // A description's size (World: "sig\0where", zero-padded).
  static constexpr size_t kDescBytes = 256;

  // Collective over MPI_COMM_WORLD (`size` ranks), whose ranks must share one machine; an error
  // names `where`. Every arrival count starts at 0.
  NodeSegment(int size, std::string_view where);
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;
  // The window is left to MPI_Finalize: freeing it is collective, and a rank that failed may
  // never come to free it.

  // Rank `rank`'s slot `parity` (0 or 1): kSlotBytes.
  char* slot(int rank, int parity) const {
    return bases_[rank] + kHeaderBytes + parity * kSlotBytes;
  }
  // Rank `rank`'s description `parity`: kDescBytes.
  char* desc(int rank, int parity) const { return bases_[rank] + kDescAt + parity * kDescBytes; }
  // How many barriers rank `rank` has arrived at: stored with release by that rank only, loaded
  // with acquire by the others.
  std::atomic_ref<uint64_t> arrived(int rank) const {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(bases_[rank]));
  }

  // MPI_Win_sync: around a barrier, so that what this rank stored into the segment before it is
  // seen by every rank after it.
  void Sync();

 private:
  // The header: the arrival count in a cache line of its own (the others poll it), then the
  // descriptions; a page, so that the slots stay page-aligned.
  static constexpr size_t kDescAt = 64;
  static constexpr size_t kHeaderBytes = 4096;
  static_assert(kDescAt + 2 * kDescBytes <= kHeaderBytes);
  static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);  // shared between processes

  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<char*> bases_;  // each rank's part, as mapped in this process
};

}  // namespace ptox::dist
