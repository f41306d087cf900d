// Traces a person can look at: what each task of a run on a compiled target did, as Chrome /
// Perfetto trace JSON (a track per worker, a slice per task) or a per-kernel profile table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptox {

// One finished task of a run (the task runtime records them; RunOptions::trace returns them).
struct TaskTrace {
  int64_t id;
  std::string name;  // "func.incoreN (file:line:col)": where the incore scope is
  int worker;
  double start_us, end_us;  // since the run started
  int64_t bytes_read, bytes_written, flops;
};

// Chrome trace-event JSON ("traceEvents": one complete event per task, tid = worker, args with
// bytes read / written and flops). Opens in chrome://tracing and ui.perfetto.dev.
std::string ChromeTraceJson(const std::vector<TaskTrace>& trace);

// One row per kernel name: calls, total and mean time, GB/s (bytes read + written over the
// kernel's busy time) and GFLOP/s, sorted by total time.
std::string ProfileTable(const std::vector<TaskTrace>& trace);

}  // namespace ptox
