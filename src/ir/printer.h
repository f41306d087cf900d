// Text form of the IR. The parser reads it back: Print(Parse(x)) == x for printed text.
#pragma once

#include <string>

#include "ir/ir.h"

namespace ptox::ir {

std::string Print(const Module& module);
std::string Print(const Func& func);
// A float immediate / attribute as the parser reads it back exactly (1.0, -0.0, inf, nan, 1e-30).
std::string FormatFloat(double v);

}  // namespace ptox::ir
