// Run-time checks that lowerings keep: when a tensor op becomes loops of tile ops, the errors
// the interpreter raises for it (an out-of-bounds slice, a max over an empty axis, sizes that
// disagree) become arith.assert ops naming the user's op, at its source position (the writer's
// span). Checks that hold statically emit nothing.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/rewrite.h"

namespace ptox::passes::checks {

// Index operands (immediates or SSA values) of a tensor's run-time shape, outermost first.
using Shape = std::vector<ir::Operand>;

// "{}x{}x{}": a message's holes for the dims of `shape` (passed as the assert's values).
std::string ShapeHoles(const Shape& shape);

// `a || b` and `a && b` on bool scalars (arith.select, which evaluates nothing twice).
ir::Operand Or(BlockWriter& w, const ir::Operand& a, const ir::Operand& b);
ir::Operand And(BlockWriter& w, const ir::Operand& a, const ir::Operand& b);

// Fails the run with "<op>: <msg>" ('{}' in msg replaced by `values`) unless `ok` holds.
void Assert(BlockWriter& w, const ir::Operand& ok, std::string_view op, std::string msg,
            std::vector<ir::Operand> values);

// 0 <= offset and offset + size <= shape[dim]: the window [offset, offset + size) of a slice or
// of a tensor.store at offsets (size an immediate or a run-time size).
void Window(BlockWriter& w, std::string_view op, int dim, const ir::Operand& offset,
            const ir::Operand& size, const Shape& shape);

// A max / min along `axis` of a tensor of `shape` needs a non-empty axis unless the result is
// empty (another dim is 0).
void NonEmptyAxis(BlockWriter& w, std::string_view op, std::string_view fn, int axis,
                  const Shape& shape);

// a == b for two run-time sizes; `msg` has two '{}' for them.
void SameSize(BlockWriter& w, std::string_view op, const ir::Operand& a, const ir::Operand& b,
              std::string msg);

}  // namespace ptox::passes::checks
