// The pass pipeline: runs passes in order, verifying after each, with optional IR printing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/pass.h"

namespace ptox::passes {

// The default pipeline, in order: tensor-level programs are lowered to tiles; tile-level
// programs pass through the tensor passes unchanged. `fuse = false` drops fuse-elementwise (one
// kernel per tensor op: the baseline fusion is measured against).
std::vector<std::string> DefaultPipeline(bool fuse = true);

struct PipelineOptions {
  PassContext context;      // the target's capabilities
  bool verify_each = true;  // run the verifier after every pass (always on in tests)
  // When set, receives (pass, milliseconds) for every pass run (--time-passes).
  std::vector<std::pair<std::string, double>>* timings = nullptr;
  // Called after each pass with its name and the module it produced (for --print-ir-after-all).
  std::function<void(std::string_view pass, const ir::Module&)> after_pass;
};

// Runs the named passes; an unknown name is a user error listing the known passes.
ir::Module RunPipeline(const ir::Module& module, const std::vector<std::string>& names,
                       const PipelineOptions& options = {});

}  // namespace ptox::passes
