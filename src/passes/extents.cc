// Run-time sizes of tensor dims during lowering (see extents.h).
#include "passes/extents.h"

namespace ptox::passes {

Extents::Extents(const ir::Func& func) {
  for (const ir::Param& p : func.params)
    for (int d = 0; d < p.value->type.rank(); ++d) {
      const ir::Dim& dim = p.value->type.shape()[d];
      if (!dim.is_static() && !params_.count(dim.sym)) params_[dim.sym] = {p.value, d};
    }
}

ir::Operand Extents::Of(BlockWriter& w, const ir::Dim& d) const {
  if (d.is_static()) return ir::Operand::Int(d.size);
  if (auto it = params_.find(d.sym); it != params_.end())
    return w.Op(ir::OpCode::kTensorDim, {it->second.first, ir::Operand::Int(it->second.second)},
                {}, {}, d.sym);
  for (const Binding& b : bound_) {
    if (b.sym != d.sym) continue;
    if (!b.tensor) return b.size;
    return w.Op(ir::OpCode::kTensorDim, {b.tensor, ir::Operand::Int(b.dim)}, {}, {}, d.sym);
  }
  PTOX_ICHECK(false) << "dimension symbol " << d.sym << " has no size here";
  return {};
}

bool Extents::Bound(const std::string& sym) const {
  if (params_.count(sym)) return true;
  for (const Binding& b : bound_)
    if (b.sym == sym) return true;
  return false;
}

void Extents::Bind(const std::string& sym, ir::Operand size) {
  if (!Bound(sym)) bound_.push_back({sym, std::move(size), nullptr, 0});
}

void Extents::BindDim(const std::string& sym, ir::Value tensor, int dim) {
  if (!Bound(sym)) bound_.push_back({sym, {}, std::move(tensor), dim});
}

}  // namespace ptox::passes
