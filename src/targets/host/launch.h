// Running a generated module's orchestration on the host: the bridge between the orchestration
// ABI (kernels/abi.h) and the task runtime — the entry submits tasks, the runtime runs them on
// worker threads (dependencies from their access regions), the host waits. Shared by every
// target whose orchestration runs on the host (the CPU targets; a device target's tasks would
// launch its kernels).
#pragma once

#include <vector>

#include "kernels/abi.h"
#include "runtime/pack_store.h"
#include "targets/target.h"

namespace ptox::targets::host {

// The program state of a host-orchestrated target: blocks packed from constant inputs.
class HostState final : public ProgramState {
 public:
  std::shared_lock<std::shared_mutex> Use() override { return packs.Use(); }
  void ForgetConstants() override { packs.Clear(); }
  int64_t ConstantBytes() const override { return packs.bytes(); }
  runtime::PackStore packs;
};

// Runs `entry` over `args` (already checked); throws kRuntime naming the failed task.
// ctx.state, when set, is the HostState of the target that built `entry`.
void Launch(abi::EntryFn entry, const std::vector<Arg>& args, const RunContext& ctx);

}  // namespace ptox::targets::host
