// CPU codegen: a tile-level function -> C++ source that calls the tile library (kernels/cpu/).
#pragma once

#include <string>

#include "ir/ir.h"

namespace ptox::targets::cpu {

// Emits a translation unit exporting `ptox_entry` (kernels/abi.h) that runs `func`.
// Throws kUnsupported for constructs the CPU target does not handle yet.
std::string GenerateSource(const ir::Func& func);

// The line that ends a generated source's prelude: its preprocessor lines (which parts of the
// tile library it includes), between the first line (a comment naming the function) and this one.
inline constexpr const char* kPreludeEnd = "// End of the prelude.\n";

// The prelude of a source GenerateSource made ("" for any other text): the same for every program
// that uses the same parts of the library, so it can be compiled once ahead (a precompiled header).
std::string Prelude(const std::string& source);

}  // namespace ptox::targets::cpu
