// Parser (placeholder until the recursive-descent parser lands).
#include "ir/parser.h"

namespace ptox::ir {
Module Parse(std::string_view, const std::string& filename) {
  PTOX_UNSUPPORTED() << "parser not implemented yet (" << filename << ")";
}
}  // namespace ptox::ir
