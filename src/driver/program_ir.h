// A Program's IR, for ptox's own code (the builder, the pass pipeline, the targets, tests): the
// public API (include/ptox/ptox.h) keeps it opaque, so a user programs against text, the builder
// and ParamInfo, never against ir::Module.
#pragma once

#include "ir/ir.h"
#include "ptox/ptox.h"

namespace ptox {

struct ProgramInternals {
  // Wraps a module (the builder's, a pass pipeline's); verifies it and inlines its calls.
  static Result<Program> FromModule(ir::Module module);
  // The module as written, calls included.
  static const ir::Module& Module(const Program& p) { return *p.module_; }
  // The functions no function calls, every call inlined: what runs and compiles.
  static const ir::Module& Entries(const Program& p) { return *p.entries_; }
};

}  // namespace ptox
