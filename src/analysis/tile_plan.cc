// Tile liveness and arena placement (see tile_plan.h). Statements are numbered in pre-order; a
// value's interval runs from its definition to its last use, extended to the end of the
// outermost loop that uses it without defining it. Buffers are placed first-fit by offset in
// order of definition; a buffer is free again only after its value's last use (no in-place
// reuse: an op may read an operand while it writes its result), except where a value takes over
// another's buffer: a loop's carried tile starts on the bytes of its init when nothing else reads
// the init (the zero of an accumulator), and a matmul_acc yielded as the carried tile it
// accumulates into updates that tile in place.
#include "analysis/tile_plan.h"

#include "ir/walk.h"

#include "analysis/uses.h"

#include <algorithm>
#include <map>
#include <vector>

namespace ptox::analysis {

namespace {

struct Interval {
  const ir::ValueNode* value;
  int64_t bytes;
  int64_t start, end;
};

class Liveness {
 public:
  Liveness(const ir::Block& body, const TileBytesFn& tile_bytes,
           const std::unordered_set<const ir::ValueNode*>* inlined)
      : tile_bytes_(tile_bytes), inlined_(inlined) {
    CollectUses(body, uses_, &producers_);
    Number(body);
    Walk(body);
  }
  // Values that write another's buffer in place -> that value.
  const std::unordered_map<const ir::ValueNode*, const ir::ValueNode*>& TakenOver() const {
    return taken_over_;
  }
  std::vector<Interval> Intervals() const {
    std::vector<Interval> out;
    for (const auto& [v, iv] : live_) out.push_back(iv);
    std::sort(out.begin(), out.end(), [](const Interval& a, const Interval& b) {
      return a.start != b.start ? a.start < b.start : a.value < b.value;
    });
    return out;
  }

 private:
  // Pre-order positions; for / if statements also record the last position inside them.
  void Number(const ir::Block& block) {
    for (const ir::StmtRef& s : block) {
      const int64_t at = next_++;
      ir::ForEachBody(*s, [&](const ir::Block& b) { Number(b); });
      span_[s.get()] = {at, next_ - 1};
    }
  }
  void Walk(const ir::Block& block) {
    for (const ir::StmtRef& s : block) Stmt(*s);
  }
  void Def(const ir::Value& v, int64_t at) {
    if (v->type.is_tile() && !(inlined_ && inlined_->count(v.get())) && !taken_over_.count(v.get()))
      live_[v.get()] = {v.get(), tile_bytes_(v->type), at, at};
  }
  void Use(const ir::Operand& o, int64_t at) {
    if (!o.is_value()) return;
    const ir::ValueNode* v = o.value().get();
    if (auto in = operands_.find(v); in != operands_.end()) {  // computed here: reads these
      for (const ir::Operand& a : *in->second) Use(a, at);
      return;
    }
    if (auto a = alias_.find(v); a != alias_.end()) v = a->second;
    auto it = live_.find(v);
    if (it == live_.end()) return;  // not a tile of this scope
    int64_t end = at;
    for (const auto& [start, last] : nests_) {  // outermost first
      if (it->second.start < start) {
        end = std::max(end, last);
        break;
      }
    }
    it->second.end = std::max(it->second.end, end);
  }
  // v writes the buffer of `owner` (itself possibly taken over) instead of its own.
  void TakeOver(const ir::ValueNode* v, const ir::ValueNode* owner) {
    if (auto a = alias_.find(owner); a != alias_.end()) owner = a->second;
    taken_over_[v] = owner;
    alias_[v] = owner;
  }
  // The matmul_acc of loop f's body that is yielded as carried tile i and accumulates into that
  // tile (its only use): it updates the carried buffer in place (the K loop of a matmul).
  const ir::ValueNode* AccumulatesInPlace(const ir::ForStmt& f, size_t i) {
    if (f.body().empty() || f.body().back()->kind() != ir::StmtKind::kYield) return nullptr;
    const ir::Operand& y = ir::As<ir::YieldStmt>(*f.body().back()).values()[i];
    if (!y.is_value() || !f.iter_args()[i]->type.is_tile()) return nullptr;
    auto p = producers_.find(y.value().get());
    if (p == producers_.end() || ir::FamilyOf(p->second->op()) != ir::OpFamily::kMatmulAcc)
      return nullptr;
    const ir::Operand& acc = p->second->args()[0];
    bool in_body = false;
    for (const ir::StmtRef& st : f.body()) in_body |= st.get() == p->second;
    if (!in_body || !acc.is_value() || acc.value() != f.iter_args()[i] ||
        uses_[f.iter_args()[i].get()].size() != 1)
      return nullptr;
    return y.value().get();
  }
  // The init of a loop result when it is a placed tile of the same type used nowhere else,
  // made inside the loops around this one (else their next iteration needs it again).
  const ir::ValueNode* InitUsedOnlyThere(const ir::Operand& init, const ir::Value& result) {
    if (!init.is_value() || !(init.value()->type == result->type)) return nullptr;
    const ir::ValueNode* v = init.value().get();
    auto it = live_.find(v);
    if (it == live_.end() || uses_[v].size() != 1 ||
        (!nests_.empty() && it->second.start < nests_.back().first))
      return nullptr;
    return v;
  }
  void Stmt(const ir::Stmt& s) {
    const auto [at, last] = span_.at(&s);
    switch (s.kind()) {
      case ir::StmtKind::kOp: {
        const auto& op = ir::As<ir::OpStmt>(s);
        if (!op.results().empty() && inlined_ && inlined_->count(op.result().get())) {
          operands_[op.result().get()] = &op.args();
          break;
        }
        for (const auto& a : op.args()) Use(a, at);
        for (const auto& r : op.results()) Def(r, at);
        break;
      }
      case ir::StmtKind::kFor: {
        const auto& f = ir::As<ir::ForStmt>(s);
        for (const auto& o : f.inits()) Use(o, at);
        for (size_t i = 0; i < f.results().size(); ++i) {
          const ir::ValueNode* buf = f.results()[i].get();
          if (const ir::ValueNode* init = InitUsedOnlyThere(f.inits()[i], f.results()[i]))
            TakeOver(buf, init), buf = init;
          else
            Def(f.results()[i], at);
          alias_[f.iter_args()[i].get()] = buf;
          if (const ir::ValueNode* acc = AccumulatesInPlace(f, i))
            TakeOver(acc, f.results()[i].get());
        }
        nests_.push_back({at, last});
        Walk(f.body());
        nests_.pop_back();
        // The carried tile is read by every iteration.
        for (const auto& r : f.results()) Use(r, last);
        break;
      }
      case ir::StmtKind::kWhile: {  // as a for, without taking over buffers
        const auto& w = ir::As<ir::WhileStmt>(s);
        for (const auto& o : w.inits()) Use(o, at);
        for (size_t i = 0; i < w.results().size(); ++i) {
          Def(w.results()[i], at);
          alias_[w.iter_args()[i].get()] = w.results()[i].get();
        }
        nests_.push_back({at, last});
        Walk(w.cond_body());
        Walk(w.body());
        nests_.pop_back();
        for (const auto& r : w.results()) Use(r, last);  // read by every trip
        break;
      }
      case ir::StmtKind::kIf: {
        const auto& i = ir::As<ir::IfStmt>(s);
        for (const auto& r : i.results()) Def(r, at);
        nests_.push_back({at, last});
        Walk(i.then_body());
        Walk(i.else_body());
        nests_.pop_back();
        for (const auto& r : i.results()) Use(r, last);  // written by the arms' yields
        break;
      }
      case ir::StmtKind::kYield:
        for (const auto& v : ir::As<ir::YieldStmt>(s).values()) Use(v, at);
        break;
      case ir::StmtKind::kCall: PTOX_ICHECK(false) << "calls are inlined first (inline-calls)"; break;
      case ir::StmtKind::kIncore: Walk(ir::As<ir::IncoreStmt>(s).body()); break;
    }
  }

  const TileBytesFn& tile_bytes_;
  const std::unordered_set<const ir::ValueNode*>* inlined_;
  UseMap uses_;
  ProducerMap producers_;
  std::unordered_map<const ir::ValueNode*, const ir::ValueNode*> taken_over_;
  std::map<const ir::ValueNode*, const std::vector<ir::Operand>*> operands_;  // of inlined ops
  int64_t next_ = 0;
  std::map<const ir::Stmt*, std::pair<int64_t, int64_t>> span_;
  std::map<const ir::ValueNode*, Interval> live_;
  std::map<const ir::ValueNode*, const ir::ValueNode*> alias_;
  std::vector<std::pair<int64_t, int64_t>> nests_;  // enclosing for / if: [first, last]
};

}  // namespace

TilePlan PlanTiles(const ir::IncoreStmt& scope, const TileBytesFn& tile_bytes,
                   const std::unordered_set<const ir::ValueNode*>* inlined) {
  Liveness live(scope.body(), tile_bytes, inlined);
  TilePlan plan;
  std::vector<Interval> active;  // placed and still live, by offset
  std::vector<int64_t> offsets;
  for (const Interval& iv : live.Intervals()) {
    std::vector<std::pair<int64_t, int64_t>> used;  // [offset, offset + bytes) of live buffers
    int64_t live_bytes = iv.bytes;
    for (const Interval& a : active)
      if (a.end >= iv.start) {
        used.push_back({plan.offset[a.value], plan.offset[a.value] + a.bytes});
        live_bytes += a.bytes;
      }
    std::sort(used.begin(), used.end());
    int64_t at = 0;
    for (const auto& [lo, hi] : used) {
      if (lo - at >= iv.bytes) break;
      at = std::max(at, hi);
    }
    plan.offset[iv.value] = at;
    plan.arena_bytes = std::max(plan.arena_bytes, at + iv.bytes);
    plan.peak_bytes = std::max(plan.peak_bytes, live_bytes);
    plan.total_bytes += iv.bytes;
    active.push_back(iv);
  }
  for (const auto& [v, owner] : live.TakenOver()) {
    plan.offset[v] = plan.offset.at(owner);
    plan.takes_over[v] = owner;
  }
  return plan;
}

}  // namespace ptox::analysis
