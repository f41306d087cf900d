// unroll: replaces each `for ... unroll` loop whose bounds and step are immediates and whose trip
// count is at most kMaxUnroll by that many copies of its body, the induction variable an
// immediate in each copy and the loop-carried values threaded from one copy's yield to the
// next; the loop's results become the last yield's values.
//
// Requires: verified IR (run fold-constants first so static bounds are immediates).
// Establishes: no unroll loop with a constant trip count <= kMaxUnroll remains (longer or
// symbolic ones stay loops, which every target runs sequentially). Each copy gets fresh SSA
// values. Complexity: O(statements x trip count).
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

constexpr int64_t kMaxUnroll = 64;

class Unroller {
 public:
  ir::Block Block(const ir::Block& block) {
    ir::Block out;
    for (const ir::StmtRef& s0 : block) {
      ir::StmtRef s = Substitute(s0, subst_);
      if (s->kind() == ir::StmtKind::kFor && Unroll(ir::As<ir::ForStmt>(*s), out)) continue;
      out.push_back(MapBodies(s, [this](const ir::Block& b) { return Block(b); }));
    }
    return out;
  }

 private:
  // Appends the unrolled copies of `f` to `out`; false (nothing appended) when `f` stays a loop.
  bool Unroll(const ir::ForStmt& f, ir::Block& out) {
    if (f.loop_kind() != ir::LoopKind::kUnroll || !f.lb().is_int() || !f.ub().is_int() ||
        !f.step().is_int() || f.step().int_value() <= 0)
      return false;
    const int64_t lb = f.lb().int_value(), ub = f.ub().int_value(), step = f.step().int_value();
    const int64_t trips = ub > lb ? (ub - lb + step - 1) / step : 0;
    if (trips > kMaxUnroll) return false;
    std::vector<ir::Operand> carried = f.inits();
    ir::Block body = Block(f.body());  // inner loops first
    for (int64_t k = 0; k < trips; ++k) {
      Substitution copy = subst_;
      copy[f.iv().get()] = ir::Operand::Int(lb + k * step);
      for (size_t i = 0; i < carried.size(); ++i) copy[f.iter_args()[i].get()] = carried[i];
      for (const ir::StmtRef& s : Clone(body, copy)) {
        if (s->kind() == ir::StmtKind::kYield) {
          carried = ir::As<ir::YieldStmt>(*s).values();
          continue;
        }
        out.push_back(s);
      }
    }
    for (size_t i = 0; i < f.results().size(); ++i) subst_[f.results()[i].get()] = carried[i];
    return true;
  }

  Substitution subst_;  // loop results -> the values the last copy yields
};

}  // namespace

ir::Module Unroll(const ir::Module& module, const PassContext&) {
  return MapFuncs(module, [](const ir::Func& f) { return Unroller().Block(f.body); });
}

}  // namespace ptox::passes
