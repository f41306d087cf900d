// Group formation for tensor ops (see tensor_groups.h).
//
// Rules, per block, in program order: a tensor op X joins an open group G of one of its operands
// (latest first; an X whose operands are all outside groups may join the latest group) when
//   - G is an elementwise, row-reduction or matmul group (layout ops and other reductions stay
//     alone), and X is elementwise with a shape that broadcasts into G's domain (the domain, a
//     row of it, a per-feature vector: computed per tile), or X reduces G's domain along its
//     static last axis (not in matmul groups);
//   - every operand of X is a value of G (not a non-keepdims reduction result), a value of a
//     group created before G, or a value defined before G's first op;
//   - no statement between G's first op and X may write memory (a store, a tile-level scope):
//     moving X up to G's position must not move a read across a write.
// Joining only groups whose inputs precede them keeps the group graph acyclic: each group runs
// at its first op's position. A value used outside its group is stored to a tensor.empty buffer
// (or straight into an `out` parameter when its only use is a tensor.store there and nothing else
// touches that parameter), and later uses read the buffer. Slices and reshapes that may be read
// in place (views.h) join no group: they stay where they are, and their readers load the memory
// they view. Complexity: O(ops x groups).
#include "passes/tensor_groups.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "ops/type_rules.h"
#include "passes/extents.h"
#include "passes/rewrite.h"
#include "passes/views.h"

namespace ptox::passes {

bool ReducesLastAxis(const ir::OpStmt& op) {
  if (ir::FamilyOf(op.op()) != ir::OpFamily::kTensorReduce) return false;
  const ir::Type& in = op.args()[0].type();
  return ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1), in.rank(), "", op.span()) ==
             in.rank() - 1;
}

bool ReducesWholeRows(const ir::OpStmt& op) {
  if (!ReducesLastAxis(op)) return false;
  const ir::Dim& last = op.args()[0].type().shape().back();
  return last.is_static() && last.size > 0;
}

bool StaticallyEmpty(const std::vector<ir::Dim>& shape) {
  for (const ir::Dim& d : shape)
    if (d.is_static() && d.size == 0) return true;
  return false;
}

const std::vector<ir::Dim>& OpDomain(const ir::OpStmt& op) {
  if (ir::FamilyOf(op.op()) == ir::OpFamily::kTensorReduce) return op.args()[0].type().shape();
  return op.result()->type.shape();
}

std::vector<ir::Dim> GroupDomain(const std::vector<const ir::OpStmt*>& ops) {
  if (ir::FamilyOf(ops[0]->op()) == ir::OpFamily::kTensorMatmul) return OpDomain(*ops[0]);
  std::vector<ir::Dim> domain = OpDomain(*ops[0]);
  for (const ir::OpStmt* op : ops) {
    auto b = ir::BroadcastShapes(domain, OpDomain(*op));
    PTOX_ICHECK(b.has_value()) << "a group's ops do not broadcast together";
    domain = *b;
  }
  return domain;
}

namespace {

enum class GroupKind { kElementwise, kRow, kMatmul, kAlone };

struct Group {
  size_t first;  // statement index of the first op
  GroupKind kind;
  std::vector<ir::Dim> domain;
  std::vector<size_t> members;
};

bool IsElementwise(ir::OpFamily f) {
  return f == ir::OpFamily::kTensorBinary || f == ir::OpFamily::kTensorUnary ||
         f == ir::OpFamily::kTensorCast || f == ir::OpFamily::kTensorCompare ||
         f == ir::OpFamily::kTensorSelect || f == ir::OpFamily::kTensorCausalMask;
}
bool IsGroupable(const ir::Stmt& s) {
  if (s.kind() != ir::StmtKind::kOp) return false;
  ir::OpFamily f = ir::FamilyOf(ir::As<ir::OpStmt>(s).op());
  return ir::IsTensorLevel(f) && f != ir::OpFamily::kTensorEmpty &&
         f != ir::OpFamily::kTensorStore && f != ir::OpFamily::kComposite;
}

// Whether a statement may write memory: stores, tile-level scopes, and anything holding them.
bool MayWrite(const ir::Stmt& s) {
  switch (s.kind()) {
    case ir::StmtKind::kOp: return ir::HasNoResult(ir::FamilyOf(ir::As<ir::OpStmt>(s).op()));
    case ir::StmtKind::kYield: return false;
    default: return true;
  }
}

// Values each statement reads (nested blocks included).
void Reads(const ir::Stmt& s, std::vector<const ir::ValueNode*>& out) {
  auto add = [&](const ir::Operand& o) {
    if (o.is_value()) out.push_back(o.value().get());
  };
  ir::ForEachOperand(s, add);
  ir::ForEachBody(s, [&](const ir::Block& b) {
    ir::ForEachStmt(b, [&](const ir::Stmt& t) { ir::ForEachOperand(t, add); });
  });
}

class Grouper {
 public:
  Grouper(const ir::Func& func, bool fuse) : func_(func), fuse_(fuse), ext_(func) {
    for (const ir::Param& p : func.params) directions_[p.value.get()] = p.dir;
    CountUses(func.body);
  }

  Extents& extents() { return ext_; }

  // Symbols that statement `s` binds (docs/ir.md): a tensor.empty's sizes, and a concat's
  // result size along a symbolic axis (read from the result wherever it is used; its own buffer
  // adds up the operands').
  void BindSymbols(const ir::Stmt& s) {
    if (s.kind() != ir::StmtKind::kOp) return;
    const auto& op = ir::As<ir::OpStmt>(s);
    const auto& shape = op.results().empty() ? std::vector<ir::Dim>{} : op.result()->type.shape();
    if (op.op() == ir::OpCode::kTensorEmpty) {
      size_t next = 0;
      for (const ir::Dim& d : shape)
        if (!d.is_static()) ext_.Bind(d.sym, op.args()[next++]);
    }
    if (op.op() == ir::OpCode::kTensorConcat && ir::ConcatNeedsType(op.args(), op.attrs())) {
      const int axis = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1),
                                         static_cast<int>(shape.size()), "", op.span());
      if (!shape[axis].is_static()) ext_.BindDim(shape[axis].sym, op.result(), axis);
    }
  }

  // Groups the block's tensor ops and emits it. Placement is greedy; it is redone (with the ops
  // found wanting their own domain) until no group computes a value it must also store at a
  // broadcast shape (see BroadcastOutputs).
  ir::Block Run(const ir::Block& block) {
    own_domain_.clear();
    views_ = Views(func_, block);
    for (;;) {
      std::vector<int> member_of = Place(block);
      const std::vector<size_t> bad = BroadcastOutputs(block, member_of);
      if (bad.empty()) return Emit(block, member_of);
      const size_t before = own_domain_.size();
      own_domain_.insert(bad.begin(), bad.end());
      PTOX_ICHECK(own_domain_.size() > before) << "group placement does not converge";
    }
  }

 private:
  // Every groupable op's group, by statement index (-1: not a tensor op).
  std::vector<int> Place(const ir::Block& block) {
    groups_.clear();
    group_of_.clear();
    def_index_.clear();
    flat_.clear();
    const size_t n = block.size();
    std::vector<int> member_of(n, -1);
    size_t last_write = 0;  // 1 + index of the last memory-writing statement
    for (size_t i = 0; i < n; ++i) {
      const ir::Stmt& s = *block[i];
      if (IsGroupable(s) && !views_.count(ir::As<ir::OpStmt>(s).result().get())) {
        const auto& op = ir::As<ir::OpStmt>(s);
        int g = PlaceOp(op, i, last_write);
        member_of[i] = g;
        if (op.op() != ir::OpCode::kTensorMatmul &&
            ir::FamilyOf(op.op()) == ir::OpFamily::kTensorReduce &&
            !ir::BoolAttr(op.attrs(), "keepdims", false))
          flat_.insert(op.result().get());
        group_of_[ir::As<ir::OpStmt>(s).result().get()] = g;
      } else if (MayWrite(s)) {
        last_write = i + 1;
      }
      Define(s, i);
    }
    return member_of;
  }

  // Elementwise members whose result is smaller than their group's domain (a per-row or
  // per-feature value broadcast into it) and is used outside the group: the group computes them
  // per tile, so it would store them once per tile of the broadcast dims, at those tiles'
  // offsets, and never when such a dim is empty. They must be computed in a group of their own
  // shape. (A row reduction's result is a row of its domain: stored once per row tile.)
  std::vector<size_t> BroadcastOutputs(const ir::Block& block, const std::vector<int>& member_of) {
    std::vector<size_t> bad;
    for (const Group& g : groups_) {
      for (size_t m : g.members) {
        const auto& op = ir::As<ir::OpStmt>(*block[m]);
        if (ir::FamilyOf(op.op()) == ir::OpFamily::kTensorReduce ||
            op.result()->type.shape() == g.domain)
          continue;
        for (size_t i = 0; i < block.size(); ++i) {
          if (member_of[i] >= 0 && &groups_[member_of[i]] == &g) continue;
          std::vector<const ir::ValueNode*> reads;
          Reads(*block[i], reads);
          if (std::count(reads.begin(), reads.end(), op.result().get())) {
            bad.push_back(m);
            break;
          }
        }
      }
    }
    return bad;
  }

  void Define(const ir::Stmt& s, size_t i) {
    if (s.kind() == ir::StmtKind::kOp)
      for (const auto& r : ir::As<ir::OpStmt>(s).results()) def_index_[r.get()] = i;
    if (s.kind() == ir::StmtKind::kFor)
      for (const auto& r : ir::As<ir::ForStmt>(s).results()) def_index_[r.get()] = i;
    if (s.kind() == ir::StmtKind::kIf)
      for (const auto& r : ir::As<ir::IfStmt>(s).results()) def_index_[r.get()] = i;
    if (s.kind() == ir::StmtKind::kWhile)
      for (const auto& r : ir::As<ir::WhileStmt>(s).results()) def_index_[r.get()] = i;
  }

  void CountUses(const ir::Block& b) {
    for (const auto& s : b) {
      std::vector<const ir::ValueNode*> reads;
      Reads(*s, reads);
      for (auto* v : reads) ++uses_[v];
    }
  }

  // The group op `x` at statement `i` joins, or a new one; returns its index.
  int PlaceOp(const ir::OpStmt& x, size_t i, size_t last_write) {
    if (fuse_) {
      for (int g = static_cast<int>(groups_.size()) - 1; g >= 0; --g) {
        // An op on values outside every group may join the latest group (a bias, a gate).
        const bool related = Operand(x, g) || (g + 1 == static_cast<int>(groups_.size()) &&
                                               !Operand(x, -1));
        // Ops that must keep their own shape neither join a larger domain nor see theirs grow.
        const auto joined = ir::BroadcastShapes(groups_[g].domain, OpDomain(x));
        bool shape_ok = !own_domain_.count(i) || joined == x.result()->type.shape();
        for (size_t m : groups_[g].members)
          shape_ok = shape_ok && (!own_domain_.count(m) || joined == groups_[g].domain);
        if (related && shape_ok && groups_[g].first >= last_write && CanJoin(x, groups_[g], g)) {
          groups_[g].members.push_back(i);
          groups_[g].domain = *ir::BroadcastShapes(groups_[g].domain, OpDomain(x));
          if (ir::FamilyOf(x.op()) == ir::OpFamily::kTensorReduce) groups_[g].kind = GroupKind::kRow;
          return g;
        }
      }
    }
    Group g{i, GroupKind::kAlone, OpDomain(x), {i}};
    const ir::OpFamily f = ir::FamilyOf(x.op());
    if (IsElementwise(f)) g.kind = GroupKind::kElementwise;
    if (f == ir::OpFamily::kTensorMatmul) g.kind = GroupKind::kMatmul;
    if (ReducesWholeRows(x)) g.kind = GroupKind::kRow;
    groups_.push_back(std::move(g));
    return static_cast<int>(groups_.size()) - 1;
  }

  // Whether one of x's operands is a value of group g (of any group when g < 0).
  bool Operand(const ir::OpStmt& x, int g) const {
    for (const auto& a : x.args()) {
      if (!a.is_value()) continue;
      auto it = group_of_.find(a.value().get());
      if (it != group_of_.end() && (g < 0 || it->second == g)) return true;
    }
    return false;
  }

  bool CanJoin(const ir::OpStmt& x, const Group& g, int gi) const {
    if (g.kind == GroupKind::kAlone) return false;
    const ir::OpFamily f = ir::FamilyOf(x.op());
    if (IsElementwise(f)) {
      // Any shape that broadcasts into the domain: the domain itself, a row (last dim 1), or a
      // smaller operand-side value (a per-feature gate, a bias) computed per tile. A group of
      // elementwise ops only may instead stretch its domain to x's shape.
      const auto& shape = x.result()->type.shape();
      const bool stretch = g.kind == GroupKind::kElementwise &&
                           ir::BroadcastShapes(g.domain, shape) == shape;
      if (ir::BroadcastShapes(shape, g.domain) != g.domain && !stretch) return false;
    } else if (ReducesWholeRows(x)) {
      if (g.kind == GroupKind::kMatmul || x.args()[0].type().shape() != g.domain) return false;
    } else {
      return false;
    }
    for (const auto& a : x.args()) {
      if (!a.is_value()) continue;
      auto it = group_of_.find(a.value().get());
      if (it != group_of_.end()) {
        if (it->second > gi) return false;
        // A non-keepdims reduction of g only leaves the group (its tile is a column).
        if (it->second == gi && flat_.count(a.value().get())) return false;
        continue;
      }
      auto d = def_index_.find(a.value().get());
      if (d != def_index_.end() && d->second >= g.first) return false;
    }
    return true;
  }

  // An index operand for each symbolic dim of the value `v` computed by `op`: the sizes in
  // scope, except a concat's own size along its axis, the sum of its operands'.
  std::vector<ir::Operand> Sizes(BlockWriter& w, const ir::OpStmt& op) {
    const std::vector<ir::Dim>& shape = op.result()->type.shape();
    int axis = -1;
    if (op.op() == ir::OpCode::kTensorConcat)
      axis = ir::NormalizeAxis(ir::IntAttr(op.attrs(), "axis", -1),
                               static_cast<int>(shape.size()), "", op.span());
    std::vector<ir::Operand> sizes;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d].is_static()) continue;
      if (static_cast<int>(d) != axis) {
        sizes.push_back(ext_.Of(w, shape[d]));
        continue;
      }
      ir::Operand sum = ir::Operand::Int(0);
      for (const ir::Operand& a : op.args()) {
        ir::Operand n = ext_.Of(w, a.type().shape()[d]);
        sum = sum.is_int() && sum.int_value() == 0 ? n : w.Op(ir::OpCode::kArithAdd, {sum, n});
      }
      sizes.push_back(sum);
    }
    return sizes;
  }

  // Where group g's value v (computed by `op`) goes: an `out` parameter its only use stores it
  // into, or a buffer.
  ir::Value Destination(BlockWriter& w, const ir::OpStmt& op, const ir::Block& block,
                        const std::vector<int>& member_of, int g, std::vector<bool>& dropped) {
    const ir::Value& v = op.result();
    std::vector<size_t> users;
    for (size_t i = 0; i < block.size(); ++i) {
      if (member_of[i] == g) continue;
      std::vector<const ir::ValueNode*> reads;
      Reads(*block[i], reads);
      if (std::count(reads.begin(), reads.end(), v.get()) > 0) users.push_back(i);
    }
    if (users.size() == 1 && uses_[v.get()] == 1 && block[users[0]]->kind() == ir::StmtKind::kOp) {
      const auto& st = ir::As<ir::OpStmt>(*block[users[0]]);
      if (st.op() == ir::OpCode::kTensorStore && st.args().size() == 2 && st.args()[0].is_value() &&
          st.args()[0].value() == v) {
        const ir::Value& dst = st.args()[1].value();
        auto dir = directions_.find(dst.get());
        if (dir != directions_.end() && dir->second == ir::Direction::kOut && uses_[dst.get()] == 1) {
          dropped[users[0]] = true;
          return dst;
        }
      }
    }
    if (users.empty()) return nullptr;
    // Sizes read from values already buffered read the buffers.
    BlockWriter sizes(w.span());
    std::vector<ir::Operand> n = Sizes(sizes, op);
    for (const ir::StmtRef& s : sizes.Take()) w.Append(Substitute(s, subst_));
    return w.Op(ir::OpCode::kTensorEmpty, n, {}, v->type, "buf");
  }

  ir::Block Emit(const ir::Block& block, const std::vector<int>& member_of) {
    std::vector<bool> dropped(block.size(), false);
    Substitution& subst = subst_;
    subst.clear();
    BlockWriter out;
    for (size_t i = 0; i < block.size(); ++i) {
      const int g = member_of[i];
      if (dropped[i] || (g >= 0 && groups_[g].first != i)) continue;
      if (g < 0) {
        out.Append(Substitute(block[i], subst));
        continue;
      }
      out.set_span(block[i]->span());
      BlockWriter body(block[i]->span());
      for (size_t m : groups_[g].members) body.Append(Substitute(block[m], subst));
      for (size_t m : groups_[g].members) {
        const auto& op = ir::As<ir::OpStmt>(*block[m]);
        const ir::Value& v = op.result();
        ir::Value dst = Destination(out, op, block, member_of, g, dropped);
        if (!dst) continue;
        body.Op(ir::OpCode::kTensorStore, {v, dst});
        subst[v.get()] = dst;
      }
      out.Append(ir::IncoreStmt::Make(body.Take(), block[i]->span()));
    }
    return out.Take();
  }

  const ir::Func& func_;
  bool fuse_;
  std::unordered_map<const ir::ValueNode*, ir::Direction> directions_;
  Extents ext_;
  Substitution subst_;  // the block being emitted: values of groups -> their destinations
  std::unordered_map<const ir::ValueNode*, int> uses_;
  std::vector<Group> groups_;
  std::unordered_map<const ir::ValueNode*, int> group_of_;
  std::unordered_set<const ir::ValueNode*> flat_;  // non-keepdims reduction results
  std::unordered_set<size_t> own_domain_;  // ops that join only groups of their own shape
  std::unordered_set<const ir::ValueNode*> views_;  // slices / reshapes read in place: in no group
  std::unordered_map<const ir::ValueNode*, size_t> def_index_;
};

ir::Block GroupBlock(Grouper& grouper, const ir::Block& block);

ir::StmtRef GroupNested(Grouper& grouper, const ir::StmtRef& s) {
  // Incore scopes (tile level, or groups already formed) stay as they are.
  if (s->kind() == ir::StmtKind::kIncore) return s;
  return ir::MapBodies(s, [&](const ir::Block& b) { return GroupBlock(grouper, b); });
}

// Groups the blocks nested in `block`, then `block`; the symbols its statements bind are seen
// by the statements after them and end with the block.
ir::Block GroupBlock(Grouper& grouper, const ir::Block& block) {
  const size_t mark = grouper.extents().Mark();
  ir::Block nested;
  for (const auto& s : block) {
    nested.push_back(GroupNested(grouper, s));
    grouper.BindSymbols(*s);
  }
  ir::Block out = grouper.Run(nested);
  grouper.extents().EndScope(mark);
  return out;
}

}  // namespace

ir::Block FormGroups(const ir::Func& func, bool fuse) {
  Grouper grouper(func, fuse);
  return GroupBlock(grouper, func.body);
}

}  // namespace ptox::passes
