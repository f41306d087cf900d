// Run-time sizes of tensor dims while a pass builds loops over them (fuse-elementwise's buffers,
// convert-tensor-to-tile's loop nests). A static dim is an immediate. A parameter's symbol is the
// tensor.dim of the first parameter carrying it. A symbol no parameter carries is bound by the
// tensor.empty (or symbolic-axis tensor.concat) that introduces it, for the rest of the block it
// is in (docs/ir.md): the walk marks each block's start and ends its bindings with it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "passes/rewrite.h"

namespace ptox::passes {

class Extents {
 public:
  explicit Extents(const ir::Func& func);
  // The size of `d` as an index operand, emitting tensor.dim into `w` for parameter symbols.
  ir::Operand Of(BlockWriter& w, const ir::Dim& d) const;
  // Whether `sym` has a size here (a parameter's, or a binding in scope).
  bool Bound(const std::string& sym) const;
  // Binds `sym` to `size` until the end of the current scope (the first binding wins).
  void Bind(const std::string& sym, ir::Operand size);
  // Binds `sym` to the size of dim `dim` of `tensor` (a value defined before every use of the
  // binding): Of emits tensor.dim of it.
  void BindDim(const std::string& sym, ir::Value tensor, int dim);
  size_t Mark() const { return bound_.size(); }
  void EndScope(size_t mark) { bound_.resize(mark); }

 private:
  std::map<std::string, std::pair<ir::Value, int>> params_;  // symbol -> (parameter, dim)
  struct Binding {
    std::string sym;
    ir::Operand size;  // the size, or (when tensor is set) read from dim `dim` of tensor
    ir::Value tensor;
    int dim = 0;
  };
  std::vector<Binding> bound_;  // bindings in scope, oldest first
};

}  // namespace ptox::passes
