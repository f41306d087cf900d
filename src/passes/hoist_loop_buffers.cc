// hoist-loop-buffers: a sequential loop allocates the buffers its body writes whole once, before
// the loop, instead of once per trip, so a loop's memory does not grow with its trip count (a
// 30-layer decoder step holds one layer's intermediates, not 30). A buffer the body yields (the
// state the loop carries, e.g. the residual stream) is double-buffered: two buffers alternate as
// extra carried tensors, so a trip never writes the buffer its iter argument still refers to.
//
// A `tensor.empty` %e at the top level of a sequential loop's body moves before the loop when
//   - its sizes are `tensor.dim`s of tensors defined outside the loop (or of iter arguments:
//     then of their inits), each the dim's own symbol, so the hoisted op binds nothing new and
//     cannot fail where the loop would not have run;
//   - the first statement that mentions %e writes all of it before anything reads it: a
//     tensor.store of a whole value into it, or a tensor-level group whose every mention of %e
//     is such a store (what fuse-elementwise makes), so a trip never sees the previous trip's
//     contents where the program read zeros;
//   - %e leaves its trip through no yield (then one buffer serves every trip), or only as the
//     loop's yielded value at one position whose iter argument no yield passes on (then two
//     buffers alternate: %e becomes iter argument %next, starting at the hoisted %e, with the
//     spare one beside it; the yield hands over `%next, %spare -> %spare, %next`).
// Tasks stay correctly ordered: a trip's writes to a reused buffer follow the previous trip's
// reads of it by the regions they touch (write-after-read edges of the task graph).
// Parallel loops keep per-trip buffers (their trips are independent and would serialize on a
// shared one); unroll loops too (their copies are what the user asked to overlap).
//
// Requires: tensor-level groups (after fuse-elementwise, before convert-tensor-to-tile).
// Establishes: no hoistable buffer is allocated inside a sequential loop. The tensor.dims the
// hoisted sizes need move with them. Complexity: O(statements x buffers) per loop body.
#include <unordered_map>
#include <unordered_set>

#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

using ValueSet = std::unordered_set<const ir::ValueNode*>;

bool Mentions(const ir::Stmt& s, const ir::ValueNode* v) {
  bool found = false;
  auto check = [&](const ir::Operand& o) { found |= o.is_value() && o.value().get() == v; };
  ir::ForEachOperand(s, check);
  ir::ForEachBody(s, [&](const ir::Block& b) {
    ir::ForEachStmt(b, [&](const ir::Stmt& t) { ir::ForEachOperand(t, check); });
  });
  return found;
}

// `tensor.store %x, %e` of a whole value (no offsets), %x not %e itself.
bool StoresWhole(const ir::OpStmt& op, const ir::ValueNode* e) {
  const auto& a = op.args();
  return op.op() == ir::OpCode::kTensorStore && a.size() == 2 && a[1].value().get() == e &&
         !(a[0].is_value() && a[0].value().get() == e);
}

// Whether statement `s` writes all of %e and reads none of it first.
bool WritesWhole(const ir::Stmt& s, const ir::ValueNode* e) {
  if (s.kind() == ir::StmtKind::kOp) return StoresWhole(ir::As<ir::OpStmt>(s), e);
  if (s.kind() != ir::StmtKind::kIncore) return false;
  bool ok = true, stored = false;
  for (const ir::StmtRef& t : ir::As<ir::IncoreStmt>(s).body()) {
    if (!Mentions(*t, e)) continue;
    const bool store = t->kind() == ir::StmtKind::kOp && StoresWhole(ir::As<ir::OpStmt>(*t), e);
    ok &= store;
    stored |= store;
  }
  return ok && stored;
}

// How often `v` is yielded in `b` and the blocks nested in it.
int YieldUses(const ir::Block& b, const ir::ValueNode* v) {
  int n = 0;
  ir::ForEachStmt(b, [&](const ir::Stmt& s) {
    if (s.kind() != ir::StmtKind::kYield) return;
    for (const ir::Operand& o : ir::As<ir::YieldStmt>(s).values())
      n += o.is_value() && o.value().get() == v;
  });
  return n;
}

// The yield closing a loop body, or null (a loop that carries nothing may have none).
const ir::YieldStmt* FinalYield(const ir::Block& body) {
  if (body.empty() || body.back()->kind() != ir::StmtKind::kYield) return nullptr;
  return &ir::As<ir::YieldStmt>(*body.back());
}

class Hoister {
 public:
  explicit Hoister(const ir::Func& f) {
    ir::ForEachOp(f.body, [&](const ir::OpStmt& op) {
      for (const ir::Value& r : op.results()) producer_[r.get()] = &op;
    });
  }

  // Nested loops first, so an inner loop's hoisted buffers are plain statements of its parent.
  ir::Block Block(const ir::Block& block) {
    return HoistFromSequentialLoops(
        block, [this](const ir::StmtRef& loop, ir::Block& out) { Hoist(loop, out); });
  }

 private:
  // What moves out of one loop: ops (tensor.dim, tensor.empty) in body order, and the buffers
  // that alternate (body value -> position of the yield that carries it).
  struct Plan {
    ValueSet moved;
    ir::Block before;
    std::vector<std::pair<const ir::OpStmt*, size_t>> alternate;
  };

  void Hoist(const ir::StmtRef& loop, ir::Block& out);
  ir::StmtRef Rebuild(const ir::ForStmt& f, Plan& plan);
  bool Hoistable(const ir::ForStmt& f, size_t at, Plan& plan);
  bool SizesFromOutside(const ir::ForStmt& f, const ir::OpStmt& empty, Plan& plan);

  std::unordered_map<const ir::ValueNode*, const ir::OpStmt*> producer_;
  ValueSet inside_;  // values the loop being hoisted from defines (iv and iter args included)
};

// Each size of `empty` is dim k of a tensor known before the loop, whose dim k is the symbol the
// size binds; a tensor.dim inside the body moves out (of an iter argument: of its init).
bool Hoister::SizesFromOutside(const ir::ForStmt& f, const ir::OpStmt& empty, Plan& plan) {
  size_t next = 0;
  std::vector<ir::StmtRef> dims;
  for (const ir::Dim& d : empty.result()->type.shape()) {
    if (d.is_static()) continue;
    const ir::Operand& size = empty.args()[next++];
    auto p = size.is_value() ? producer_.find(size.value().get()) : producer_.end();
    if (p == producer_.end() || p->second->op() != ir::OpCode::kTensorDim) return false;
    const ir::OpStmt& dim = *p->second;
    ir::Operand tensor = dim.args()[0];
    for (size_t i = 0; i < f.iter_args().size(); ++i)
      if (tensor.value() == f.iter_args()[i]) tensor = f.inits()[i];
    const ir::Dim& of = tensor.type().shape()[dim.args()[1].int_value()];
    if (of.is_static() || of.sym != d.sym || inside_.count(tensor.value().get())) return false;
    if (inside_.count(dim.result().get()) && !plan.moved.count(dim.result().get()))
      dims.push_back(ir::OpStmt::Make(ir::OpCode::kTensorDim, {tensor, dim.args()[1]}, {},
                                      dim.results(), dim.span()));
  }
  for (ir::StmtRef& s : dims) {
    const auto& op = ir::As<ir::OpStmt>(*s);
    plan.moved.insert(op.result().get());
    producer_[op.result().get()] = &op;  // an outer loop sees the op as it now reads
    plan.before.push_back(std::move(s));
  }
  return true;
}

// Whether the tensor.empty at body[at] can move out; records it (and its sizes) in `plan`.
bool Hoister::Hoistable(const ir::ForStmt& f, size_t at, Plan& plan) {
  const ir::Block& body = f.body();
  const auto& empty = ir::As<ir::OpStmt>(*body[at]);
  const ir::ValueNode* e = empty.result().get();
  size_t first = at + 1;
  while (first < body.size() && !Mentions(*body[first], e)) ++first;
  if (first == body.size() || !WritesWhole(*body[first], e)) return false;
  static const std::vector<ir::Operand> kNone;
  const ir::YieldStmt* yield = FinalYield(body);
  const auto& yields = yield ? yield->values() : kNone;
  size_t position = yields.size();
  for (size_t i = 0; i < yields.size(); ++i)
    if (yields[i].is_value() && yields[i].value().get() == e) position = i;
  const int yielded = YieldUses(body, e);
  if (yielded > 1) return false;
  if (yielded == 1 &&  // carried out: the trip's iter argument at that position must not
      (position == yields.size() ||  // be passed on to another (it would outlive a trip)
       YieldUses(body, f.iter_args()[position].get()) > 0))
    return false;
  if (!SizesFromOutside(f, empty, plan)) return false;
  plan.moved.insert(e);
  plan.before.push_back(body[at]);
  if (yielded == 1) plan.alternate.emplace_back(&empty, position);
  return true;
}

// Appends the loop, and before it what moves out of it, to `out`.
void Hoister::Hoist(const ir::StmtRef& loop, ir::Block& out) {
  const auto& f = ir::As<ir::ForStmt>(*loop);
  const ir::Block& body = f.body();
  inside_.clear();
  ir::ForEachDefinition(body, [&](const ir::Value& v) { inside_.insert(v.get()); });
  inside_.insert(f.iv().get());
  for (const ir::Value& v : f.iter_args()) inside_.insert(v.get());
  Plan plan;
  for (size_t i = 0; i < body.size(); ++i)
    if (body[i]->kind() == ir::StmtKind::kOp &&
        ir::As<ir::OpStmt>(*body[i]).op() == ir::OpCode::kTensorEmpty)
      Hoistable(f, i, plan);
  if (plan.before.empty()) return out.push_back(loop);
  ir::StmtRef rebuilt = Rebuild(f, plan);
  for (ir::StmtRef& s : plan.before) out.push_back(std::move(s));
  out.push_back(std::move(rebuilt));
}

// The loop without what moved out; each alternating buffer becomes two carried tensors (its
// second buffer joins plan.before).
ir::StmtRef Hoister::Rebuild(const ir::ForStmt& f, Plan& plan) {
  const ir::Block& body = f.body();
  const ir::YieldStmt* yield = FinalYield(body);
  std::vector<ir::Value> iter_args = f.iter_args(), results = f.results();
  std::vector<ir::Operand> inits = f.inits();
  std::vector<ir::Operand> yields = yield ? yield->values() : std::vector<ir::Operand>{};
  Substitution subst;
  for (const auto& [empty, position] : plan.alternate) {
    const ir::Value& e = empty->result();
    ir::Value next = ir::MakeValue(e->type, "next"), spare = ir::MakeValue(e->type, "spare");
    ir::Value spare_buf = ir::MakeValue(e->type, "spare");
    plan.before.push_back(ir::OpStmt::Make(ir::OpCode::kTensorEmpty, empty->args(), empty->attrs(),
                                           {spare_buf}, empty->span()));
    iter_args.insert(iter_args.end(), {next, spare});
    inits.insert(inits.end(), {e, spare_buf});
    results.insert(results.end(),
                   {ir::MakeValue(e->type, "next_out"), ir::MakeValue(e->type, "spare_out")});
    subst[e.get()] = next;
    yields[position] = next;
    yields.insert(yields.end(), {spare, next});  // this trip's spare is the next trip's target
  }
  ir::Block kept;
  for (const ir::StmtRef& s : body) {
    if (s->kind() == ir::StmtKind::kYield) continue;
    const bool moved = s->kind() == ir::StmtKind::kOp &&
                       !ir::As<ir::OpStmt>(*s).results().empty() &&
                       plan.moved.count(ir::As<ir::OpStmt>(*s).result().get());
    if (!moved) kept.push_back(Substitute(s, subst));
  }
  if (yield) kept.push_back(ir::YieldStmt::Make(yields, yield->span()));
  return ir::ForStmt::Make(f.iv(), f.lb(), f.ub(), f.step(), f.loop_kind(), iter_args, inits,
                           std::move(kept), results, f.span());
}

}  // namespace

ir::Module HoistLoopBuffers(const ir::Module& module, const PassContext&) {
  return MapFuncs(module, [](const ir::Func& f) { return Hoister(f).Block(f.body); });
}

}  // namespace ptox::passes
