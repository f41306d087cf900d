// Pass registry: every pass is a function from a module to a new module (nodes are immutable,
// so unchanged subtrees are shared).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "passes/policy.h"

namespace ptox::passes {

// What passes may read about a target (never its name): sizes and its policy drive tiling and
// planning.
struct Capabilities {
  int64_t l2_bytes = 1 << 20;  // per-core cache that tiles are sized for
  // The most bytes of tiles one incore scope may hold (plan-memory rejects more).
  int64_t onchip_budget_bytes = 256 << 10;
  // Tile elements below which a task costs more to submit and run than its work: lowerings
  // split work no finer for parallelism, coarsen-tasks merges smaller tasks of a loop.
  int64_t min_task_elements = 16384;
  // The target's tiling choices (never null; the target owns it).
  const TargetPolicy* policy = &GenericPolicy();
};

// Everything a pass may read besides the module.
struct PassContext {
  Capabilities caps;
};

using PassFn = ir::Module (*)(const ir::Module&, const PassContext&);

struct PassInfo {
  std::string_view name;
  std::string_view summary;
  PassFn run;
};

#define PTOX_PASS(fn, name, summary) \
  ir::Module fn(const ir::Module& module, const PassContext& ctx);
#include "passes/passes.def"
#undef PTOX_PASS

const std::vector<PassInfo>& AllPasses();
// nullptr when no pass has this name.
const PassInfo* FindPass(std::string_view name);

}  // namespace ptox::passes
