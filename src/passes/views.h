// Slices and reshapes read in place: which tensor.slice / tensor.reshape ops of a block may be
// views of their operand's memory instead of copies (docs/passes/fuse-elementwise.md, "Views").
#pragma once

#include <unordered_set>

#include "ir/ir.h"

namespace ptox::passes {

// The results of the tensor.slice and tensor.reshape statements of `block` (a block of `func`,
// not the ops nested in its statements), and of transposes that are reshapes
// (TransposeKeepsOrder), that may be read in place. A reshape needs every symbolic dim of its
// result among the operand's, and an operand known to be contiguous (computed by a tensor op,
// so held in a new buffer, or a tensor.empty, or a reshape view of one) unless it only adds,
// drops or moves dims of size 1 (any strides serve then). All of them
// mean a copy at their position, and a view reads the memory when its readers run, so a view
// is taken only where the two cannot differ and nothing can write through it:
//  - the result is only read: an operand of tensor ops, the value of a tensor.store, or the
//    operand of another view (never a store's destination, a yield or a loop's initial value);
//  - it is read only by statements of `block` (anywhere inside them);
//  - its memory cannot be written between the view and its last reader: the tensor it reads
//    (through other views) is an `in` parameter, or every statement from the view to its last
//    reader writes only tensors made after the view (tensor.empty) and parameters other than
//    that tensor.
// Everything else stays a copy, which is always correct.
std::unordered_set<const ir::ValueNode*> Views(const ir::Func& func, const ir::Block& block);

// Whether a tensor.transpose keeps the elements in memory order (it only moves dims of size 1
// past each other): a reshape, which Views() treats as one.
bool TransposeKeepsOrder(const ir::OpStmt& op);

}  // namespace ptox::passes
