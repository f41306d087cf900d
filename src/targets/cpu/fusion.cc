// Elementwise fusion inside an incore scope. A tile value whose every use is an elementwise op or
// a store in the same block is never materialized: its consumers compute it per element. Each
// store of such a value, and each materialized elementwise result with such operands, becomes one
// loop over the valid region that reads tensors and tiles once and writes once — no intermediate
// tile passes, so memory-bound kernels stream.
//
// Semantics are unchanged: each element runs the same kernels/scalar.h functions with the same
// rounding as the tile-library op would, and the loop covers exactly the result's valid region
// (the intersection of its operands' — the interpreter's valid-region rule). Padding never
// escapes a tile (stores, reductions and matmul read only valid elements), so it is not computed.
// Loads are inlined only from tensors the scope never stores to, so deferring a read to the
// consuming store cannot observe a write. Integer elementwise ops (which can fail per element)
// stay tile-library calls.
#include <fmt/format.h>

#include <functional>

#include "targets/cpu/emitter.h"

namespace ptox::targets::cpu {
namespace {

bool IsFloatTile(const ir::Type& t) { return t.is_tile() && IsFloat(t.dtype()); }

// Whether `op` can be evaluated per element inside a fused loop.
bool FusibleOp(const ir::OpStmt& op) {
  const auto& a = op.args();
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kBinary:
    case ir::OpFamily::kUnary:
    case ir::OpFamily::kSelect:
    case ir::OpFamily::kRowExpand:
    case ir::OpFamily::kColExpand: return IsFloatTile(op.result()->type);
    case ir::OpFamily::kCompare: return IsFloatTile(a[0].type());
    case ir::OpFamily::kCast:  // never fails unless int -> int
      return IsFloat(a[0].type().dtype()) || IsFloat(op.result()->type.dtype());
    default: return false;
  }
}

// Operand positions a fused loop reads per element (the expand vector is read per row / column).
bool ElementwisePosition(const ir::OpStmt& op, int pos) {
  ir::OpFamily f = ir::FamilyOf(op.op());
  if (f == ir::OpFamily::kRowExpand || f == ir::OpFamily::kColExpand) return pos == 0;
  return true;
}

void StoredTensors(const ir::Block& b, std::unordered_set<const ir::ValueNode*>& out) {
  for (const ir::StmtRef& s : b) {
    if (s->kind() == ir::StmtKind::kOp) {
      const auto& op = ir::As<ir::OpStmt>(*s);
      if (ir::FamilyOf(op.op()) == ir::OpFamily::kStore) out.insert(op.args()[1].value().get());
    } else if (s->kind() == ir::StmtKind::kFor) {
      StoredTensors(ir::As<ir::ForStmt>(*s).body(), out);
    } else if (s->kind() == ir::StmtKind::kIf) {
      StoredTensors(ir::As<ir::IfStmt>(*s).then_body(), out);
      StoredTensors(ir::As<ir::IfStmt>(*s).else_body(), out);
    } else if (s->kind() == ir::StmtKind::kIncore) {
      StoredTensors(ir::As<ir::IncoreStmt>(*s).body(), out);
    }
  }
}

}  // namespace

void Emitter::PlanFusion(const ir::IncoreStmt& scope) {
  std::unordered_set<const ir::ValueNode*> stored;
  StoredTensors(scope.body(), stored);
  std::function<void(const ir::Block&)> plan = [&](const ir::Block& block) {
    for (const ir::StmtRef& s : block) {
      if (s->kind() == ir::StmtKind::kFor) plan(ir::As<ir::ForStmt>(*s).body());
      if (s->kind() == ir::StmtKind::kIf) {
        plan(ir::As<ir::IfStmt>(*s).then_body());
        plan(ir::As<ir::IfStmt>(*s).else_body());
      }
      if (s->kind() != ir::StmtKind::kOp) continue;
      const auto& op = ir::As<ir::OpStmt>(*s);
      bool load = ir::FamilyOf(op.op()) == ir::OpFamily::kLoad;
      if (load ? !(IsFloatTile(op.result()->type) && !stored.count(op.args()[0].value().get()))
               : !FusibleOp(op))
        continue;
      const auto& uses = uses_[op.result().get()];
      bool all_fusible = !uses.empty();
      for (const UseSite& u : uses) {
        bool ok = u.block == &block && u.operand >= 0 && u.stmt->kind() == ir::StmtKind::kOp;
        if (ok) {
          const auto& user = ir::As<ir::OpStmt>(*u.stmt);
          ok = ir::FamilyOf(user.op()) == ir::OpFamily::kStore
                   ? u.operand == 0
                   : FusibleOp(user) && ElementwisePosition(user, u.operand);
        }
        all_fusible &= ok;
      }
      if (all_fusible) inlined_.insert(op.result().get());
    }
  };
  plan(scope.body());
}

bool Emitter::EmitFusedRoot(const ir::OpStmt& root, int depth) {
  const bool store = ir::FamilyOf(root.op()) == ir::OpFamily::kStore;
  if (store ? !Inlined(root.args()[0].value()) : !FusibleOp(root)) return false;
  if (!store) {
    bool any = false;
    for (const auto& a : root.args()) any |= a.is_value() && Inlined(a.value());
    if (!any) return false;
  }
  const ir::Type& shape = store ? root.args()[0].type() : root.result()->type;
  const int id = fused_loops_++;
  std::vector<std::string> pre, body;  // before the loop; per element
  std::vector<std::string> windows;     // inlined loads and the store: "w<k>" names
  std::unordered_map<const ir::ValueNode*, std::string> elem;
  int counter = 0;
  auto fresh = [&](const char* p) { return fmt::format("{}{}_{}", p, id, counter++); };

  std::function<std::string(const ir::OpStmt&)> visit_op;
  // The per-element expression name for operand `a` of `op`, computing in dtype `d`.
  auto operand = [&](const ir::Operand& a, DType d, const ir::OpStmt& op) -> std::string {
    if (a.is_value() && a.type().is_tile()) {
      const ir::Value& v = a.value();
      if (auto it = elem.find(v.get()); it != elem.end()) return it->second;
      std::string e;
      if (Inlined(v)) {
        e = visit_op(*producer_.at(v.get()));
      } else {  // a materialized tile: read it, and clip the valid region by it
        e = fresh("e");
        body.push_back(fmt::format("const auto {} = {}.v[r * {} + c];", e, Name(v), shape.cols()));
        pre.push_back(fmt::format("vr = std::min<int64_t>(vr, {0}.vr); vc = std::min<int64_t>(vc, {0}.vc);", Name(v)));
      }
      elem[v.get()] = e;
      return e;
    }
    std::string s = fresh("s");  // a scalar broadcast to every element
    pre.push_back(fmt::format("const auto {} = pc::ScalarAs<{}>(ctx, {}, {});", s, DTypeEnum(d),
                              Operand(a), Where(op, ir::OpName(op.op()))));
    pre.push_back("if (ctx.failed()) return ctx.code();");
    return s;
  };
  visit_op = [&](const ir::OpStmt& op) -> std::string {
    const auto& a = op.args();
    const ir::Type& rt = op.result()->type;
    std::string e = fresh("e"), d = DTypeEnum(rt.dtype());
    std::string fn = Functor(op.op());
    switch (ir::FamilyOf(op.op())) {
      case ir::OpFamily::kLoad: {
        std::string w = fresh("w");
        pre.push_back(fmt::format("pc::Window {};", w));
        pre.push_back(fmt::format(
            "if (!pc::Locate(ctx, {}, {{{}}}, sizeof(pc::Memory<{}>), {}, &{})) return ctx.code();",
            Operand(a[0]), Operands(a, 1, a.size()), d, Where(op, "tile.load"), w));
        pre.push_back(fmt::format("vr = std::min<int64_t>(vr, {0}.rows); vc = std::min<int64_t>(vc, {0}.cols);", w));
        windows.push_back(w);
        body.push_back(fmt::format("const auto {} = pc::Get<{}>({}_row, kContig ? c : c * {}.col_stride);", e, d, w, w));
        break;
      }
      case ir::OpFamily::kBinary: {
        std::string x = operand(a[0], rt.dtype(), op), y = operand(a[1], rt.dtype(), op);
        body.push_back(fmt::format("const auto {} = pc::RoundTo<{}>({}::F({}, {}));", e, d, fn, x, y));
        break;
      }
      case ir::OpFamily::kUnary:
        body.push_back(fmt::format("const auto {} = pc::RoundTo<{}>({}::F({}));", e, d, fn,
                                   operand(a[0], rt.dtype(), op)));
        break;
      case ir::OpFamily::kCompare: {
        DType in = a[0].type().dtype();
        std::string x = operand(a[0], in, op), y = operand(a[1], in, op);
        body.push_back(fmt::format("const uint8_t {} = {}::C({}, {}) ? 1 : 0;", e, fn, x, y));
        break;
      }
      case ir::OpFamily::kSelect: {
        std::string c = operand(a[0], DType::kBool, op), x = operand(a[1], rt.dtype(), op),
                    y = operand(a[2], rt.dtype(), op);
        body.push_back(fmt::format("const auto {} = {} ? {} : {};", e, c, x, y));
        break;
      }
      case ir::OpFamily::kCast: {
        DType in = a[0].type().dtype();
        std::string x = operand(a[0], in, op);
        body.push_back(fmt::format("pc::Storage<{}> {};", d, e));
        body.push_back(fmt::format("pc::CastValue<{}, {}>({}, &{});", DTypeEnum(in), d, x, e));
        break;
      }
      case ir::OpFamily::kRowExpand:
      case ir::OpFamily::kColExpand: {
        bool row = ir::FamilyOf(op.op()) == ir::OpFamily::kRowExpand;
        std::string v = Name(a[1].value()), x = operand(a[0], rt.dtype(), op);
        pre.push_back(row ? fmt::format("vr = std::min<int64_t>(vr, {}.vr);", v)
                          : fmt::format("vc = std::min<int64_t>(vc, {}.vc);", v));
        body.push_back(fmt::format("const auto {} = pc::RoundTo<{}>({}::F({}, {}.v[{}]));", e, d,
                                   fn, x, v, row ? "r" : "c"));
        break;
      }
      default: PTOX_ICHECK(false) << "not fusible: " << ir::OpName(op.op());
    }
    return e;
  };

  std::string result, store_w, dest;
  if (store) {
    result = operand(root.args()[0], shape.dtype(), root);
    store_w = fresh("w");
    const auto& a = root.args();
    pre.push_back(fmt::format("pc::Window {};", store_w));
    pre.push_back(fmt::format(
        "if (!pc::Locate(ctx, {}, {{{}}}, sizeof(pc::Memory<{}>), {}, &{})) return ctx.code();",
        Operand(a[1]), Operands(a, 2, a.size()), DTypeEnum(shape.dtype()), Where(root, "tile.store"), store_w));
    pre.push_back(fmt::format("vr = std::min<int64_t>(vr, {0}.rows); vc = std::min<int64_t>(vc, {0}.cols);", store_w));
    windows.push_back(store_w);
    body.push_back(fmt::format("pc::Put<{}>(const_cast<char*>({}_row), kContig ? c : c * {}.col_stride, {});",
                               DTypeEnum(shape.dtype()), store_w, store_w, result));
  } else {
    dest = Name(root.result());
    DeclareTile(depth, root.result(), dest);
    result = visit_op(root);
    body.push_back(fmt::format("{}.v[r * {} + c] = {};", dest, shape.cols(), result));
  }

  Line(depth, fmt::format("{{  // fused loop {}", id));
  Line(depth + 1, fmt::format("int64_t vr = {}, vc = {};", shape.rows(), shape.cols()));
  for (const std::string& p : pre) Line(depth + 1, p);
  // One branch on all strides at once (`&`, not `&&`): with a chain of short-circuit tests g++
  // threaded the all-contiguous case into a scalar copy of the strided loop (4-input kernels ran
  // at a quarter of the bandwidth).
  std::string contiguous = "true";
  for (const std::string& w : windows) contiguous += " & (" + w + ".col_stride == 1)";
  Line(depth + 1, "auto rows = [&](auto contig) {");
  Line(depth + 2, "constexpr bool kContig = decltype(contig)::value;");
  Line(depth + 2, "for (int64_t r = 0; r < vr; ++r) {");
  for (const std::string& w : windows)
    Line(depth + 3, fmt::format("const char* {0}_row = {0}.base + r * {0}.row_stride * {0}.elem_bytes;", w));
  Line(depth + 3, "for (int64_t c = 0; c < vc; ++c) {");
  for (const std::string& b : body) Line(depth + 4, b);
  Line(depth + 3, "}");
  Line(depth + 2, "}");
  Line(depth + 1, "};");
  Line(depth + 1, fmt::format("if ({}) rows(std::true_type{{}}); else rows(std::false_type{{}});", contiguous));
  if (!store) Line(depth + 1, fmt::format("pc::SetValid({}, vr, vc);", dest));
  Line(depth, "}");
  return true;
}

}  // namespace ptox::targets::cpu
