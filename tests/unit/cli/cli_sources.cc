// Compiles the CLI's own helpers (.npy I/O, run data) into the test binary: they live in tools/ptox
// next to their only user, and the ptox_cli executable is not a library to link against.
#include "tools/ptox/npy.cc"       // NOLINT(build/include)
#include "tools/ptox/run_data.cc"  // NOLINT(build/include)
