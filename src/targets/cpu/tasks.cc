// Task outlining: every incore scope becomes a kernel function `ptox_taskN` taking its live-in
// values packed in a struct, and the orchestration submits it with the tensor regions it
// touches, so the runtime can infer dependencies and run tasks on every core. A region names its
// tensor by id: a parameter's index, or the id the host gave a tensor.empty.
//
// Regions are boxes computed when the task is submitted, one per tile.load / tile.store, as
// analysis::AccessBounds gives them (target-neutral); this file prints them as AccessDescs.
#include <fmt/format.h>

#include "analysis/incore_info.h"
#include "analysis/matmul_operands.h"
#include "ir/walk.h"
#include "passes/plan_memory.h"
#include "targets/cpu/emitter.h"
#include "targets/cpu/policy.h"

namespace ptox::targets::cpu {

// A static estimate of a task's floating-point operations: elementwise and reduction ops count
// one per tile element, matmul 2 M N K; loops inside the task multiply by their trip count when
// it is known at submission (their bounds are defined outside), else count once.
std::string Emitter::TaskFlops(const ir::Block& body,
                               const std::unordered_set<const ir::ValueNode*>& inside) {
  std::string sum = "int64_t{0}";
  auto outside = [&](const ir::Operand& o) { return !o.is_value() || !inside.count(o.value().get()); };
  for (const ir::StmtRef& s : body) {
    if (s->kind() == ir::StmtKind::kFor) {
      const auto& f = ir::As<ir::ForStmt>(*s);
      std::string inner = TaskFlops(f.body(), inside);
      if (outside(f.lb()) && outside(f.ub()) && outside(f.step())) {
        sum += fmt::format(" + pc::TripCount({}, {}, {}) * ({})", Operand(f.lb()),
                           Operand(f.ub()), Operand(f.step()), inner);
      } else {
        sum += " + (" + inner + ")";
      }
      continue;
    }
    if (s->kind() == ir::StmtKind::kWhile) {  // its trip count is unknown: counted once
      const auto& w = ir::As<ir::WhileStmt>(*s);
      sum += " + (" + TaskFlops(w.cond_body(), inside) + ") + (" + TaskFlops(w.body(), inside) + ")";
      continue;
    }
    if (s->kind() != ir::StmtKind::kOp) continue;
    const auto& op = ir::As<ir::OpStmt>(*s);
    switch (ir::FamilyOf(op.op())) {
      case ir::OpFamily::kMatmul:
      case ir::OpFamily::kMatmulAcc: {
        const ir::Type& a = op.args()[op.args().size() - 2].type();
        const ir::Type& r = op.result()->type;
        sum += fmt::format(" + {}", 2 * r.rows() * r.cols() * a.cols());
        break;
      }
      case ir::OpFamily::kBinary: case ir::OpFamily::kUnary: case ir::OpFamily::kCompare:
      case ir::OpFamily::kSelect: case ir::OpFamily::kCausalMask:
      case ir::OpFamily::kRowReduce: case ir::OpFamily::kColReduce:
      case ir::OpFamily::kRowExpand: case ir::OpFamily::kColExpand: {
        const ir::Type& a = op.args()[0].type();
        sum += fmt::format(" + {}", a.rows() * a.cols());
        break;
      }
      default: break;
    }
  }
  return sum;
}

// The runtime's id of a tensor of the orchestration: a parameter's index, or the id variable set
// where the tensor was made (tensor.empty) or last bound (a carried tensor, an if result).
std::string Emitter::TensorIdOf(const ir::Value& v) {
  for (size_t i = 0; i < func_.params.size(); ++i)
    if (func_.params[i].value.get() == v.get()) return std::to_string(i);
  PTOX_ICHECK(tensor_ids_.count(v.get()))
      << "tensor %" << v->name << " has no runtime id here (neither a parameter, a tensor.empty "
      << "nor a carried tensor)";
  return Name(v) + "_id";
}

// The runtime's id of the tensor an access touches.
std::string Emitter::TensorId(const analysis::AccessSite& site) {
  if (site.param >= 0) return std::to_string(site.param);
  return TensorIdOf(site.tensor);
}

void Emitter::Incore(const ir::IncoreStmt& s, int depth) {
  PlanFusion(s);
  views_ = analysis::InPlaceMatmulOperands(s.body());  // emitted as pc::View
  const analysis::IncoreInfo info = analysis::AnalyzeIncore(func_, s);
  const std::string k = fmt::format("ptox_task{}", tasks_++);
  std::string* orchestration = cur_;
  cur_ = &kernels_;
  Kernel(s, info, k);
  cur_ = orchestration;
  Submit(s, info, k, depth);
}

// The kernel: unpack the live-ins under their orchestration names, then the scope's body with
// its tiles at plan-memory's offsets.
void Emitter::Kernel(const ir::IncoreStmt& s, const analysis::IncoreInfo& info,
                     const std::string& k) {
  Line(0, fmt::format("struct {}_args {{", k));
  for (const ir::Value& v : info.live_ins) {
    Line(1, v->type.is_tensor() ? fmt::format("const pc::TensorArg* {};", Name(v))
                                : fmt::format("{} {};", TypeName(v->type), Name(v)));
  }
  Line(0, "};");
  Line(0, "");
  Line(0, fmt::format("int {0}(const void* p, pc::ErrorBuf* err) {{", k));
  Line(1, fmt::format("const auto& a = *static_cast<const {}_args*>(p);", k));
  Line(1, "pc::Ctx ctx(err);");
  for (const ir::Value& v : info.live_ins) {
    Line(1, v->type.is_tensor() ? fmt::format("const pc::TensorArg& {0} = *a.{0};", Name(v))
                                : fmt::format("const {1} {0} = a.{0};", Name(v), TypeName(v->type)));
  }
  // plan-memory's plan (passes::PlanScope), the arena its budget checked.
  const analysis::TilePlan plan = passes::PlanScope(s, CpuPolicy::Get());
  if (auto it = s.attrs().find("onchip_bytes"); it != s.attrs().end()) {
    PTOX_ICHECK(std::get<int64_t>(it->second) == plan.arena_bytes)
        << "plan-memory planned " << std::get<int64_t>(it->second) << " bytes, codegen "
        << plan.arena_bytes;
  }
  if (plan.arena_bytes > 0) {
    Line(1, fmt::format("char* const arena = pc::Arena(ctx, {});", plan.arena_bytes));
    Line(1, "if (arena == nullptr) return ctx.code();");
    plan_ = &plan;
    DeferFulls(s.body());
  }
  Block(s.body(), 1);
  plan_ = nullptr;
  Line(1, "return 0;");
  Line(0, "}");
  Line(0, "");
}

// The submission: the packed live-ins, one region per access (analysis::AccessBounds), the task.
void Emitter::Submit(const ir::IncoreStmt& s, const analysis::IncoreInfo& info,
                     const std::string& k, int depth) {
  std::string init;
  for (const ir::Value& v : info.live_ins) {
    init += (init.empty() ? "" : ", ") + (v->type.is_tensor() ? "&" + Name(v) : Name(v));
  }
  Line(depth, fmt::format("{{  // incore -> {}", k));
  Line(depth + 1, fmt::format("const {}_args a{{{}}};", k, init));
  Line(depth + 1, fmt::format("pc::AccessDesc acc[{}] = {{}};", std::max<size_t>(1, info.accesses.size())));
  for (size_t i = 0; i < info.accesses.size(); ++i) {
    const analysis::AccessSite& site = info.accesses[i];
    const ir::Operand& tensor = site.op->args()[site.write ? 1 : 0];
    const int r = tensor.type().rank();
    Line(depth + 1, fmt::format("acc[{}].tensor = {}; acc[{}].write = {}; acc[{}].rank = {}; "
                                "acc[{}].element_bytes = {};", i, TensorId(site), i,
                                site.write ? 1 : 0, i, r, i, DTypeBytes(tensor.type().dtype())));
    const std::vector<analysis::AccessBound> bounds = analysis::AccessBounds(info, site);
    for (int d = 0; d < r; ++d) {
      const analysis::AccessBound& b = bounds[d];
      std::string lo, hi;
      switch (b.kind) {
        case analysis::AccessBound::kAt:
          lo = Operand(b.lo);
          hi = fmt::format("{} + {}", lo, b.extent);
          break;
        case analysis::AccessBound::kLoopRange: {
          lo = Operand(b.lo);
          hi = fmt::format("({1} > {0} ? {1} - 1 + {2} : {0})", lo, Operand(b.ub), b.extent);
          if (!(b.shift.is_int() && b.shift.int_value() == 0)) {
            lo = fmt::format("{} + {}", lo, Operand(b.shift));
            hi = fmt::format("{} + {}", hi, Operand(b.shift));
          }
          break;
        }
        case analysis::AccessBound::kWholeDim:
          lo = "0";
          hi = fmt::format("{}.shape[{}]", Operand(tensor), d);
          break;
      }
      Line(depth + 1, fmt::format("acc[{0}].lo[{1}] = {2}; acc[{0}].hi[{1}] = {3};", i, d, lo, hi));
    }
  }
  std::unordered_set<const ir::ValueNode*> inside;
  ir::ForEachDefinition(s.body(), [&](const ir::Value& v) { inside.insert(v.get()); });
  // The task's name in messages and profiles: the scope and where the user wrote it.
  std::string name = fmt::format("{}.incore{}", func_.name, tasks_ - 1);
  if (s.span().known()) name += " (" + FormatSpan(s.span()) + ")";
  Line(depth + 1, fmt::format("const pc::TaskDesc task{{{}, &a, sizeof a, acc, {}, {}, {}}};", k,
                              info.accesses.size(), CLiteral(name), TaskFlops(s.body(), inside)));
  Line(depth + 1, "rt->submit(rt->ctx, &task);");
  Line(depth, "}");
}

}  // namespace ptox::targets::cpu
