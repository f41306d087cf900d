// The interpreter as a target: it runs the verified IR as it is (no passes, no compiler), so
// `--target=interp` goes through the same Run path as every compiled target.
#pragma once

#include "targets/target.h"

namespace ptox::targets {

class InterpTarget final : public Target {
 public:
  std::string_view name() const override { return "interp"; }
  std::string_view family() const override { return "interp"; }
  bool Available(std::string*) const override { return true; }
  const Capabilities& caps() const override { return caps_; }
  std::shared_ptr<const Executable> Interpret(const ir::Func& func) const override;

 private:
  Capabilities caps_;  // the nominal defaults: what `ptox opt --target=interp` lowers for
};

}  // namespace ptox::targets
