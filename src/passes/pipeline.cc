// The readable default pipeline and the runner that applies passes in order.
#include "passes/pipeline.h"


#include <chrono>

#include "ir/verifier.h"
#include "passes/pass.h"

namespace ptox::passes {

const std::vector<PassInfo>& AllPasses() {
  static const std::vector<PassInfo> passes = {
#define PTOX_PASS(fn, name, summary) {name, summary, &fn},
#include "passes/passes.def"
#undef PTOX_PASS
  };
  return passes;
}

const PassInfo* FindPass(std::string_view name) {
  for (const PassInfo& p : AllPasses())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> DefaultPipeline(bool fuse) {
  std::vector<std::string> pipeline = {
      "inline-calls",            // calls -> copies of the callees' bodies
      "lower-collectives",       // tensor.allreduce -> a buffer reduced in place
      "lower-composites",        // softmax, norms, swiglu, rope -> primitive tensor ops
      "fuse-elementwise",        // tensor ops -> groups that share one tile loop
      "hoist-loop-buffers",      // a sequential loop's buffers: allocated once, not per trip
      "convert-tensor-to-tile",  // groups -> loops of tile-level incore scopes
      "fold-constants",          // static sizes and index arithmetic become immediates
      "unroll",                  // `unroll` loops with constant bounds -> straight-line copies
      "fold-constants",          // the copies' index arithmetic on immediates
      "dce",                     // drop what folding left unused
      "coarsen-tasks",           // tiny tasks of a parallel loop -> chunks of its iterations
      "fuse-tiles",              // elementwise tiles computed where they are used: {fused}
      "hoist-invariant-tiles",   // tiles a loop recomputes unchanged: once, before it
      "plan-memory",             // tile liveness -> arena offsets, checked against the budget
  };
  if (!fuse) std::erase(pipeline, "fuse-elementwise");
  return pipeline;
}

ir::Module RunPipeline(const ir::Module& module, const std::vector<std::string>& names,
                       const PipelineOptions& options) {
  std::vector<const PassInfo*> passes;
  for (const std::string& n : names) {
    const PassInfo* p = FindPass(n);
    if (p == nullptr) {
      std::string known;
      for (const PassInfo& q : AllPasses()) known += (known.empty() ? "" : ", ") + std::string(q.name);
      PTOX_FAIL(Span{}) << "unknown pass '" << n << "' (known: " << known << ")";
    }
    passes.push_back(p);
  }
  ir::Module m = module;
  for (const PassInfo* p : passes) {
    const auto start = std::chrono::steady_clock::now();
    m = p->run(m, options.context);
    if (options.timings) {
      std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
      options.timings->emplace_back(p->name, ms.count());
    }
    if (options.verify_each) {
      try {
        ir::Verify(m);
      } catch (const Error& e) {
        PTOX_ICHECK(false) << "pass '" << p->name << "' produced invalid IR: " << e.what();
      }
    }
    if (options.after_pass) options.after_pass(p->name, m);
  }
  return m;
}

}  // namespace ptox::passes
