// Printing and dead-code elimination over the fuzzer's program model (program_model.h).
#include "program_model.h"

#include <algorithm>

namespace ptox::fuzz {

int Program::AddDim(int64_t size, std::string sym) {
  dims.push_back({size, std::move(sym)});
  return static_cast<int>(dims.size()) - 1;
}

int Program::AddValue(Type type, const std::string& prefix) {
  values.push_back({prefix + std::to_string(values.size()), std::move(type), ""});
  return static_cast<int>(values.size()) - 1;
}

int Program::AddLiteral(const std::string& text, DType dtype) {
  values.push_back({"", Type{Kind::kLiteral, dtype, {}}, text});
  return static_cast<int>(values.size()) - 1;
}

int Program::AddParam(Type type, ParamDirection dir, const std::string& prefix,
                      std::string scalar) {
  int v = AddValue(std::move(type), prefix);
  params.push_back({v, dir, std::move(scalar)});
  return v;
}

Type Program::TensorType(std::vector<int> d, DType dtype) const {
  return Type{Kind::kTensor, dtype, std::move(d)};
}

Type Program::TileType(int rows, int cols, DType dtype) const {
  return Type{Kind::kTile, dtype, {rows, cols}};
}

std::string Program::TypeText(const Type& t) const {
  std::string dt(DTypeName(t.dtype));
  if (t.kind == Kind::kScalar || t.kind == Kind::kLiteral) return dt;
  std::string s = t.kind == Kind::kTensor ? "tensor<" : "tile<";
  for (int d : t.dims) {
    const DimVar& dv = dims[d];
    s += (dv.sym.empty() ? std::to_string(dv.size) : "{" + dv.sym + "}") + "x";
  }
  return s + dt + ">";
}

std::string Program::Name(int v) const {
  const Value& val = values[v];
  return val.type.kind == Kind::kLiteral ? val.literal : "%" + val.name;
}

std::string Program::PrintOp(const Stmt& s) const {
  std::string out = s.result >= 0 ? Name(s.result) + " = " : "";
  const std::string& t = s.text;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if ((c != '@' && c != '#' && c != '&') || i + 1 >= t.size() || !isdigit(t[i + 1])) {
      out += c;
      continue;
    }
    size_t j = i + 1;
    int n = 0;
    while (j < t.size() && isdigit(t[j])) n = n * 10 + (t[j++] - '0');
    if (c == '@') out += Name(s.args[n]);
    if (c == '#') out += TypeText(s.types[n]);
    if (c == '&') out += std::to_string(dims[n].size);
    i = j - 1;
  }
  return out;
}

void Program::PrintBlock(const std::vector<Stmt>& block, int indent, std::string& out) const {
  const std::string pad(indent, ' ');
  for (const Stmt& s : block) {
    if (s.form == Stmt::Form::kOp) {
      out += pad + PrintOp(s) + "\n";
      continue;
    }
    if (s.form == Stmt::Form::kIncore) {
      out += pad + "incore {\n";
      PrintBlock(s.body, indent + 2, out);
      out += pad + "}\n";
      continue;
    }
    const std::string ub =
        s.ub >= 0 ? Name(s.ub) : std::to_string(dims[s.ub_dim].size);
    if (s.as_while && s.loop_kind.empty()) {
      const std::string iv = Name(s.iv);
      std::string head = pad + iv + "_wr";
      for (int r : s.results) head += ", " + Name(r);
      head += " = while iter(" + iv + " = 0";
      for (size_t k = 0; k < s.carried.size(); ++k)
        head += ", " + Name(s.carried[k]) + " = " + Name(s.inits[k]);
      out += head + ") {\n";
      out += pad + "  " + iv + "_wc = arith.lt " + iv + ", " + ub + "\n";
      out += pad + "  condition " + iv + "_wc\n";
      out += pad + "} do {\n";
      PrintBlock(s.body, indent + 2, out);
      out += pad + "  " + iv + "_wn = arith.add " + iv + ", " +
             std::to_string(dims[s.step_dim].size) + "\n";
      out += pad + "  yield " + iv + "_wn";
      for (int y : s.yields) out += ", " + Name(y);
      out += "\n" + pad + "}\n";
      continue;
    }
    std::string head = pad;
    for (size_t k = 0; k < s.results.size(); ++k)
      head += (k ? ", " : "") + Name(s.results[k]) + (k + 1 == s.results.size() ? " = " : "");
    head += "for " + Name(s.iv) + " = 0 to " + ub + " step " +
            std::to_string(dims[s.step_dim].size);
    if (!s.loop_kind.empty()) head += " " + s.loop_kind;
    if (!s.carried.empty()) {
      head += " iter(";
      for (size_t k = 0; k < s.carried.size(); ++k)
        head += (k ? ", " : "") + Name(s.carried[k]) + " = " + Name(s.inits[k]);
      head += ")";
    }
    out += head + " {\n";
    PrintBlock(s.body, indent + 2, out);
    if (!s.yields.empty()) {
      out += pad + "  yield ";
      for (size_t k = 0; k < s.yields.size(); ++k) out += (k ? ", " : "") + Name(s.yields[k]);
      out += "\n";
    }
    out += pad + "}\n";
  }
}

std::string Program::Text(const std::string& header) const {
  std::string out = header + "func @fuzz(";
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    const char* dir = p.dir == ParamDirection::kIn    ? "in"
                      : p.dir == ParamDirection::kOut ? "out"
                                                      : "inout";
    out += (i ? ", " : "") + Name(p.value) + ": " + dir + " " + TypeText(values[p.value].type);
  }
  out += ") {\n";
  PrintBlock(body, 2, out);
  return out + "}\n";
}

std::map<std::string, int64_t> Program::Symbols() const {
  std::map<std::string, int64_t> out;
  for (const Param& p : params)
    for (int d : values[p.value].type.dims)
      if (!dims[d].sym.empty()) out[dims[d].sym] = dims[d].size;
  return out;
}

std::map<std::string, std::string> Program::Scalars() const {
  std::map<std::string, std::string> out;
  for (const Param& p : params)
    if (values[p.value].type.kind == Kind::kScalar) out[values[p.value].name] = p.scalar;
  return out;
}

namespace {

void CollectOps(const std::vector<Stmt>& block, std::vector<std::string>& out) {
  for (const Stmt& s : block) {
    if (s.form == Stmt::Form::kOp) {
      out.push_back(s.text.substr(0, s.text.find(' ')));
    } else {
      if (s.form == Stmt::Form::kFor) out.push_back(s.as_while ? "while" : "for");
      CollectOps(s.body, out);
    }
  }
}

// Visits every value use of a statement tree (args, loop bounds, inits, yields).
template <typename F>
void ForEachUse(std::vector<Stmt>& block, F&& f) {
  for (Stmt& s : block) {
    for (int& a : s.args) f(a);
    if (s.form != Stmt::Form::kFor) {
      ForEachUse(s.body, f);
      continue;
    }
    f(s.ub);
    for (int& a : s.inits) f(a);
    for (int& a : s.yields) f(a);
    ForEachUse(s.body, f);
  }
}

// One backward pass over `block`: drops dead statements; `used` holds the values that later
// statements (or an enclosing loop's yields) use. Returns whether the block keeps an effect.
bool Sweep(std::vector<Stmt>& block, std::set<int>& used, const std::set<int>& keep,
           bool& changed) {
  bool effect = false;
  for (size_t i = block.size(); i-- > 0;) {
    Stmt& s = block[i];
    bool live = s.effect || (s.result >= 0 && (used.count(s.result) || keep.count(s.result)));
    if (s.form == Stmt::Form::kFor) {
      for (int r : s.results) live = live || used.count(r) > 0;
      std::set<int> inner = used;
      inner.insert(s.yields.begin(), s.yields.end());
      const bool body_effect = Sweep(s.body, inner, keep, changed);
      live = live || body_effect;
      if (live) used.insert(inner.begin(), inner.end());
      if (live) used.insert(s.inits.begin(), s.inits.end());
      if (live && s.ub >= 0) used.insert(s.ub);
      effect = effect || body_effect;
    } else if (s.form == Stmt::Form::kIncore) {
      live = Sweep(s.body, used, keep, changed);
      effect = effect || live;
    } else if (live) {
      used.insert(s.args.begin(), s.args.end());
      effect = effect || s.effect;
    }
    if (!live) {
      block.erase(block.begin() + static_cast<std::ptrdiff_t>(i));
      changed = true;
    }
  }
  return effect;
}

}  // namespace

std::vector<std::string> Program::OpNames() const {
  std::vector<std::string> out;
  CollectOps(body, out);
  return out;
}

int Program::CountOps() const { return static_cast<int>(OpNames().size()); }

Stmt MakeOp(std::string text, std::vector<int> args, std::vector<Type> types, int result) {
  Stmt s;
  s.text = std::move(text);
  s.args = std::move(args);
  s.types = std::move(types);
  s.result = result;
  return s;
}

bool RemoveDeadCode(Program& p, const std::set<int>& keep) {
  bool changed = false;
  std::set<int> used;
  Sweep(p.body, used, keep, changed);
  return RemoveUnusedParams(p) || changed;
}

bool RemoveUnusedParams(Program& p) {
  const std::set<int> used = UsedValues(p);
  const size_t before = p.params.size();
  std::erase_if(p.params, [&](const Param& q) { return !used.count(q.value); });
  return p.params.size() != before;
}

namespace {

void CollectResults(const std::vector<Stmt>& block, std::set<int>& out) {
  for (const Stmt& s : block) {
    if (s.form == Stmt::Form::kOp && s.result >= 0) out.insert(s.result);
    CollectResults(s.body, out);
  }
}

}  // namespace

std::set<int> DeadResults(Program& p) {
  std::set<int> results;
  CollectResults(p.body, results);
  for (int v : UsedValues(p)) results.erase(v);
  return results;
}

std::set<int> UsedValues(Program& p) {
  std::set<int> used;
  ForEachUse(p.body, [&](int& v) { used.insert(v); });
  return used;
}

void Substitute(Program& p, int from, int to) {
  ForEachUse(p.body, [&](int& v) {
    if (v == from) v = to;
  });
}

}  // namespace ptox::fuzz
