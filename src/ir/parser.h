// Parser for the text form printed by ir/printer.h. Errors are user errors
// "file:line:col: error: ..." (thrown as ptox::Error with StatusCode::kInvalid).
#pragma once

#include <string>
#include <string_view>

#include "ir/ir.h"

namespace ptox::ir {

// Parses a module; `filename` only labels error messages. Types are checked with the op type
// rules while parsing; run the verifier for whole-program checks.
Module Parse(std::string_view text, const std::string& filename = "<input>");

}  // namespace ptox::ir
