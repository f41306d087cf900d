// lower-collectives: rewrites each value-form collective into a buffer the collective works on in
// place, which is what a target runs (docs/distributed.md):
//
//   %a = tensor.allreduce %x {op}   ->   %a = tensor.empty %d... : type(x)
//                                        tensor.store %x, %a
//                                        dist.allreduce %a {op}
//
// (%d: tensor.dim of each symbolic dim of x). The result value becomes the buffer's, so uses need
// no rewriting; the interpreter defines both forms by the same fold, so lowering changes no bit.
//
// Requires: verified IR. Establishes: no tensor.allreduce. Algorithm: one walk over every block.
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

using ir::OpCode;

ir::Block LowerBlock(const ir::Block& block) {
  BlockWriter w;
  for (const ir::StmtRef& s : block) {
    if (s->kind() != ir::StmtKind::kOp ||
        ir::As<ir::OpStmt>(*s).op() != OpCode::kTensorAllreduce) {
      w.Append(MapBodies(s, LowerBlock));
      continue;
    }
    const auto& op = ir::As<ir::OpStmt>(*s);
    w.set_span(s->span());
    const ir::Operand& x = op.args()[0];
    std::vector<ir::Operand> sizes;
    const std::vector<ir::Dim>& shape = x.type().shape();
    for (size_t d = 0; d < shape.size(); ++d)
      if (!shape[d].is_static())
        sizes.push_back(w.Op(OpCode::kTensorDim, {x, ir::Operand::Int(static_cast<int64_t>(d))}));
    w.OpInto(op.result(), OpCode::kTensorEmpty, std::move(sizes));
    w.Op(OpCode::kTensorStore, {x, op.result()});
    w.Op(OpCode::kDistAllreduce, {op.result()}, op.attrs());
  }
  return w.Take();
}

}  // namespace

ir::Module LowerCollectives(const ir::Module& module, const PassContext&) {
  return MapFuncs(module, [](const ir::Func& f) { return LowerBlock(f.body); });
}

}  // namespace ptox::passes
