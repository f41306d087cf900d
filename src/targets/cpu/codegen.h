// CPU codegen: a tile-level function -> C++ source that calls the tile library (kernels/cpu/).
#pragma once

#include <string>

#include "ir/ir.h"

namespace ptox::targets::cpu {

// Emits a translation unit exporting `ptox_entry` (kernels/abi.h) that runs `func`.
// Throws kUnsupported for constructs the CPU target does not handle yet.
std::string GenerateSource(const ir::Func& func);

}  // namespace ptox::targets::cpu
