// coarsen-tasks: gives tiny tasks more work. Every iteration of a parallel loop of the
// orchestration submits its incore scopes as tasks; when an iteration's tiles hold fewer than
// Capabilities::min_task_elements elements (a rope over T x 9 heads, whose tiles are one token's
// 9 x 64: T tasks of 576 elements), the loop becomes a parallel loop over chunks of K
// iterations, each chunk one task that runs its iterations in a sequential loop:
//
//   for %i = lb to ub step s parallel { pre; incore { body } }
//   ->
//   for %c = lb to ub step s*K parallel {
//     %e = min(%c + s*K, ub)
//     incore { for %i = %c to %e step s { pre; body } }
//   }
//
// A task costs microseconds to submit and run, more than a few hundred elements of work. K
// brings a chunk to the minimum, keeping 8 chunks where the trip count is static and allows.
// Only loops of scalar ops, incore scopes and such loops qualify (the nested scopes' bodies join
// the chunk's, the nested parallel loops run sequentially in it); a loop whose iteration is large
// enough, or whose work is unknown (a loop of symbolic trips inside), is left and its body
// visited. Requires: tile-level IR (after convert-tensor-to-tile, fold-constants). Complexity:
// O(statements) per loop level.
#include <algorithm>
#include <optional>

#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

using ir::OpCode;

std::optional<int64_t> Trips(const ir::ForStmt& f) {
  if (!f.lb().is_int() || !f.ub().is_int() || !f.step().is_int() || f.step().int_value() <= 0)
    return std::nullopt;
  const int64_t n = f.ub().int_value() - f.lb().int_value();
  return n <= 0 ? 0 : (n + f.step().int_value() - 1) / f.step().int_value();
}

// Tile elements a block loads and stores per run; nullopt when a loop in it has a trip count
// known only at run time.
std::optional<int64_t> Work(const ir::Block& block) {
  int64_t total = 0;
  for (const ir::StmtRef& s : block) {
    switch (s->kind()) {
      case ir::StmtKind::kOp: {
        const auto& op = ir::As<ir::OpStmt>(*s);
        const ir::OpFamily f = ir::FamilyOf(op.op());
        if (f == ir::OpFamily::kLoad) total += op.result()->type.rows() * op.result()->type.cols();
        if (f == ir::OpFamily::kStore)
          total += op.args()[0].type().rows() * op.args()[0].type().cols();
        break;
      }
      case ir::StmtKind::kFor: {
        const auto& f = ir::As<ir::ForStmt>(*s);
        std::optional<int64_t> trips = Trips(f), body = Work(f.body());
        if (!trips || !body) return std::nullopt;
        total += *trips * *body;
        break;
      }
      case ir::StmtKind::kIf: {
        const auto& i = ir::As<ir::IfStmt>(*s);
        std::optional<int64_t> a = Work(i.then_body()), b = Work(i.else_body());
        if (!a || !b) return std::nullopt;
        total += std::max(*a, *b);
        break;
      }
      case ir::StmtKind::kIncore: {
        std::optional<int64_t> body = Work(ir::As<ir::IncoreStmt>(*s).body());
        if (!body) return std::nullopt;
        total += *body;
        break;
      }
      case ir::StmtKind::kWhile: return std::nullopt;  // its trip count is known only at run time
      case ir::StmtKind::kYield: break;
      case ir::StmtKind::kCall: PTOX_ICHECK(false) << "calls are inlined first (inline-calls)"; break;
    }
  }
  return total;
}

// Whether a parallel loop's iterations may run as one task: scalar ops, incore scopes, and
// parallel loops of the same (nothing that makes tensors, which tasks cannot).
bool Chunkable(const ir::ForStmt& f) {
  if (f.loop_kind() != ir::LoopKind::kParallel || !f.iter_args().empty()) return false;
  for (const ir::StmtRef& s : f.body()) {
    switch (s->kind()) {
      case ir::StmtKind::kOp: {
        const auto& op = ir::As<ir::OpStmt>(*s);
        const bool scalar = op.results().size() == 1 && op.result()->type.is_scalar();
        if (!scalar && op.op() != OpCode::kArithAssert) return false;
        break;
      }
      case ir::StmtKind::kIncore: break;
      case ir::StmtKind::kFor:
        if (!Chunkable(ir::As<ir::ForStmt>(*s))) return false;
        break;
      case ir::StmtKind::kYield:
        if (!ir::As<ir::YieldStmt>(*s).values().empty()) return false;
        break;
      case ir::StmtKind::kCall: PTOX_ICHECK(false) << "calls are inlined first (inline-calls)"; break;
      case ir::StmtKind::kIf:
      case ir::StmtKind::kWhile: return false;
    }
  }
  return true;
}

// The statements of a chunkable loop's body as the statements of one task: incore scopes
// spliced in as they are, the (parallel, Chunkable) loops around them sequential.
ir::Block Inline(const ir::Block& block) {
  ir::Block out;
  for (const ir::StmtRef& s : block) {
    if (s->kind() == ir::StmtKind::kIncore) {
      const ir::Block& body = ir::As<ir::IncoreStmt>(*s).body();
      out.insert(out.end(), body.begin(), body.end());
    } else if (s->kind() == ir::StmtKind::kFor) {
      const auto& f = ir::As<ir::ForStmt>(*s);
      out.push_back(ir::ForStmt::Make(f.iv(), f.lb(), f.ub(), f.step(), ir::LoopKind::kSequential,
                                      {}, {}, Inline(f.body()), {}, f.span()));
    } else {
      out.push_back(s);
    }
  }
  return out;
}

class Coarsener {
 public:
  explicit Coarsener(int64_t min_elems) : min_elems_(min_elems) {}

  ir::Block Block(const ir::Block& block) {
    BlockWriter w;
    for (const ir::StmtRef& s : block) {
      if (s->kind() == ir::StmtKind::kIncore) {  // a task: nothing inside is orchestration
        w.Append(s);
        continue;
      }
      if (s->kind() == ir::StmtKind::kFor && Coarsen(ir::As<ir::ForStmt>(*s), w)) continue;
      w.Append(MapBodies(s, [this](const ir::Block& b) { return Block(b); }));
    }
    return w.Take();
  }

 private:
  // Appends the chunked form of `f` to `w`, or returns false when it stays as it is.
  bool Coarsen(const ir::ForStmt& f, BlockWriter& w) {
    if (!Chunkable(f) || !f.step().is_int()) return false;
    const std::optional<int64_t> work = Work(f.body());
    if (!work || *work >= min_elems_) return false;
    int64_t k = (min_elems_ + std::max<int64_t>(1, *work) - 1) / std::max<int64_t>(1, *work);
    if (std::optional<int64_t> trips = Trips(f)) {
      if (*trips >= 16) k = std::min(k, (*trips + 7) / 8);
      k = std::min(k, std::max<int64_t>(1, *trips));
    }
    if (k <= 1) return false;
    const ir::Operand step = ir::Operand::Int(f.step().int_value() * k);
    const ir::Value chunk = ir::MakeValue(ir::Type::Scalar(DType::kIndex), "chunk");
    BlockWriter b(f.span());
    ir::Operand end = b.Op(OpCode::kArithAdd, {chunk, step}, {}, {}, "end");
    end = b.Op(OpCode::kArithMin, {end, f.ub()}, {}, {}, "end");
    b.Append(ir::IncoreStmt::Make(
        {ir::ForStmt::Make(f.iv(), chunk, end, f.step(), ir::LoopKind::kSequential, {}, {},
                           Inline(f.body()), {}, f.span())},
        f.span()));
    w.Append(ir::ForStmt::Make(chunk, f.lb(), f.ub(), step, ir::LoopKind::kParallel, {}, {},
                               b.Take(), {}, f.span()));
    return true;
  }

  int64_t min_elems_;
};

}  // namespace

ir::Module CoarsenTasks(const ir::Module& module, const PassContext& ctx) {
  return MapFuncs(module, [&](const ir::Func& f) {
    return Coarsener(ctx.caps.min_task_elements).Block(f.body);
  });
}

}  // namespace ptox::passes
