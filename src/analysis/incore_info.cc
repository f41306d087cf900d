// AnalyzeIncore: one walk over the scope collecting definitions, uses and accesses.
// O(statements + operands).
#include "analysis/incore_info.h"

#include <algorithm>
#include <unordered_set>

namespace ptox::analysis {
namespace {

class Walker {
 public:
  Walker(const ir::Func& f, IncoreInfo& info) : info_(info) {
    for (size_t i = 0; i < f.params.size(); ++i) params_[f.params[i].value.get()] = static_cast<int>(i);
  }

  void Block(const ir::Block& b) {
    for (const ir::StmtRef& s : b) Stmt(*s);
  }

  // Second pass: live-ins are the used values never defined inside.
  void Finish() {
    for (const ir::Value& v : used_)
      if (!defined_.count(v.get())) info_.live_ins.push_back(v);
  }

 private:
  void Use(const ir::Operand& o) {
    if (o.is_value() && seen_.insert(o.value().get()).second) used_.push_back(o.value());
  }
  void Def(const ir::Value& v) { defined_.insert(v.get()); }
  bool Outside(const ir::Operand& o) const {
    return !o.is_value() || !defined_.count(o.value().get());
  }

  void Stmt(const ir::Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::kOp: {
        const auto& op = ir::As<ir::OpStmt>(s);
        for (const ir::Operand& a : op.args()) Use(a);
        ir::OpFamily f = ir::FamilyOf(op.op());
        if (f == ir::OpFamily::kLoad || f == ir::OpFamily::kStore) {
          const ir::Value& t = op.args()[f == ir::OpFamily::kLoad ? 0 : 1].value();
          auto it = params_.find(t.get());
          info_.accesses.push_back(
              {&op, t, it == params_.end() ? -1 : it->second, f == ir::OpFamily::kStore});
        }
        if (op.op() == ir::OpCode::kArithAdd) info_.sums[op.result().get()] = &op;
        for (const ir::Value& r : op.results()) Def(r);
        break;
      }
      case ir::StmtKind::kFor: {
        const auto& f = ir::As<ir::ForStmt>(s);
        Use(f.lb()), Use(f.ub()), Use(f.step());
        for (const ir::Operand& i : f.inits()) Use(i);
        if (Outside(f.lb()) && Outside(f.ub()) && Outside(f.step()))
          info_.outer_bounded_ivs[f.iv().get()] = &f;
        Def(f.iv());
        for (const ir::Value& v : f.iter_args()) Def(v);
        Block(f.body());
        for (const ir::Value& v : f.results()) Def(v);
        break;
      }
      case ir::StmtKind::kWhile: {  // offsets over its carried values are whole dims
        const auto& w = ir::As<ir::WhileStmt>(s);
        for (const ir::Operand& i : w.inits()) Use(i);
        for (const ir::Value& v : w.iter_args()) Def(v);
        Block(w.cond_body());
        Block(w.body());
        for (const ir::Value& v : w.results()) Def(v);
        break;
      }
      case ir::StmtKind::kIf: {
        const auto& i = ir::As<ir::IfStmt>(s);
        Use(i.cond());
        Block(i.then_body());
        Block(i.else_body());
        for (const ir::Value& v : i.results()) Def(v);
        break;
      }
      case ir::StmtKind::kIncore: Block(ir::As<ir::IncoreStmt>(s).body()); break;
      case ir::StmtKind::kYield:
        for (const ir::Operand& v : ir::As<ir::YieldStmt>(s).values()) Use(v);
        break;
      case ir::StmtKind::kCall: PTOX_ICHECK(false) << "calls are inlined first (inline-calls)"; break;
    }
  }

  IncoreInfo& info_;
  std::unordered_map<const ir::ValueNode*, int> params_;
  std::unordered_set<const ir::ValueNode*> defined_, seen_;
  std::vector<ir::Value> used_;
};

}  // namespace

std::vector<AccessBound> AccessBounds(const IncoreInfo& info, const AccessSite& site) {
  const auto& args = site.op->args();
  const size_t t = site.write ? 1 : 0;  // tile.store %tile, %tensor[...]; tile.load %tensor[...]
  const ir::Type& tile = site.write ? args[0].type() : site.op->result()->type;
  const int r = args[t].type().rank();
  auto live = [&](const ir::Operand& o) {
    return !o.is_value() || std::any_of(info.live_ins.begin(), info.live_ins.end(),
                                        [&](const ir::Value& v) { return v == o.value(); });
  };
  auto loop_of = [&](const ir::Operand& o) -> const ir::ForStmt* {
    if (!o.is_value()) return nullptr;
    auto it = info.outer_bounded_ivs.find(o.value().get());
    return it == info.outer_bounded_ivs.end() ? nullptr : it->second;
  };
  std::vector<AccessBound> out;
  for (int d = 0; d < r; ++d) {
    const ir::Operand& off = args[t + 1 + d];
    const int64_t ext = d == r - 1 ? tile.cols() : (d == r - 2 ? tile.rows() : 1);
    if (live(off)) {
      out.push_back({AccessBound::kAt, off, {}, ext});
      continue;
    }
    if (const ir::ForStmt* f = loop_of(off)) {
      out.push_back({AccessBound::kLoopRange, f->lb(), f->ub(), ext});
      continue;
    }
    // An induction variable plus a shift known outside.
    auto sum = info.sums.find(off.value().get());
    if (sum != info.sums.end()) {
      const auto& a = sum->second->args();
      for (int i = 0; i < 2 && out.size() == static_cast<size_t>(d); ++i)
        if (const ir::ForStmt* f = loop_of(a[i]); f && live(a[1 - i]))
          out.push_back({AccessBound::kLoopRange, f->lb(), f->ub(), ext, a[1 - i]});
      if (out.size() > static_cast<size_t>(d)) continue;
    }
    out.push_back({AccessBound::kWholeDim, {}, {}, ext});
  }
  return out;
}

IncoreInfo AnalyzeIncore(const ir::Func& func, const ir::IncoreStmt& scope) {
  IncoreInfo info;
  Walker w(func, info);
  w.Block(scope.body());
  w.Finish();
  return info;
}

}  // namespace ptox::analysis
