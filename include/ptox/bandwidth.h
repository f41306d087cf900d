// The memory bandwidth of this host — the ceiling of memory-bound kernels that `ptox bench`,
// bench/ and the Python benchmarks report rates against, measured in the same run.
#pragma once

#include <cstdint>

namespace ptox {

// GB/s over the timed runs: median, slowest and fastest.
struct Bandwidth {
  double median = 0, min = 0, max = 0;
};

// STREAM triad a = b + s * c over three arrays of `bytes_per_array` (default far past a 260 MB
// L3) split over `threads` threads: GB/s counting 12 bytes per element (the write-allocate read
// of `a` is not counted, as STREAM does). `reps` runs after a warm-up.
Bandwidth TriadGBs(int threads, int64_t bytes_per_array = int64_t{256} << 20, int reps = 5);

// Read-only bandwidth: a sum over `bytes` in many independent lanes from four streams per
// thread, the ceiling of kernels that read their operands and write almost nothing (GEMV,
// decode). `reps` runs after a warm-up.
Bandwidth ReadGBs(int threads, int64_t bytes = int64_t{768} << 20, int reps = 5);

}  // namespace ptox
