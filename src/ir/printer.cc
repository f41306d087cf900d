// Printer: one statement per line, two-space indent, SSA names kept from their hints when unique.
#include "ir/printer.h"

#include <fmt/format.h>

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "ops/type_rules.h"

namespace ptox::ir {

std::string FormatFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

class Printer {
 public:
  std::string PrintFunc(const Func& f) {
    names_.clear();
    used_.clear();
    out_ += "func @" + f.name + "(";
    for (size_t i = 0; i < f.params.size(); ++i) {
      const Param& p = f.params[i];
      if (i) out_ += ", ";
      out_ += Def(p.value) + ": " + std::string(DirectionName(p.dir)) + " " +
              p.value->type.ToString();
    }
    out_ += ")";
    if (f.results.size() == 1) out_ += " -> " + f.results[0].ToString();
    for (size_t i = 0; f.results.size() > 1 && i < f.results.size(); ++i)
      out_ += (i ? ", " : " -> (") + f.results[i].ToString();
    if (f.results.size() > 1) out_ += ")";
    out_ += f.incore ? " incore {\n" : " {\n";
    PrintBlock(f.body, 1);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  // Name for a newly defined value: its hint when free, else hint_N / N.
  std::string Def(const Value& v) {
    std::string base = v->name;
    // Names print as %[A-Za-z0-9_.]+ so that the parser reads them back.
    for (char& c : base) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.';
      if (!ok) c = '_';
    }
    std::string name = base;
    for (int n = 0; name.empty() || used_.count(name); ++n)
      name = base.empty() ? std::to_string(next_id_++) : base + "_" + std::to_string(n);
    used_.insert(name);
    names_[v.get()] = name;
    return "%" + name;
  }
  std::string Use(const Value& v) {
    auto it = names_.find(v.get());
    // A use before its definition (invalid IR) still prints, so the verifier's message can show it.
    if (it == names_.end()) return "%<undefined:" + (v->name.empty() ? "?" : v->name) + ">";
    return "%" + it->second;
  }
  std::string Use(const Operand& o) {
    if (o.is_value()) return Use(o.value());
    if (o.is_int()) return std::to_string(o.int_value());
    return FormatFloat(o.float_value());
  }
  std::string Uses(const std::vector<Operand>& ops, size_t begin, size_t end) {
    std::string s;
    for (size_t i = begin; i < end; ++i) s += (i > begin ? ", " : "") + Use(ops[i]);
    return s;
  }
  std::string Defs(const std::vector<Value>& vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", " : "") + Def(vs[i]);
    return s;
  }
  void Indent(int depth) { out_.append(2 * depth, ' '); }

  void PrintBlock(const Block& block, int depth) {
    for (const StmtRef& s : block) PrintStmt(*s, depth);
  }

  void PrintStmt(const Stmt& s, int depth) {
    Indent(depth);
    switch (s.kind()) {
      case StmtKind::kOp: PrintOp(As<OpStmt>(s)); break;
      case StmtKind::kFor: PrintFor(As<ForStmt>(s), depth); break;
      case StmtKind::kIf: PrintIf(As<IfStmt>(s), depth); break;
      case StmtKind::kWhile: PrintWhile(As<WhileStmt>(s), depth); break;
      case StmtKind::kIncore:
        out_ += "incore";
        PrintAttrs(As<IncoreStmt>(s).attrs());
        out_ += " {\n";
        PrintBlock(As<IncoreStmt>(s).body(), depth + 1);
        Indent(depth);
        out_ += "}";
        break;
      case StmtKind::kCall: PrintCall(As<CallStmt>(s)); break;
      case StmtKind::kYield:
        out_ += depth == 1 ? "return" : "yield";  // depth 1: the function's own body
        if (!As<YieldStmt>(s).values().empty()) {
          const auto& v = As<YieldStmt>(s).values();
          out_ += " " + Uses(v, 0, v.size());
        }
        break;
    }
    out_ += "\n";
  }

  // " {name = value, ...}" in name order; nothing when empty.
  void PrintAttrs(const Attrs& attrs) {
    if (attrs.empty()) return;
    out_ += " {";
    bool first = true;
    for (const auto& [k, v] : attrs) {
      out_ += (first ? "" : ", ") + k + " = ";
      first = false;
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, bool>) out_ += x ? "true" : "false";
            else if constexpr (std::is_same_v<T, int64_t>) out_ += std::to_string(x);
            else if constexpr (std::is_same_v<T, double>) out_ += FormatFloat(x);
            else out_ += fmt::format("\"{}\"", x);
          },
          v);
    }
    out_ += "}";
  }

  void PrintOp(const OpStmt& op) {
    // Operands first: a result may not be named before the operands it shadows are printed.
    const auto& args = op.args();
    std::string operands;
    int idx = IndexedOperandPos(FamilyOf(op.op()));
    if (idx < 0 || static_cast<int>(args.size()) <= idx + 1) {  // also a whole tensor.store
      operands = Uses(args, 0, args.size());
    } else {
      operands = Uses(args, 0, idx);
      if (idx > 0) operands += ", ";
      operands += Use(args[idx]) + "[" + Uses(args, idx + 1, args.size()) + "]";
    }
    if (!op.results().empty()) out_ += Defs(op.results()) + " = ";
    out_ += std::string(OpName(op.op()));
    if (!operands.empty()) out_ += " " + operands;
    PrintAttrs(op.attrs());
    if (DeclaresType(op)) out_ += " : " + op.result()->type.ToString();
  }

  void PrintCall(const CallStmt& c) {
    std::string args = Uses(c.args(), 0, c.args().size());
    if (!c.results().empty()) out_ += Defs(c.results()) + " = ";
    out_ += "call @" + c.callee() + "(" + args + ")";
  }

  void PrintFor(const ForStmt& f, int depth) {
    std::string bounds = Use(f.lb()) + " to " + Use(f.ub()) + " step " + Use(f.step());
    if (!f.results().empty()) out_ += Defs(f.results()) + " = ";
    out_ += "for " + Def(f.iv()) + " = " + bounds;
    if (f.loop_kind() != LoopKind::kSequential) out_ += " " + std::string(LoopKindName(f.loop_kind()));
    if (!f.iter_args().empty()) {
      out_ += " iter(";
      for (size_t i = 0; i < f.iter_args().size(); ++i)
        out_ += (i ? ", " : "") + Def(f.iter_args()[i]) + " = " + Use(f.inits()[i]);
      out_ += ")";
    }
    out_ += " {\n";
    PrintBlock(f.body(), depth + 1);
    Indent(depth);
    out_ += "}";
  }

  // [%r, ... =] while [iter(%x = INIT, ...)] { ...; condition %c } do { ...; yield ... }
  void PrintWhile(const WhileStmt& w, int depth) {
    if (!w.results().empty()) out_ += Defs(w.results()) + " = ";
    out_ += "while";
    if (!w.iter_args().empty()) {
      out_ += " iter(";
      for (size_t i = 0; i < w.iter_args().size(); ++i)
        out_ += (i ? ", " : "") + Def(w.iter_args()[i]) + " = " + Use(w.inits()[i]);
      out_ += ")";
    }
    out_ += " {\n";
    const Block& c = w.cond_body();
    const bool closed = !c.empty() && c.back()->kind() == StmtKind::kYield;
    for (size_t i = 0; i + (closed ? 1 : 0) < c.size(); ++i) PrintStmt(*c[i], depth + 1);
    if (closed) {  // the condition block's closing yield is its `condition`
      const auto& v = As<YieldStmt>(*c.back()).values();
      Indent(depth + 1);
      out_ += "condition " + Uses(v, 0, v.size()) + "\n";
    }
    Indent(depth);
    out_ += "} do {\n";
    PrintBlock(w.body(), depth + 1);
    Indent(depth);
    out_ += "}";
  }

  void PrintIf(const IfStmt& s, int depth) {
    std::string cond = Use(s.cond());
    if (!s.results().empty()) out_ += Defs(s.results()) + " = ";
    out_ += "if " + cond;
    if (!s.results().empty()) {
      out_ += " ->";
      for (size_t i = 0; i < s.results().size(); ++i)
        out_ += (i ? ", " : " ") + s.results()[i]->type.ToString();
    }
    out_ += " {\n";
    PrintBlock(s.then_body(), depth + 1);
    Indent(depth);
    out_ += "}";
    if (!s.else_body().empty()) {
      out_ += " else {\n";
      PrintBlock(s.else_body(), depth + 1);
      Indent(depth);
      out_ += "}";
    }
  }

  std::string out_;
  std::unordered_map<const ValueNode*, std::string> names_;
  std::unordered_set<std::string> used_;
  int next_id_ = 0;
};

}  // namespace

std::string Print(const Func& func) { return Printer().PrintFunc(func); }

std::string Print(const Module& module) {
  std::string s;
  for (size_t i = 0; i < module.funcs.size(); ++i) {
    if (i) s += "\n";
    s += Print(*module.funcs[i]);
  }
  return s;
}

}  // namespace ptox::ir
