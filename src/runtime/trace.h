// Traces a person can look at: Chrome / Perfetto trace JSON (a track per worker, a slice per
// task) and a per-kernel profile table.
#pragma once

#include <string>
#include <vector>

#include "runtime/task_graph.h"

namespace ptox::runtime {

// Chrome trace-event JSON ("traceEvents": one complete event per task, tid = worker, args with
// bytes read / written and flops). Opens in chrome://tracing and ui.perfetto.dev.
std::string ChromeTraceJson(const std::vector<TaskRecord>& records);

// One row per kernel name: calls, total and mean time, GB/s (bytes read + written over the
// kernel's busy time) and GFLOP/s, sorted by total time.
std::string ProfileTable(const std::vector<TaskRecord>& records);

}  // namespace ptox::runtime
