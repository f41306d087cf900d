// Running a generated CPU module: the bridge between its C ABI (kernels/cpu/abi.h) and the task
// runtime — ptox_entry submits tasks, the runtime runs them on worker threads, the host waits.
#pragma once

#include <vector>

#include "kernels/cpu/abi.h"
#include "targets/target.h"

namespace ptox::targets::cpu {

// Runs `entry` over `args` (already checked); throws kRuntime naming the failed task.
void Launch(ptox::cpu::EntryFn entry, const std::vector<Arg>& args, const RunContext& ctx);

}  // namespace ptox::targets::cpu
