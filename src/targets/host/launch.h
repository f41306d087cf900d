// Running a generated module's orchestration on the host: the bridge between the orchestration
// ABI (kernels/abi.h) and the task runtime — the entry submits tasks, the runtime runs them on
// worker threads (dependencies from their access regions), the host waits. Shared by every
// target whose orchestration runs on the host (the CPU targets; a device target's tasks would
// launch its kernels).
#pragma once

#include <vector>

#include "kernels/abi.h"
#include "targets/target.h"

namespace ptox::targets::host {

// Runs `entry` over `args` (already checked); throws kRuntime naming the failed task.
void Launch(abi::EntryFn entry, const std::vector<Arg>& args, const RunContext& ctx);

}  // namespace ptox::targets::host
