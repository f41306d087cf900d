// The CPU code emitter (internal to the CPU target): state and helpers shared by codegen.cc
// (statements, ops, orchestration) and fusion.cc (fused elementwise loops).
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/incore_info.h"
#include "analysis/tile_plan.h"
#include "analysis/uses.h"
#include "ir/ir.h"

namespace ptox::targets::cpu {

std::string DTypeEnum(DType t);
std::string ScalarCType(DType t);  // how scalars of a dtype live in generated code
std::string TypeName(const ir::Type& t);
std::string DoubleLiteral(double v);  // exact (hex float), including inf / nan
// The tile-library functor of an op's scalar function, e.g. "pc::FnAdd".
inline std::string Functor(ir::OpCode op) {
  return "pc::Fn" + std::string(ir::GetOpInfo(op).scalar_fn);
}
// A C++ string literal of `text` (quotes, backslashes and control characters escaped).
std::string CLiteral(std::string_view text);

using analysis::UseSite;

class Emitter {
 public:
  friend class FusedLoop;  // fusion.cc: one fused elementwise loop
  explicit Emitter(const ir::Func& f);
  std::string Run();

 private:
  // ----- naming and text (codegen.cc)
  std::string Name(const ir::Value& v);
  void Alias(const ir::Value& v, const std::string& name) { names_[v.get()] = name; }
  void Line(int depth, const std::string& s);
  void Check(int depth) { Line(depth, "if (ctx.failed()) return ctx.code();"); }
  // Declares tile `v` as `name`: at its arena offset inside a planned task, else a local.
  void DeclareTile(int depth, const ir::Value& v, const std::string& name);
  std::string Operand(const ir::Operand& o);
  std::string Operands(const std::vector<ir::Operand>& ops, size_t begin, size_t end);
  std::string Where(const ir::Stmt& s, std::string_view what);

  // ----- statements (codegen.cc)
  void Block(const ir::Block& b, int depth);
  void Stmt(const ir::Stmt& s, const ir::Block& block, int depth);
  void Yield(const ir::Block& body, const std::vector<std::string>& targets, int depth);
  void For(const ir::ForStmt& f, int depth);
  void While(const ir::WhileStmt& w, int depth);
  void AliasInPlaceAccumulators(const ir::ForStmt& f, const std::vector<std::string>& vars);
  // Carried tensors and tensor if-results: rebindable references (codegen.cc).
  void DeclareTensorRef(int depth, const ir::Value& r, const std::string& ptr,
                        const std::string& id, const Span& span);
  void BindTensorRef(int depth, const ir::Value& v, const std::string& ref);
  void If(const ir::IfStmt& s, int depth);
  void Op(const ir::OpStmt& op, int depth);
  void Collective(const ir::OpStmt& op, int depth);
  std::string ScalarExpr(const ir::OpStmt& op, const std::string& where);
  std::string TileCall(const ir::OpStmt& op, const std::string& r, const std::string& where);
  void Empty(const ir::OpStmt& op, int depth);  // tensor.empty (orchestration only)
  void View(const ir::OpStmt& op, int depth);   // tensor.slice / reshape views (orchestration)
  void Assert(const ir::OpStmt& op, int depth);
  void Incore(const ir::IncoreStmt& s, int depth);
  void Kernel(const ir::IncoreStmt& s, const analysis::IncoreInfo& info, const std::string& k);
  void Submit(const ir::IncoreStmt& s, const analysis::IncoreInfo& info, const std::string& k,
              int depth);

  // ----- tasks (tasks.cc): each incore scope becomes a kernel function plus, in the
  // orchestration, a submission with the regions it reads and writes.
  std::string TaskFlops(const ir::Block& body, const std::unordered_set<const ir::ValueNode*>& inside);
  std::string TensorId(const analysis::AccessSite& site);
  std::string TensorIdOf(const ir::Value& v);  // a parameter's index or `<name>_id`

  // ----- fusion (fusion.cc): elementwise chains become one loop over the valid region.
  // Decides which tile values are computed inline (never materialized) in `scope`.
  void PlanFusion(const ir::IncoreStmt& scope);
  // Whether `op` is emitted as a fused loop: a store or row reduction of an inlined value, or a
  // materialized elementwise result with inlined operands.
  bool FusedRoot(const ir::OpStmt& op) const;
  bool Inlined(const ir::Value& v) const { return inlined_.count(v.get()) > 0; }
  // Emits a FusedRoot as one fused loop; false when `op` is not one.
  bool EmitFusedRoot(const ir::OpStmt& op, int depth);

  // Finds, in a task's body, the K loops whose accumulator starts on a tile.full's bytes and is
  // updated in place by a matmul_acc: the full is deferred to the products (MatmulAccOnFull).
  void DeferFulls(const ir::Block& body);

  const ir::Func& func_;
  const analysis::TilePlan* plan_ = nullptr;  // the tiles of the task being emitted
  // Deferred tile.full ops, and the matmul_acc of each deferred accumulator -> its full.
  std::unordered_set<const ir::ValueNode*> deferred_fulls_;
  std::unordered_map<const ir::ValueNode*, const ir::OpStmt*> acc_on_full_;
  std::string out_;      // the orchestration (ptox_entry)
  std::string kernels_;  // task kernels, emitted before ptox_entry
  std::string* cur_ = &out_;
  int tasks_ = 0;
  std::unordered_map<const ir::ValueNode*, std::string> names_;
  // Orchestration tensors with a `<name>_id` variable: tensor.empty results, carried tensors.
  std::unordered_set<const ir::ValueNode*> tensor_ids_;
  analysis::UseMap uses_;
  analysis::ProducerMap producer_;
  std::unordered_set<const ir::ValueNode*> inlined_;
  // What a fused loop prefetches: a later fused store's lines, and the rows the loads of the
  // enclosing sequential loop read on its next trip (each load with the loop's step).
  struct Prefetches {
    const ir::OpStmt* store = nullptr;
    std::vector<std::pair<const ir::OpStmt*, int64_t>> next_loads;
  };
  std::unordered_map<const ir::OpStmt*, Prefetches> prefetches_;
  // Fused stores that stream past the caches when their tensor is large (fusion.cc).
  std::unordered_set<const ir::OpStmt*> streamable_;
  std::unordered_set<const ir::ValueNode*> views_;  // tile.load results emitted as pc::View
  int fused_loops_ = 0;
  bool uses_reduce_ = false;  // an op of kernels/cpu/reduce.h was emitted
  bool uses_matmul_ = false;  // an op of kernels/cpu/matmul.h was emitted
  bool uses_vmath_ = false;   // a fused loop calls kernels/cpu/vmath.h
};

}  // namespace ptox::targets::cpu
