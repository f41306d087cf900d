// InterpTarget: interp::Run, with the NaN check of RunOptions::check_nan around it.
#include "targets/interp/interp_target.h"

#include <optional>

#include "interp/interpreter.h"
#include "targets/interp/nan_watch.h"

namespace ptox::targets {
namespace {

class Interpreted final : public Executable {
 public:
  explicit Interpreted(const ir::Func& func) : func_(func) {}
  // The interpreter has no tasks (RunContext::threads and trace do not apply) and nothing to
  // pack (constants change nothing); RunContext::comm places it among the ranks of a run.
  void Run(const std::vector<Arg>& args, const RunContext& ctx) const override {
    std::optional<NanWatch> watch;
    if (ctx.check_nan) watch.emplace(func_, args);
    interp::Run(func_, args, ctx.comm);
    if (watch) watch->Check();
  }

 private:
  const ir::Func& func_;  // owned by the Program, which outlives its executables
};

}  // namespace

std::shared_ptr<const Executable> InterpTarget::Interpret(const ir::Func& func) const {
  return std::make_shared<Interpreted>(func);
}

}  // namespace ptox::targets
