// The pass pipeline: runs passes in order, verifying after each, with optional IR printing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ptox::passes {

// The default pipeline for tile-level programs, in order.
const std::vector<std::string>& DefaultPipeline();

struct PipelineOptions {
  bool verify_each = true;  // run the verifier after every pass (always on in tests)
  // Called after each pass with its name and the module it produced (for --print-ir-after-all).
  std::function<void(std::string_view pass, const ir::Module&)> after_pass;
};

// Runs the named passes; an unknown name is a user error listing the known passes.
ir::Module RunPipeline(const ir::Module& module, const std::vector<std::string>& names,
                       const PipelineOptions& options = {});

}  // namespace ptox::passes
