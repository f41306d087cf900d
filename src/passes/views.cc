// Views of slices and reshapes (see views.h). Complexity: O(statements x nested ops) per block.
#include "passes/views.h"

#include <algorithm>
#include <unordered_map>

#include "ir/walk.h"
#include "ops/type_rules.h"

namespace ptox::passes {

bool TransposeKeepsOrder(const ir::OpStmt& op) {
  const std::vector<ir::Dim>& shape = op.args()[0].type().shape();
  const int r = static_cast<int>(shape.size());
  int a = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "dim0", -2), r, "", op.span());
  int b = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "dim1", -1), r, "", op.span());
  if (a > b) std::swap(a, b);
  int moved = 0;  // dims in [a, b] that are not a static 1
  for (int d = a; d <= b; ++d) moved += shape[d] != ir::Dim::Static(1);
  return moved <= 1;
}

namespace {

const ir::OpStmt* AsView(const ir::Stmt& s) {
  if (s.kind() != ir::StmtKind::kOp) return nullptr;
  const auto& op = ir::As<ir::OpStmt>(s);
  const bool view = op.op() == ir::OpCode::kTensorSlice || op.op() == ir::OpCode::kTensorReshape ||
                    (op.op() == ir::OpCode::kTensorTranspose && TransposeKeepsOrder(op));
  return view ? &op : nullptr;
}

// Whether two shapes are the same but for dims of a static 1 (a reshape between them moves no
// element: any strides serve).
bool SameButUnitDims(const std::vector<ir::Dim>& from, const std::vector<ir::Dim>& to) {
  auto strip = [](const std::vector<ir::Dim>& s) {
    std::vector<ir::Dim> out;
    for (const ir::Dim& d : s)
      if (d != ir::Dim::Static(1)) out.push_back(d);
    return out;
  };
  return strip(from) == strip(to);
}

// Whether every symbolic dim of `to` is one of `from`'s (where a reshape view reads its size).
bool SymbolsAmong(const std::vector<ir::Dim>& to, const std::vector<ir::Dim>& from) {
  for (const ir::Dim& d : to)
    if (!d.is_static() && std::find(from.begin(), from.end(), d) == from.end()) return false;
  return true;
}

// How statement `s` (and what it nests) uses value `v`: not at all, only reading it, or in a way
// that lets memory be written through it or outlive the statement.
enum class Use { kNone, kRead, kEscapes };

Use UseOf(const ir::Stmt& s, const ir::ValueNode* v) {
  Use use = Use::kNone;
  auto visit = [&](const ir::Stmt& t) {
    auto is_v = [&](const ir::Operand& o) { return o.is_value() && o.value().get() == v; };
    switch (t.kind()) {
      case ir::StmtKind::kOp: {
        const auto& op = ir::As<ir::OpStmt>(t);
        const ir::OpFamily f = ir::FamilyOf(op.op());
        for (size_t i = 0; i < op.args().size(); ++i) {
          if (!is_v(op.args()[i])) continue;
          const bool destination = static_cast<int>(i) == ir::WrittenOperandPos(f);
          use = destination ? Use::kEscapes : std::max(use, Use::kRead);
        }
        break;
      }
      case ir::StmtKind::kFor:
        for (const ir::Operand& o : ir::As<ir::ForStmt>(t).inits())
          if (is_v(o)) use = Use::kEscapes;
        break;
      case ir::StmtKind::kWhile:
        for (const ir::Operand& o : ir::As<ir::WhileStmt>(t).inits())
          if (is_v(o)) use = Use::kEscapes;
        break;
      case ir::StmtKind::kYield:
        for (const ir::Operand& o : ir::As<ir::YieldStmt>(t).values())
          if (is_v(o)) use = Use::kEscapes;
        break;
      default: break;
    }
  };
  visit(s);
  ir::ForEachBody(s, [&](const ir::Block& b) {
    ir::ForEachStmt(b, [&](const ir::Stmt& t) {
      if (use != Use::kEscapes) visit(t);
    });
  });
  return use;
}

// The tensors statement `s` (and what it nests) may write: store destinations, in-place
// collectives' buffers.
std::vector<const ir::ValueNode*> Writes(const ir::Stmt& s) {
  std::vector<const ir::ValueNode*> out;
  auto visit = [&](const ir::Stmt& t) {
    if (t.kind() != ir::StmtKind::kOp) return;
    const auto& op = ir::As<ir::OpStmt>(t);
    const ir::OpFamily f = ir::FamilyOf(op.op());
    const int w = ir::WrittenOperandPos(f);
    if (w >= 0 && static_cast<size_t>(w) < op.args().size() && op.args()[w].is_value())
      out.push_back(op.args()[w].value().get());
  };
  visit(s);
  ir::ForEachBody(s, [&](const ir::Block& b) { ir::ForEachStmt(b, visit); });
  return out;
}

// Whether statement `s` (or what it nests) is a dist.fence, where every window parameter may be
// written (the epoch's puts land).
bool Fences(const ir::StmtRef& s) {
  bool fence = false;
  ir::ForEachOp(ir::Block{s}, [&](const ir::OpStmt& op) {
    fence = fence || op.op() == ir::OpCode::kDistFence;
  });
  return fence;
}

}  // namespace

std::unordered_set<const ir::ValueNode*> Views(const ir::Func& func, const ir::Block& block) {
  std::unordered_map<const ir::ValueNode*, ir::Direction> params;
  for (const ir::Param& p : func.params) params[p.value.get()] = p.dir;
  // Memory of its own: tensor.empty and tensor compute ops (a new buffer each), and the view
  // candidates below that stay copies. Contiguous: those, and reshape views of them.
  std::unordered_set<const ir::ValueNode*> buffers;
  ir::ForEachOp(func.body, [&](const ir::OpStmt& op) {
    if (ir::IsTensorLevel(ir::FamilyOf(op.op())) && !op.results().empty() &&
        op.result()->type.is_tensor() && AsView(op) == nullptr)
      buffers.insert(op.result().get());
  });
  std::unordered_set<const ir::ValueNode*> contiguous = buffers;
  // A parameter or a buffer is its own memory; other tensor values (loop-carried, if results)
  // refer to one of them, unknown until run time.
  auto own_memory = [&](const ir::ValueNode* t) { return params.count(t) || buffers.count(t); };
  std::unordered_map<const ir::ValueNode*, const ir::ValueNode*> root_of;  // view -> what it reads
  std::unordered_set<const ir::ValueNode*> views;
  for (size_t i = 0; i < block.size(); ++i) {
    const ir::OpStmt* view = AsView(*block[i]);
    if (view == nullptr) continue;
    const ir::ValueNode* v = view->result().get();
    const ir::ValueNode* src = view->args()[0].value().get();
    const ir::ValueNode* root = root_of.count(src) ? root_of.at(src) : src;
    const bool reshape = view->op() != ir::OpCode::kTensorSlice;
    const std::vector<ir::Dim>& from = view->args()[0].type().shape();
    const std::vector<ir::Dim>& to = view->result()->type.shape();
    if (reshape &&
        ((!contiguous.count(src) && !SameButUnitDims(from, to)) || !SymbolsAmong(to, from))) {
      buffers.insert(v), contiguous.insert(v);  // a copy
      continue;
    }
    // Readers: statements of this block after the view (a value is used only where it is
    // visible: here, or nested here).
    size_t last = i;
    bool ok = true;
    for (size_t j = i + 1; j < block.size() && ok; ++j) {
      const Use use = UseOf(*block[j], v);
      ok = use != Use::kEscapes;
      if (use == Use::kRead) last = j;
    }
    auto dir = params.find(root);
    const bool read_only = dir != params.end() && dir->second == ir::Direction::kIn;
    // Tensors made after the view cannot be its memory.
    std::unordered_set<const ir::ValueNode*> fresh;
    for (size_t j = i + 1; j <= last; ++j)
      ir::ForEachOp(ir::Block{block[j]}, [&](const ir::OpStmt& op) {
        if (op.op() == ir::OpCode::kTensorEmpty) fresh.insert(op.result().get());
      });
    for (size_t j = i + 1; j <= last && ok && !read_only; ++j) {
      for (const ir::ValueNode* w : Writes(*block[j]))
        ok = ok && w != root && (fresh.count(w) || (own_memory(root) && own_memory(w)));
      ok = ok && !(params.count(root) && Fences(block[j]));
    }
    if (!ok) {
      buffers.insert(v), contiguous.insert(v);  // a copy
      continue;
    }
    views.insert(v);
    root_of[v] = root;
    if (reshape && contiguous.count(src)) contiguous.insert(v);
  }
  return views;
}

}  // namespace ptox::passes
