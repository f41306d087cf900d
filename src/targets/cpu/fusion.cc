// Fused elementwise loops: the code of what fuse-tiles marked {fused = true}
// (passes/fuse_tiles.cc has the rule and why it keeps semantics). Each store of a fused value,
// and each materialized elementwise result with fused operands, becomes one loop over the valid
// region that reads tensors and tiles once and writes once; padding is never computed (stores,
// reductions and matmul read only valid elements).
#include <fmt/format.h>

#include <functional>

#include "ir/walk.h"
#include "passes/fuse_tiles.h"
#include "targets/cpu/emitter.h"

namespace ptox::targets::cpu {

// One fused loop over the valid region of a root op's result: each inlined op becomes a line of
// the per-element body, each inlined load / the store a window located before the loop, each
// materialized tile or scalar operand a read (clipping the valid region by the tile's).
class FusedLoop {
 public:
  FusedLoop(Emitter& e, const ir::Type& shape) : e_(e), shape_(shape), id_(e.fused_loops_++) {}

  // The per-element expression name of operand `a` of `op`, computing in dtype `d`.
  std::string Operand(const ir::Operand& a, DType d, const ir::OpStmt& op) {
    if (!a.is_value() || !a.type().is_tile()) {  // a scalar broadcast to every element
      std::string s = Fresh("s");
      pre_.push_back(fmt::format("const auto {} = pc::ScalarAs<{}>(ctx, {}, {});", s, DTypeEnum(d),
                                 e_.Operand(a), e_.Where(op, ir::OpName(op.op()))));
      pre_.push_back("if (ctx.failed()) return ctx.code();");
      return s;
    }
    const ir::Value& v = a.value();
    if (auto it = elem_.find(v.get()); it != elem_.end()) return it->second;
    std::string x;
    if (e_.Inlined(v)) {
      x = Element(*e_.producer_.at(v.get()));
    } else {  // a materialized tile: read it, and clip the valid region by it
      x = Fresh("e");
      body_.push_back(
          fmt::format("const auto {} = {}.v[r * {} + c];", x, e_.Name(v), shape_.cols()));
      pre_.push_back(fmt::format(
          "vr = std::min<int64_t>(vr, {0}.vr); vc = std::min<int64_t>(vc, {0}.vc);", e_.Name(v)));
    }
    elem_[v.get()] = x;
    return x;
  }

  // The per-element expression of an inlined op (or the root).
  std::string Element(const ir::OpStmt& op) {
    const auto& a = op.args();
    const ir::Type& rt = op.result()->type;
    const std::string x = Fresh("e"), d = DTypeEnum(rt.dtype()), fn = Functor(op.op());
    switch (ir::FamilyOf(op.op())) {
      case ir::OpFamily::kLoad: {
        const std::string w = Window(a[0], a, 1, d, e_.Where(op, "tile.load"));
        body_.push_back(fmt::format(
            "const auto {} = pc::Get<{}>({}_row, kContig ? c : c * {}.col_stride);", x, d, w, w));
        break;
      }
      case ir::OpFamily::kBinary: {  // operands in order: their lines come in that order
        const std::string y = Operand(a[0], rt.dtype(), op), z = Operand(a[1], rt.dtype(), op);
        body_.push_back(
            fmt::format("const auto {} = pc::RoundTo<{}>({}::F({}, {}));", x, d, fn, y, z));
        break;
      }
      case ir::OpFamily::kUnary:
        body_.push_back(fmt::format("const auto {} = pc::RoundTo<{}>({}::F({}));", x, d, fn,
                                    Operand(a[0], rt.dtype(), op)));
        break;
      case ir::OpFamily::kCompare: {
        const DType in = a[0].type().dtype();
        const std::string y = Operand(a[0], in, op), z = Operand(a[1], in, op);
        body_.push_back(fmt::format("const uint8_t {} = {}::C({}, {}) ? 1 : 0;", x, fn, y, z));
        break;
      }
      case ir::OpFamily::kSelect: {
        const std::string c = Operand(a[0], DType::kBool, op), y = Operand(a[1], rt.dtype(), op),
                          z = Operand(a[2], rt.dtype(), op);
        body_.push_back(fmt::format("const auto {} = {} ? {} : {};", x, c, y, z));
        break;
      }
      case ir::OpFamily::kBroadcast: {  // the source is materialized (fuse-tiles)
        const ir::Type& st = a[0].type();
        const std::string v = e_.Name(a[0].value());
        if (st.rows() > 1) pre_.push_back(fmt::format("vr = std::min<int64_t>(vr, {}.vr);", v));
        if (st.cols() > 1) pre_.push_back(fmt::format("vc = std::min<int64_t>(vc, {}.vc);", v));
        body_.push_back(fmt::format("const auto {} = {}.v[{} * {} + {}];", x, v,
                                    st.rows() > 1 ? "r" : "0", st.cols(),
                                    st.cols() > 1 ? "c" : "0"));
        break;
      }
      case ir::OpFamily::kCausalMask: {  // r, c: the element's position in the tile
        const std::string y = Operand(a[0], rt.dtype(), op), k = Fresh("k");
        pre_.push_back(fmt::format("const int64_t {} = {};", k, e_.Operand(a[1])));
        body_.push_back(
            fmt::format("const float {} = c - r > {} ? -__builtin_inff() : {};", x, k, y));
        break;
      }
      case ir::OpFamily::kCast: {
        const DType in = a[0].type().dtype();
        const std::string y = Operand(a[0], in, op);
        body_.push_back(fmt::format("pc::Storage<{}> {};", d, x));
        body_.push_back(fmt::format("pc::CastValue<{}, {}>({}, &{});", DTypeEnum(in), d, y, x));
        break;
      }
      case ir::OpFamily::kRowExpand:
      case ir::OpFamily::kColExpand: {
        const bool row = ir::FamilyOf(op.op()) == ir::OpFamily::kRowExpand;
        const std::string v = e_.Name(a[1].value()), y = Operand(a[0], rt.dtype(), op);
        pre_.push_back(row ? fmt::format("vr = std::min<int64_t>(vr, {}.vr);", v)
                           : fmt::format("vc = std::min<int64_t>(vc, {}.vc);", v));
        body_.push_back(fmt::format("const auto {} = pc::RoundTo<{}>({}::F({}, {}.v[{}]));", x, d,
                                    fn, y, v, row ? "r" : "c"));
        break;
      }
      default: PTOX_ICHECK(false) << "not fusible: " << ir::OpName(op.op());
    }
    return x;
  }

  // The window of a load / store: tensor `t` at offsets args[first..], located before the loop.
  std::string Window(const ir::Operand& t, const std::vector<ir::Operand>& args, size_t first,
                     const std::string& dtype, const std::string& where) {
    const std::string w = Fresh("w");
    pre_.push_back(fmt::format("pc::Window {};", w));
    pre_.push_back(fmt::format(
        "if (!pc::Locate(ctx, {}, {{{}}}, sizeof(pc::Memory<{}>), {}, &{})) return ctx.code();",
        e_.Operand(t), e_.Operands(args, first, args.size()), dtype, where, w));
    pre_.push_back(fmt::format(
        "vr = std::min<int64_t>(vr, {0}.rows); vc = std::min<int64_t>(vc, {0}.cols);", w));
    windows_.push_back(w);
    return w;
  }

  void Body(std::string line) { body_.push_back(std::move(line)); }

  // The loop, once per row, specialized for contiguous windows.
  void Emit(int depth, const std::string& dest) {
    e_.Line(depth, fmt::format("{{  // fused loop {}", id_));
    e_.Line(depth + 1, fmt::format("int64_t vr = {}, vc = {};", shape_.rows(), shape_.cols()));
    for (const std::string& p : pre_) e_.Line(depth + 1, p);
    // One branch on all strides at once (`&`, not `&&`): with a chain of short-circuit tests g++
    // threaded the all-contiguous case into a scalar copy of the strided loop (4-input kernels
    // ran at a quarter of the bandwidth).
    std::string contiguous = "true";
    for (const std::string& w : windows_) contiguous += " & (" + w + ".col_stride == 1)";
    e_.Line(depth + 1, "auto rows = [&](auto contig) {");
    e_.Line(depth + 2, "constexpr bool kContig = decltype(contig)::value;");
    e_.Line(depth + 2, "for (int64_t r = 0; r < vr; ++r) {");
    for (const std::string& w : windows_)
      e_.Line(
          depth + 3,
          fmt::format("const char* {0}_row = {0}.base + r * {0}.row_stride * {0}.elem_bytes;", w));
    e_.Line(depth + 3, "for (int64_t c = 0; c < vc; ++c) {");
    for (const std::string& b : body_) e_.Line(depth + 4, b);
    e_.Line(depth + 3, "}");
    e_.Line(depth + 2, "}");
    e_.Line(depth + 1, "};");
    e_.Line(depth + 1,
            fmt::format("if ({}) rows(std::true_type{{}}); else rows(std::false_type{{}});",
                        contiguous));
    if (!dest.empty()) e_.Line(depth + 1, fmt::format("pc::SetValid({}, vr, vc);", dest));
    e_.Line(depth, "}");
  }

 private:
  std::string Fresh(const char* p) { return fmt::format("{}{}_{}", p, id_, counter_++); }

  Emitter& e_;
  const ir::Type& shape_;
  const int id_;
  int counter_ = 0;
  std::vector<std::string> pre_, body_;  // before the loop; per element
  std::vector<std::string> windows_;     // inlined loads and the store: "w<k>" names
  std::unordered_map<const ir::ValueNode*, std::string> elem_;
};

void Emitter::PlanFusion(const ir::IncoreStmt& scope) {
  ir::ForEachOp(scope.body(), [&](const ir::OpStmt& op) {
    if (passes::Fused(op)) inlined_.insert(op.result().get());
  });
}

bool Emitter::EmitFusedRoot(const ir::OpStmt& root, int depth) {
  const bool store = ir::FamilyOf(root.op()) == ir::OpFamily::kStore;
  if (store ? !Inlined(root.args()[0].value()) : !passes::FusibleOp(root)) return false;
  if (!store) {
    bool any = false;
    for (const auto& a : root.args()) any |= a.is_value() && Inlined(a.value());
    if (!any) return false;
  }
  const ir::Type& shape = store ? root.args()[0].type() : root.result()->type;
  FusedLoop loop(*this, shape);
  if (store) {
    const std::string result = loop.Operand(root.args()[0], shape.dtype(), root);
    const std::string d = DTypeEnum(shape.dtype());
    const std::string w = loop.Window(root.args()[1], root.args(), 2, d, Where(root, "tile.store"));
    loop.Body(
        fmt::format("pc::Put<{}>(const_cast<char*>({}_row), kContig ? c : c * {}.col_stride, {});",
                    d, w, w, result));
    loop.Emit(depth, "");
    return true;
  }
  const std::string dest = Name(root.result());
  DeclareTile(depth, root.result(), dest);
  const std::string result = loop.Element(root);
  loop.Body(fmt::format("{}.v[r * {} + c] = {};", dest, shape.cols(), result));
  loop.Emit(depth, dest);
  return true;
}

}  // namespace ptox::targets::cpu
