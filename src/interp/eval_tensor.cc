// Tensor-level ops in the reference interpreter (to be implemented).
#include "interp/eval.h"

namespace ptox::interp {

std::optional<RtValue> EvalTensorOp(const ir::OpStmt& op, Env&) {
  PTOX_UNSUPPORTED() << "the interpreter cannot run " << OpWhere(op) << " yet";
  return std::nullopt;
}

}  // namespace ptox::interp
