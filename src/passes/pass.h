// Pass registry: every pass is a function from a module to a new module (nodes are immutable,
// so unchanged subtrees are shared).
#pragma once

#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace ptox::passes {

using PassFn = ir::Module (*)(const ir::Module&);

struct PassInfo {
  std::string_view name;
  std::string_view summary;
  PassFn run;
};

#define PTOX_PASS(fn, name, summary) ir::Module fn(const ir::Module& module);
#include "passes/passes.def"
#undef PTOX_PASS

const std::vector<PassInfo>& AllPasses();
// nullptr when no pass has this name.
const PassInfo* FindPass(std::string_view name);

}  // namespace ptox::passes
