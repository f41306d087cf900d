// Compiling a function for a target through the pass pipeline and the compile cache.
#pragma once

#include <memory>

#include "ir/ir.h"
#include "targets/target.h"

namespace ptox::driver {

// The function after the default pass pipeline for capabilities `caps` (what codegen sees);
// `fuse = false` skips fuse-elementwise.
ir::Func Lower(const passes::Capabilities& caps, const ir::Func& func, bool fuse = true);

// Lowers, generates and builds (on a cache miss) `func`; returns the cached artifact's path (a
// temporary file when the cache is read-only or the entry could not be installed).
std::string CompileToCache(const targets::CompiledTarget& target, const ir::Func& func,
                           bool fuse = true);

// Forgets the builds this process saw the compiler reject (they are remembered by cache key so
// that a failing program does not run the compiler on every call); with the cache's records of
// them, what `ptox cache clear` (ptox::ClearCache) removes.
void ForgetRejectedBuilds();

// The executable of `func` for `target`: the interpreter's, or lowered, generated, built (on a
// cache miss) and loaded. Compiled executables are also memoized in the process, so a second
// call costs one hash. `built`, when given, is set to whether the toolchain built it (false: the
// compile cache or this process had it, or the target interprets).
std::shared_ptr<const targets::Executable> Compile(const targets::Target& target,
                                                   const ir::Func& func, bool fuse = true,
                                                   bool* built = nullptr);

}  // namespace ptox::driver
