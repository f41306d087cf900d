// This process's place in a distributed run (docs/distributed.md): under an MPI launcher
// (`mpirun -np N ptox ...`) each process is one rank; otherwise it is rank 0 of 1.
#pragma once

#include <string>

namespace ptox {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
};

// Found from the launcher's environment on first use (MPI is initialized then).
RankInfo ThisRank();

// Prints "ptox: rank K: message" on stderr and ends every rank of the run with exit code `code`:
// a rank that fails must not leave the others waiting in a collective.
[[noreturn]] void AbortRun(const std::string& message, int code);

}  // namespace ptox
