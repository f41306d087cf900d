// Reference interpreter (placeholder until the evaluator lands).
#include "interp/interpreter.h"

#include "ir/signature.h"

namespace ptox::interp {
void Run(const ir::Func& func, const std::vector<Arg>& args) {
  ir::BindArgs(func, args);
  PTOX_UNSUPPORTED() << "interpreter not implemented yet";
}
}  // namespace ptox::interp
