// inline-calls: replaces every call by a copy of the callee's body (its own calls inlined first),
// the parameters the call's arguments and the call's results the values the callee returns. The
// copy's tensor types are in the caller's dims (the callee's symbols bound at the call), and each
// copied statement keeps its own position and records the call, so that errors and run-time
// messages name both. The functions other functions call are then removed: they live on in
// their callers, and what is left are the program's entries.
//
// Requires: verified IR (no recursion). Establishes: no call remains; every value is fresh per
// copy (SSA). Complexity: the size of the module after inlining.
#include <map>
#include <set>

#include "ir/call.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes {
namespace {

// `span` (of code copied out of @callee) with the call appended to its chain of call sites.
Span InlinedAt(const Span& span, const std::string& callee, const Span& call) {
  Span out = span;
  if (span.inlined_at == nullptr) {
    out.inlined_at = std::make_shared<const CallSite>(CallSite{callee, call});
  } else {
    out.inlined_at = std::make_shared<const CallSite>(
        CallSite{span.inlined_at->callee, InlinedAt(span.inlined_at->span, callee, call)});
  }
  return out;
}

class Inliner {
 public:
  explicit Inliner(const ir::Module& module) : module_(module) {}

  // `f`'s body without calls (each function's is computed once).
  const ir::Block& Body(const ir::Func& f) {
    auto it = bodies_.find(&f);
    if (it != bodies_.end()) return it->second;
    Substitution subst;
    ir::Block body = Block(f.body, subst);
    return bodies_.emplace(&f, std::move(body)).first->second;
  }

 private:
  ir::Block Block(const ir::Block& block, Substitution& subst) {
    ir::Block out;
    for (const ir::StmtRef& s0 : block) {
      ir::StmtRef s = Substitute(s0, subst);
      if (s->kind() == ir::StmtKind::kCall) {
        Inline(ir::As<ir::CallStmt>(*s), out, subst);
        continue;
      }
      out.push_back(MapBodies(s, [&](const ir::Block& b) { return Block(b, subst); }));
    }
    return out;
  }

  // Appends the copy of the callee's body to `out`; maps the call's results in `subst`.
  void Inline(const ir::CallStmt& call, ir::Block& out, Substitution& subst) {
    const ir::Func* callee = module_.Find(call.callee());
    PTOX_ICHECK(callee != nullptr) << "call of unknown @" << call.callee() << " (unverified IR)";
    const ir::DimBinding dims = ir::BindCall(*callee, call.args(), call.span());
    Substitution params;
    for (size_t i = 0; i < callee->params.size(); ++i)
      params[callee->params[i].value.get()] = call.args()[i];
    CloneMap map;
    map.type = [&](const ir::Type& t) { return ir::BindType(t, dims, callee->name); };
    map.span = [&](const Span& s) { return InlinedAt(s, callee->name, call.span()); };
    ir::Block copy = Clone(Body(*callee), params, map);
    std::vector<ir::Operand> returned;
    if (!copy.empty() && copy.back()->kind() == ir::StmtKind::kYield) {
      returned = ir::As<ir::YieldStmt>(*copy.back()).values();
      copy.pop_back();
    }
    PTOX_ICHECK(returned.size() == call.results().size()) << "@" << callee->name << " returns "
                                                          << returned.size() << " values";
    for (size_t i = 0; i < returned.size(); ++i) subst[call.results()[i].get()] = returned[i];
    for (ir::StmtRef& s : copy) out.push_back(std::move(s));
  }

  const ir::Module& module_;
  std::map<const ir::Func*, ir::Block> bodies_;
};

}  // namespace

ir::Module InlineCalls(const ir::Module& module, const PassContext&) {
  std::set<std::string> called;
  for (const ir::FuncRef& f : module.funcs)
    ir::ForEachStmt(f->body, [&](const ir::Stmt& s) {
      if (s.kind() == ir::StmtKind::kCall) called.insert(ir::As<ir::CallStmt>(s).callee());
    });
  if (called.empty()) return module;
  Inliner inliner(module);
  ir::Module out;
  for (const ir::FuncRef& f : module.funcs) {
    if (called.count(f->name)) continue;
    ir::Func g = *f;
    g.body = inliner.Body(*f);
    out.funcs.push_back(std::make_shared<const ir::Func>(std::move(g)));
  }
  return out;
}

}  // namespace ptox::passes
