// Verifier implementation: one recursive walk with a scope stack of defined values.
//
// Checks, per statement kind:
//   op     - operands are in scope; the type rule holds and matches the recorded result type;
//            tile ops appear only inside `incore`; stores (tile.store, tensor.store) never
//            target `in` parameters, nor values a loop or an if may carry one into;
//            constant offsets into static dims are in bounds.
//   for    - bounds are integer scalars, a constant step is positive, the body ends in a yield
//            matching the loop-carried values.
//   if     - the condition is a bool scalar; both arms yield the result types.
//   while  - the condition block ends with `condition` of a bool scalar; the body ends in a
//            yield matching the loop-carried values.
//   incore - not nested in another incore; attributes are known ones.
//   yield  - only as the last statement of a for / if body, or of a function's (`return`),
//            matching the loop-carried values, the if's or the function's results.
//   call   - the callee is a function of the module that does not call back into the caller
//            (calls are inlined); arguments and results match its parameters and results; a
//            function that works on tiles is called inside an incore scope.
// Complexity: linear in the number of statements and operands.
#include "ir/verifier.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/call.h"
#include "ir/walk.h"
#include "ops/type_rules.h"

namespace ptox::ir {
namespace {

// Names the text form can read back (see the lexer): functions [A-Za-z0-9_.]+, dimension
// symbols [A-Za-z_][A-Za-z0-9_]*. IR built in C++ could hold anything.
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool IsFuncName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!IsNameChar(c) && c != '.') return false;
  return true;
}
bool IsSymbolName(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!IsNameChar(c)) return false;
  return true;
}

// The closing yield's values of a body, or none (a missing yield is reported elsewhere).
const std::vector<Operand>* YieldsOf(const Block& b) {
  if (b.empty() || b.back()->kind() != StmtKind::kYield) return nullptr;
  return &As<YieldStmt>(*b.back()).values();
}

// Values that may be an `in` parameter, each with that parameter: the parameters, and what a
// loop carries or an if yields from one. A fixpoint over every for / if, since a loop that swaps
// its carried tensors moves a parameter into another iter argument a trip later.
std::unordered_map<const ValueNode*, const ValueNode*> MayBeInputs(const Func& f) {
  std::unordered_map<const ValueNode*, const ValueNode*> in;
  for (const Param& p : f.params)
    if (p.dir == Direction::kIn && p.value->type.is_tensor()) in[p.value.get()] = p.value.get();
  auto flow = [&](const Operand& from, const Value& to) {
    if (!from.is_value() || in.count(to.get())) return false;
    auto it = in.find(from.value().get());
    if (it == in.end()) return false;
    in[to.get()] = it->second;
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    ForEachStmt(f.body, [&](const Stmt& s) {
      if (s.kind() == StmtKind::kFor) {
        const auto& l = As<ForStmt>(s);
        const auto* ys = YieldsOf(l.body());
        for (size_t i = 0; i < l.inits().size() && i < l.iter_args().size(); ++i) {
          changed |= flow(l.inits()[i], l.iter_args()[i]);
          if (ys && i < ys->size()) changed |= flow((*ys)[i], l.iter_args()[i]);
          if (i < l.results().size()) changed |= flow(Operand(l.iter_args()[i]), l.results()[i]);
        }
      } else if (s.kind() == StmtKind::kWhile) {
        const auto& l = As<WhileStmt>(s);
        const auto* ys = YieldsOf(l.body());
        for (size_t i = 0; i < l.inits().size() && i < l.iter_args().size(); ++i) {
          changed |= flow(l.inits()[i], l.iter_args()[i]);
          if (ys && i < ys->size()) changed |= flow((*ys)[i], l.iter_args()[i]);
          if (i < l.results().size()) changed |= flow(Operand(l.iter_args()[i]), l.results()[i]);
        }
      } else if (s.kind() == StmtKind::kIf) {
        const auto& c = As<IfStmt>(s);
        for (const Block* b : {&c.then_body(), &c.else_body()})
          if (const auto* ys = YieldsOf(*b))
            for (size_t i = 0; i < ys->size() && i < c.results().size(); ++i)
              changed |= flow((*ys)[i], c.results()[i]);
      }
    });
  }
  return in;
}

// What verifying a module shares between its functions: which are verified. A function another
// calls is verified at its first call, so that an error in its body also names that call.
struct ModuleCheck {
  const Module& module;
  std::set<std::string> called, verified;
  void Callee(const Func& f, const Span& call);
};

class Verifier {
 public:
  Verifier(const Func& f, ModuleCheck* module)
      : func_(f), module_(module), may_be_inputs_(MayBeInputs(f)) {}

  void Run() {
    PTOX_CHECK(IsFuncName(func_.name), func_.span)
        << "invalid function name '" << func_.name << "' (use letters, digits, '_' and '.')";
    std::set<std::string> names;
    for (const Param& p : func_.params) {
      PTOX_CHECK(func_.incore || !p.value->type.is_tile(), func_.span)
          << "parameter %" << p.value->name << " of @" << func_.name << " is a tile: a function "
          << "that takes tiles is `incore` (func @" << func_.name << "(...) incore { ... })";
      PTOX_CHECK(p.value->type.is_tensor() || p.dir == Direction::kIn, func_.span)
          << (p.value->type.is_tile() ? "tile" : "scalar") << " parameter %" << p.value->name
          << " must be 'in'";
      if (p.value->type.is_tensor()) {
        PTOX_CHECK(p.value->type.rank() >= 1 && p.value->type.rank() <= kMaxTensorRank, func_.span)
            << "parameter %" << p.value->name << " must have rank 1.." << kMaxTensorRank;
        for (const Dim& d : p.value->type.shape()) {
          PTOX_CHECK(!d.is_static() || d.size >= 0, func_.span)
              << "parameter %" << p.value->name << " has a negative dimension";
          PTOX_CHECK(d.is_static() || IsSymbolName(d.sym), func_.span)
              << "parameter %" << p.value->name << " has an invalid dimension symbol '" << d.sym
              << "' (use a letter or '_', then letters, digits and '_')";
        }
      }
      Define(p.value, func_.span);
      directions_[p.value.get()] = p.dir;
    }
    for (const Type& t : func_.results)
      PTOX_CHECK(func_.incore || !t.is_tile(), func_.span)
          << "@" << func_.name << " returns a tile: a function that returns tiles is `incore`";
    if (func_.incore) incore_depth_ = 1;  // the inside of its callers' incore scopes
    VerifyBlock(func_.body, BlockRole::kFunc, func_.results, func_.span);
  }

 private:
  enum class BlockRole { kFunc, kFor, kIf, kIncore, kWhileCond };

  void Define(const Value& v, const Span& span) {
    PTOX_CHECK(defined_.insert(v.get()).second, span)
        << "value %" << v->name << " is defined more than once";
    scope_.push_back(v.get());
    in_scope_.insert(v.get());
  }
  void Use(const Operand& o, const Span& span) {
    if (!o.is_value()) return;
    PTOX_CHECK(InScope(o.value().get()), span)
        << "use of %" << o.value()->name << " which is not defined in this scope";
  }
  bool InScope(const ValueNode* v) const { return in_scope_.count(v) != 0; }

  // Verifies a nested block; `yield_types` are what its closing yield must carry.
  void VerifyBlock(const Block& block, BlockRole role, const std::vector<Type>& yield_types,
                   const Span& owner = {}) {
    size_t mark = scope_.size();
    bool yielded = false;
    for (size_t i = 0; i < block.size(); ++i) {
      const Stmt& s = *block[i];
      if (s.kind() == StmtKind::kYield) {
        const char* what = role == BlockRole::kFunc        ? "return"
                           : role == BlockRole::kWhileCond ? "condition"
                                                           : "yield";
        PTOX_CHECK(role != BlockRole::kIncore, s.span()) << "yield outside a for / if body";
        PTOX_CHECK(i + 1 == block.size(), s.span()) << what << " must be the last statement";
        const auto& vals = As<YieldStmt>(s).values();
        if (role == BlockRole::kWhileCond) {
          PTOX_CHECK(vals.size() == 1, s.span())
              << "a while's condition block ends with one condition, got " << vals.size()
              << " values";
          Use(vals[0], s.span());
          PTOX_CHECK(vals[0].type() == Type::Scalar(DType::kBool), s.span())
              << "while condition must be a bool scalar, got " << vals[0].type().ToString();
          yielded = true;
          continue;
        }
        PTOX_CHECK(vals.size() == yield_types.size(), s.span())
            << what << " carries " << vals.size() << " values, expected " << yield_types.size();
        for (size_t k = 0; k < vals.size(); ++k) {
          Use(vals[k], s.span());
          PTOX_CHECK(vals[k].type() == yield_types[k], s.span())
              << what << " value " << k << " has type " << vals[k].type().ToString()
              << ", expected " << yield_types[k].ToString();
        }
        yielded = true;
        continue;
      }
      VerifyStmt(s);
    }
    PTOX_CHECK(yielded || (yield_types.empty() && role != BlockRole::kWhileCond), owner)
        << (role == BlockRole::kFunc        ? "function @" + func_.name + " must end with a return"
            : role == BlockRole::kWhileCond ? std::string("the condition block of a while must end "
                                                          "with 'condition %c'; it has no condition")
                                            : std::string("body must end with a yield"))
        << " of " << yield_types.size() << " values";
    PopScope(mark);
  }
  // Ends the scopes opened since `mark` (a size of scope_).
  void PopScope(size_t mark) {
    for (size_t i = mark; i < scope_.size(); ++i) in_scope_.erase(scope_[i]);
    scope_.resize(mark);
  }

  void VerifyStmt(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::kOp: VerifyOp(As<OpStmt>(s)); break;
      case StmtKind::kFor: VerifyFor(As<ForStmt>(s)); break;
      case StmtKind::kIf: VerifyIf(As<IfStmt>(s)); break;
      case StmtKind::kWhile: VerifyWhile(As<WhileStmt>(s)); break;
      case StmtKind::kIncore: {
        PTOX_CHECK(incore_depth_ == 0, s.span()) << "incore scopes cannot nest";
        for (const auto& [name, value] : As<IncoreStmt>(s).attrs()) {
          PTOX_CHECK(name == "onchip_bytes" && std::holds_alternative<int64_t>(value) &&
                         std::get<int64_t>(value) >= 0,
                     s.span())
              << "incore takes only {onchip_bytes = N} (N >= 0), got attribute '" << name << "'";
        }
        ++incore_depth_;
        scope_has_tile_ops_ = scope_has_tensor_ops_ = false;
        VerifyBlock(As<IncoreStmt>(s).body(), BlockRole::kIncore, {});
        --incore_depth_;
        break;
      }
      case StmtKind::kCall: VerifyCall(As<CallStmt>(s)); break;
      case StmtKind::kYield: PTOX_ICHECK(false) << "yield handled by VerifyBlock"; break;
    }
  }

  void VerifyCall(const CallStmt& c) {
    const Span& span = c.span();
    for (const Operand& a : c.args()) Use(a, span);
    const Func* callee = module_ ? module_->module.Find(c.callee()) : nullptr;
    PTOX_CHECK(callee != nullptr, span) << "call of unknown function @" << c.callee();
    module_->Callee(*callee, span);
    std::vector<Type> types = CallResultTypes(*callee, c.args(), span);
    PTOX_CHECK(c.results().size() == types.size(), span)
        << "@" << c.callee() << " returns " << types.size() << " values, but the call defines "
        << c.results().size();
    for (size_t i = 0; i < types.size(); ++i) {
      PTOX_CHECK(c.results()[i]->type == types[i], span)
          << "call result " << i << " has type " << c.results()[i]->type.ToString()
          << ", but @" << c.callee() << " returns " << types[i].ToString();
    }
    PTOX_CHECK(incore_depth_ > 0 || !callee->incore, span)
        << "@" << c.callee() << " is an incore function: call it inside an incore scope";
    if (callee->incore) scope_has_tile_ops_ = true;
    for (const Value& r : c.results()) Define(r, span);
  }

  void VerifyOp(const OpStmt& op) {
    const Span& span = op.span();
    for (const Operand& a : op.args()) Use(a, span);
    const OpFamily family = FamilyOf(op.op());
    std::string_view name = OpName(op.op());
    if (name.substr(0, 5) == "tile.") {
      PTOX_CHECK(incore_depth_ > 0, span) << name << " must be inside an incore scope";
      scope_has_tile_ops_ = true;
    }
    PTOX_CHECK(!IsDistributed(family) || incore_depth_ == 0, span)
        << name << " is about the ranks of a distributed run: it must be outside incore scopes";
    if (IsTensorLevel(family) && family != OpFamily::kTensorEmpty &&
        family != OpFamily::kTensorStore && incore_depth_ > 0) {
      scope_has_tensor_ops_ = true;
    }
    PTOX_CHECK(!(scope_has_tile_ops_ && scope_has_tensor_ops_), span)
        << "an incore scope holds tile ops or tensor ops (a group that convert-tensor-to-tile "
           "tiles), not both: " << name;
    std::optional<Type> declared;
    if (DeclaresType(op)) declared = op.result()->type;
    std::optional<Type> t = InferOpType(op.op(), op.args(), op.attrs(), declared, span);
    PTOX_CHECK(op.results().size() == (t ? 1u : 0u), span)
        << name << " must have " << (t ? 1 : 0) << " results";
    if (t) {
      PTOX_CHECK(*t == op.result()->type, span)
          << name << " result type " << op.result()->type.ToString() << " should be "
          << t->ToString();
    }
    if (family == OpFamily::kDistRma && op.op() != OpCode::kDistFence) {
      const Operand& win = op.args()[op.op() == OpCode::kDistPut ? 0 : 1];
      PTOX_CHECK(win.is_value() && directions_.count(win.value().get()), span)
          << name << ": the window must be a tensor parameter of the function (each rank's own "
          << "buffer of it)";
    }
    const int w = WrittenOperandPos(family);
    if (w >= 0 && static_cast<size_t>(w) < op.args().size()) {
      const Value& dst = op.args()[w].value();
      auto it = directions_.find(dst.get());
      PTOX_CHECK(it == directions_.end() || it->second != Direction::kIn, span)
          << name << " writes %" << dst->name << ", an 'in' parameter";
      auto in = may_be_inputs_.find(dst.get());
      PTOX_CHECK(in == may_be_inputs_.end(), span)
          << name << " writes %" << dst->name << ", which may be the 'in' parameter %"
          << (in == may_be_inputs_.end() ? "" : in->second->name) << " (carried into it)";
    }
    if (family == OpFamily::kLoad || family == OpFamily::kStore)
      CheckConstantBounds(op, family == OpFamily::kLoad ? 0 : 1);
    for (const Value& r : op.results()) Define(r, span);
  }

  // A constant offset at or past a static dim (or negative) can never touch valid data.
  void CheckConstantBounds(const OpStmt& op, size_t tensor_pos) {
    const Type& tensor = op.args()[tensor_pos].type();
    for (int d = 0; d < tensor.rank(); ++d) {
      const Operand& off = op.args()[tensor_pos + 1 + d];
      if (!off.is_int()) continue;
      PTOX_CHECK(off.int_value() >= 0, op.span())
          << OpName(op.op()) << " offset " << off.int_value() << " in dim " << d
          << " is negative";
      const Dim& dim = tensor.shape()[d];
      if (dim.is_static()) {
        PTOX_CHECK(off.int_value() < dim.size, op.span())
            << OpName(op.op()) << " offset " << off.int_value() << " in dim " << d
            << " is out of bounds for " << tensor.ToString();
      }
    }
  }

  void CheckIndex(const Operand& o, const Span& span, const char* what) {
    Use(o, span);
    PTOX_CHECK(o.is_int() || (o.type().is_scalar() && IsInteger(o.type().dtype())), span)
        << "for " << what << " must be an integer scalar, got " << o.type().ToString();
  }

  void VerifyFor(const ForStmt& f) {
    const Span& span = f.span();
    CheckIndex(f.lb(), span, "lower bound");
    CheckIndex(f.ub(), span, "upper bound");
    CheckIndex(f.step(), span, "step");
    PTOX_CHECK(!f.step().is_int() || f.step().int_value() > 0, span)
        << "for step must be positive, got " << f.step().int_value();
    PTOX_CHECK(f.iv()->type == Type::Scalar(DType::kIndex), span)
        << "loop variable must be an index";
    PTOX_CHECK(f.iter_args().size() == f.inits().size() &&
                   f.results().size() == f.inits().size(),
               span)
        << "for has " << f.inits().size() << " inits, " << f.iter_args().size()
        << " loop-carried values and " << f.results().size() << " results";
    std::vector<Type> types;
    for (size_t i = 0; i < f.inits().size(); ++i) {
      Use(f.inits()[i], span);
      const Type& t = f.iter_args()[i]->type;
      PTOX_CHECK(f.inits()[i].type() == t && f.results()[i]->type == t, span)
          << "loop-carried value " << i << " types differ";
      // A parallel loop promises independent iterations (its tasks may run in any order); a
      // tensor carried from one iteration to the next is the opposite promise.
      PTOX_CHECK(f.loop_kind() != LoopKind::kParallel || !t.is_tensor(), span)
          << "a parallel loop cannot carry tensor %" << f.iter_args()[i]->name << " ("
          << t.ToString() << "): its iterations must not depend on each other; make the loop "
          << "sequential";
      types.push_back(t);
    }
    size_t mark = scope_.size();
    Define(f.iv(), span);
    for (const Value& v : f.iter_args()) Define(v, span);
    VerifyBlock(f.body(), BlockRole::kFor, types, span);
    PopScope(mark);
    for (const Value& r : f.results()) Define(r, span);
  }

  void VerifyWhile(const WhileStmt& w) {
    const Span& span = w.span();
    PTOX_CHECK(w.iter_args().size() == w.inits().size() &&
                   w.results().size() == w.inits().size(),
               span)
        << "while has " << w.inits().size() << " inits, " << w.iter_args().size()
        << " loop-carried values and " << w.results().size() << " results";
    std::vector<Type> types;
    for (size_t i = 0; i < w.inits().size(); ++i) {
      Use(w.inits()[i], span);
      const Type& t = w.iter_args()[i]->type;
      PTOX_CHECK(w.inits()[i].type() == t && w.results()[i]->type == t, span)
          << "loop-carried value " << i << " types differ";
      types.push_back(t);
    }
    size_t mark = scope_.size();
    for (const Value& v : w.iter_args()) Define(v, span);
    VerifyBlock(w.cond_body(), BlockRole::kWhileCond, {}, span);
    VerifyBlock(w.body(), BlockRole::kFor, types, span);
    PopScope(mark);
    for (const Value& r : w.results()) Define(r, span);
  }

  void VerifyIf(const IfStmt& s) {
    const Span& span = s.span();
    Use(s.cond(), span);
    PTOX_CHECK(s.cond().type() == Type::Scalar(DType::kBool), span)
        << "if condition must be a bool scalar, got " << s.cond().type().ToString();
    std::vector<Type> types;
    for (const Value& r : s.results()) types.push_back(r->type);
    VerifyBlock(s.then_body(), BlockRole::kIf, types, span);
    VerifyBlock(s.else_body(), BlockRole::kIf, types, span);
    for (const Value& r : s.results()) Define(r, span);
  }

  const Func& func_;
  ModuleCheck* module_;  // where callees are found (null: a function on its own)
  std::unordered_set<const ValueNode*> defined_;
  std::vector<const ValueNode*> scope_;            // in definition order
  std::unordered_set<const ValueNode*> in_scope_;  // the same values, for O(1) lookups
  std::unordered_map<const ValueNode*, Direction> directions_;
  std::unordered_map<const ValueNode*, const ValueNode*> may_be_inputs_;
  int incore_depth_ = 0;
  bool scope_has_tile_ops_ = false, scope_has_tensor_ops_ = false;  // in the current incore
};

// Calls are inlined, so no function may reach itself through calls: reports the first cycle at
// the call that closes it.
void CheckNoRecursion(const Module& module) {
  std::map<std::string, int> state;  // 1: on the current path, 2: done
  std::vector<std::string> path;
  std::function<void(const Func&)> visit = [&](const Func& f) {
    state[f.name] = 1;
    path.push_back(f.name);
    ForEachStmt(f.body, [&](const Stmt& s) {
      if (s.kind() != StmtKind::kCall) return;
      const auto& c = As<CallStmt>(s);
      const Func* g = module.Find(c.callee());
      if (g == nullptr || state[g->name] == 2) return;
      if (state[g->name] == 1) {
        std::string cycle;
        for (auto it = std::find(path.begin(), path.end(), g->name); it != path.end(); ++it)
          cycle += "@" + *it + " -> ";
        PTOX_FAIL(c.span()) << "recursive call: " << cycle << "@" << g->name
                            << " (calls are inlined, so a function cannot reach itself)";
      }
      visit(*g);
    });
    path.pop_back();
    state[f.name] = 2;
  };
  for (const auto& f : module.funcs)
    if (state[f->name] == 0) visit(*f);
}

void ModuleCheck::Callee(const Func& f, const Span& call) {
  if (!verified.insert(f.name).second) return;
  try {
    Verifier(f, this).Run();
  } catch (const Error& e) {
    // "f.pto:3:5: error: ..." -> "f.pto:3:5 (in @g, called at f.pto:9:3): error: ...".
    std::string message = e.what();
    const size_t at = std::min(message.find(": error: "), message.find(": unsupported: "));
    if (at == std::string::npos) throw;
    const std::string site = (call.file.empty() ? "<input>:" : "") + FormatSpan(call);
    message.insert(at, " (in @" + f.name + (call.known() ? ", called at " + site : "") + ")");
    throw Error(e.code(), message);
  }
}

}  // namespace

void Verify(const Func& func) { Verifier(func, nullptr).Run(); }

void Verify(const Module& module) {
  std::set<std::string> names;
  for (const auto& f : module.funcs)
    PTOX_CHECK(names.insert(f->name).second, f->span) << "function @" << f->name
                                                      << " is defined more than once";
  CheckNoRecursion(module);  // before helpers are verified at their calls
  ModuleCheck check{module, {}, {}};
  for (const auto& f : module.funcs)
    ForEachStmt(f->body, [&](const Stmt& s) {
      if (s.kind() == StmtKind::kCall) check.called.insert(As<CallStmt>(s).callee());
    });
  for (const auto& f : module.funcs)
    if (!check.called.count(f->name) && check.verified.insert(f->name).second)
      Verifier(*f, &check).Run();
}

}  // namespace ptox::ir
