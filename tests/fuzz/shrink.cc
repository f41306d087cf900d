// Test-case reduction (shrink.h): delta debugging over the program model's ops, stores and loops,
// then over dim sizes, scalars and input kinds; every candidate is re-checked in a child.
#include "shrink.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace ptox::fuzz {
namespace {

using Path = std::vector<size_t>;  // indices into nested statement bodies

std::vector<Stmt>& BlockOf(Program& p, const Path& path) {
  std::vector<Stmt>* block = &p.body;
  for (size_t k = 0; k + 1 < path.size(); ++k) block = &(*block)[path[k]].body;
  return *block;
}

// Paths of the statements `want` accepts, in program order.
template <typename F>
void Collect(const std::vector<Stmt>& block, Path& at, F&& want, std::vector<Path>& out) {
  for (size_t i = 0; i < block.size(); ++i) {
    at.push_back(i);
    if (want(block[i])) out.push_back(at);
    Collect(block[i].body, at, want, out);
    at.pop_back();
  }
}
template <typename F>
std::vector<Path> PathsOf(const Program& p, F&& want) {
  std::vector<Path> out;
  Path at;
  Collect(p.body, at, want, out);
  return out;
}

// What RemoveOp makes (and tensor.empty, which has no operand worth removing).
bool IsLeaf(const Stmt& s) {
  return s.text.starts_with("tile.full") || s.text == "arith.add 0, 0" ||
         s.text == "tile.ne @0, 0" || s.text.starts_with("tensor.empty");
}

// Deletes the op at `path` if nothing uses its result; otherwise replaces it by something of its
// type that depends on nothing: a tensor becomes an input parameter, a tile a constant, an index
// scalar 0. (Dead ops are not dropped wholesale: some bugs need them.)
bool RemoveOp(Program& p, const Path& path) {
  std::vector<Stmt>& block = BlockOf(p, path);
  Stmt& s = block[path.back()];
  if (s.result < 0) return false;
  const int v = s.result;
  if (!UsedValues(p).count(v)) {
    block.erase(block.begin() + static_cast<std::ptrdiff_t>(path.back()));
    return true;
  }
  if (IsLeaf(s)) return false;
  const Type t = p.values[v].type;
  if (t.kind == Kind::kTensor) {
    block.erase(block.begin() + static_cast<std::ptrdiff_t>(path.back()));
    p.params.push_back({v, ParamDirection::kIn, ""});
    return true;
  }
  if (t.kind == Kind::kScalar) {
    if (t.dtype != DType::kIndex) return false;
    s = MakeOp("arith.add 0, 0", {}, {}, v);
    return true;
  }
  if (t.dtype != DType::kBool) {
    s = MakeOp(IsFloat(t.dtype) ? "tile.full 1.0 : #0" : "tile.full 1 : #0", {}, {t}, v);
    return true;
  }
  Type ints = t;
  ints.dtype = DType::kI8;
  const int one = p.AddValue(ints, "t");
  s = MakeOp("tile.ne @0, 0", {one}, {}, v);
  block.insert(block.begin() + static_cast<std::ptrdiff_t>(path.back()),
               MakeOp("tile.full 1 : #0", {}, {ints}, one));
  return true;
}

bool SameType(const Program& p, const Type& a, const Type& b) {
  if (a.kind != b.kind || a.dtype != b.dtype || a.rank() != b.rank()) return false;
  for (int k = 0; k < a.rank(); ++k) {
    const DimVar &x = p.dims[a.dims[k]], &y = p.dims[b.dims[k]];
    if (x.size != y.size || x.sym != y.sym) return false;
  }
  return true;
}

bool IsSelfStore(const Stmt& s) {
  return s.text == "tensor.store @0, @1" && s.args[0] == s.args[1];
}

// Deletes the op at `path` and rewires its uses to a value of the same type it reads (an
// operand, or what a tensor.store writes into a tensor.empty).
bool Bypass(Program& p, const Path& path) {
  std::vector<Stmt>& block = BlockOf(p, path);
  const Stmt& s = block[path.back()];
  if (s.result < 0) return false;
  const int v = s.result;
  // A computed operand first: replacing the op by a parameter is RemoveOp's edit already.
  int with = -1;
  for (int a : s.args) {
    if (!SameType(p, p.values[a].type, p.values[v].type)) continue;
    const bool param =
        std::any_of(p.params.begin(), p.params.end(), [&](const Param& q) { return q.value == a; });
    if (with < 0 || !param) with = a;
  }
  if (with < 0 && s.text.starts_with("tensor.empty"))
    for (const Stmt& st : block)
      if (st.text == "tensor.store @0, @1" && st.args[1] == v) with = st.args[0];
  if (with < 0) return false;
  block.erase(block.begin() + static_cast<std::ptrdiff_t>(path.back()));
  Substitute(p, v, with);
  std::erase_if(block, IsSelfStore);  // the store that filled the tensor.empty
  return true;
}

// Removes the loop at `path`: its results become its inits, or (no results) its body runs once
// in its place with the induction variable 0.
void RemoveLoop(Program& p, const Path& path) {
  std::vector<Stmt>& block = BlockOf(p, path);
  Stmt loop = std::move(block[path.back()]);
  block.erase(block.begin() + static_cast<std::ptrdiff_t>(path.back()));
  if (!loop.results.empty()) {
    for (size_t k = 0; k < loop.results.size(); ++k) Substitute(p, loop.results[k], loop.inits[k]);
    return;
  }
  block.insert(block.begin() + static_cast<std::ptrdiff_t>(path.back()), loop.body.begin(),
               loop.body.end());
  Substitute(p, loop.iv, p.AddLiteral("0"));
}

bool SameCase(const Case& a, const Case& b) {
  return a.text == b.text && a.dims == b.dims && a.scalars == b.scalars && a.inputs == b.inputs &&
         a.seed == b.seed;
}

class Shrinker {
 public:
  Shrinker(Finding& f, const ShrinkLimits& limits) : f_(f), limits_(limits) {}

  int Run() {
    Try(f_.program, Inputs::kCli, f_.c.seed);
    bool progress = true;
    for (int round = 0; progress && round < 6 && Budget(); ++round) {
      Program clean = f_.program;
      progress = RemoveDeadCode(clean) && Try(std::move(clean), f_.c.inputs, f_.c.seed);
      progress |= Chunks(
          [](const Stmt& s) { return s.effect; },
          [](Program& p, const Path& at) {
            BlockOf(p, at).erase(BlockOf(p, at).begin() + static_cast<std::ptrdiff_t>(at.back()));
            return true;
          });
      progress |= Chunks([](const Stmt& s) { return s.form == Stmt::Form::kOp && s.result >= 0; },
                         RemoveOp);
      progress |=
          Chunks([](const Stmt& s) { return s.form == Stmt::Form::kOp && s.result >= 0; }, Bypass);
      progress |= Chunks([](const Stmt& s) { return s.form == Stmt::Form::kFor; },
                         [](Program& p, const Path& at) {
                           RemoveLoop(p, at);
                           return true;
                         });
      Program pruned = f_.program;
      progress |= RemoveUnusedParams(pruned) && Try(std::move(pruned), f_.c.inputs, f_.c.seed);
      progress |= Dims();
    }
    return checks_;
  }

 private:
  bool Budget() const {
    return checks_ < limits_.max_checks && std::chrono::steady_clock::now() < limits_.deadline;
  }

  // Checks a candidate; adopts it when it still fails the same way.
  bool Try(Program candidate, Inputs inputs, uint64_t seed) {
    if (!Budget()) return false;
    Case c = ToCase(candidate, inputs, seed);
    if (SameCase(c, f_.c)) return false;
    // Invalid candidates (a shrunk dim that broke a shape rule) cost no child and no compile.
    if (!ptox::Program::Parse(c.text, "fuzz.pto").ok()) return false;
    ++checks_;
    Outcome o = Check(c, f_.config, limits_.timeout_s, limits_.stderr_path);
    if (!SameFailure(o, f_.outcome)) return false;
    f_.program = std::move(candidate);
    f_.c = std::move(c);
    f_.outcome = std::move(o);
    return true;
  }

  // Delta debugging: applies `edit` to chunks of the statements `want` selects, halving the
  // chunk size down to single statements; keeps every chunk whose edit still fails. Edits
  // leave no new dead code, so that a reproducer has dead ops only where its bug needs them.
  template <typename W, typename E>
  bool Chunks(W&& want, E&& edit) {
    bool any = false;
    size_t n = PathsOf(f_.program, want).size();
    for (size_t chunk = std::max<size_t>(n / 2, 1); chunk >= 1 && Budget(); chunk /= 2) {
      for (size_t start = 0; Budget();) {
        std::vector<Path> paths = PathsOf(f_.program, want);
        if (start >= paths.size()) break;
        const size_t end = std::min(paths.size(), start + chunk);
        Program candidate = f_.program;
        // What the edits leave dead goes too; what was dead before stays (a bug may need it).
        const std::set<int> dead = DeadResults(candidate);
        bool changed = false;
        for (size_t i = end; i-- > start;) changed |= edit(candidate, paths[i]);
        RemoveDeadCode(candidate, dead);
        if (changed && Try(std::move(candidate), f_.c.inputs, f_.c.seed)) {
          any = true;  // the statements after `start` moved up: try the same position again
        } else {
          start = end;
        }
      }
      if (chunk == 1) break;
    }
    return any;
  }

  // Smaller sizes for every dim (symbols and static dims alike), smallest first; not 0, which
  // would leave nothing to compare (empty dims the generator made stay).
  bool Dims() {
    bool any = false;
    for (size_t d = 0; d < f_.program.dims.size() && Budget(); ++d) {
      const int64_t s = f_.program.dims[d].size;
      for (int64_t to : std::set<int64_t>{1, 2, s / 2, s - 1}) {
        if (to >= s || to < 1) continue;
        Program candidate = f_.program;
        candidate.dims[d].size = to;
        if (Try(std::move(candidate), f_.c.inputs, f_.c.seed)) {
          any = true;
          break;
        }
      }
    }
    return any;
  }

  Finding& f_;
  const ShrinkLimits& limits_;
  int checks_ = 0;
};

}  // namespace

Case ToCase(const Program& p, Inputs inputs, uint64_t seed) {
  return Case{p.Text(), p.Symbols(), p.Scalars(), inputs, seed};
}

std::string Gist(const std::string& detail) {
  std::string s = detail.substr(0, detail.find('\n'));
  if (s.starts_with("cpu") || s.starts_with("interp")) s = s.substr(s.find(' ') + 1);
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < 90; ++i) {
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i + 1 < s.size() && std::isalnum(static_cast<unsigned char>(s[i + 1]))) ++i;
      out += '#';
    } else if (c == '%' || c == '@') {
      while (i + 1 < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_'))
        ++i;
      out += c;
    } else {
      out += c;
    }
  }
  // Float dtypes read f# now; bf16 too (the same bug shows with either 16-bit type).
  for (size_t at = out.find("bf#"); at != std::string::npos; at = out.find("bf#", at))
    out.erase(at, 1);
  return out;
}

bool SameFailure(const Outcome& o, const Outcome& want) {
  if (o.category != want.category) return false;
  if (!KeyedByMessage(o.category)) return true;
  return Gist(o.detail) == Gist(want.detail);
}

int Shrink(Finding& f, const ShrinkLimits& limits) { return Shrinker(f, limits).Run(); }

}  // namespace ptox::fuzz
