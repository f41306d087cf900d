// Fused elementwise loops: the code of what fuse-tiles marked {fused = true}
// (passes/fuse_tiles.cc has the rule and why it keeps semantics). Each store of a fused value,
// and each materialized elementwise result with fused operands, becomes one loop over the valid
// region that reads tensors and tiles once and writes once; padding is never computed (stores,
// reductions and matmul read only valid elements).
//
// An op with a vector form in kernels/cpu/vmath.h (listed in vmath_fns.def) splits the loop body
// into segments: each row runs in chunks of kChunk columns, the segment before the op leaves its
// operand in a chunk buffer, the vector form runs over the chunk, and the next segment reads the
// result back (an f32 result that only fills the loop's result tile: the vector form writes the
// tile row). The element code stays plain C++ that the compiler vectorizes; the vector form
// computes the scalar definition's bits (vmath.h), so chunking changes speed only.
//
// A loop with float adds or multiplies, or a bf16 store, runs each chunk first in a fast mode
// that does not pin which NaN payload comes out (pc::Eval in kernels/cpu/functors.h) and checks
// its results (stores, tile elements, reduction inputs) for NaN, and a natively rounded bf16
// store (pc::PutBf16Chunk) for subnormals; such a chunk runs again exactly. No op observes a
// NaN's payload without making a NaN (there is no bitcast), so a chunk without a NaN result is
// exact. The rerun reads what the first run read: a fused loop never loads a tensor its scope
// stores to (fuse-tiles materializes such a load), and its result tile never shares bytes with a
// tile it reads (plan-memory does not reuse in place).
#include <fmt/format.h>

#include <array>
#include <functional>
#include <string_view>

#include "ir/walk.h"
#include "passes/fuse_tiles.h"
#include "targets/cpu/emitter.h"

namespace ptox::targets::cpu {

namespace {

// Whether kernels/cpu/vmath.h has a vector form of the scalar function.
bool HasVectorForm(std::string_view fn) {
#define PTOX_VMATH_FN(F) \
  if (fn == #F) return true;
#include "kernels/cpu/vmath_fns.def"
  return false;
}

// The shape a fused loop runs over: a store's or row reduction's operand, else the result.
const ir::Type& LoopShape(const ir::OpStmt& root) {
  const ir::OpFamily f = ir::FamilyOf(root.op());
  return f == ir::OpFamily::kStore || f == ir::OpFamily::kRowReduce ? root.args()[0].type()
                                                                    : root.result()->type;
}

}  // namespace

// One fused loop over the valid region of a root op's result: each inlined op becomes a line of
// the per-element body, each inlined load / the store a window located before the loop, each
// materialized tile or scalar operand a read (clipping the valid region by the tile's).
class FusedLoop {
 public:
  static constexpr int kChunk = 256;  // columns per chunk: a few chunk buffers stay in L1
  static constexpr int64_t kMinFastCols = 64;  // narrower loops have no fast mode

  // An element's name, the segment that defines it, how to read it again (empty: computed), and
  // its C++ type.
  struct Elem {
    std::string name;
    int segment = 0;
    std::string reread;
    std::string type = "float";
    std::string window;  // an f32 load's window, whose contiguous rows are the elements in place
  };
  struct Seg {
    std::vector<std::string> lines;
    std::string call;  // a vector form over the chunk, after the segment's loop
  };

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
    if (auto it = elem_.find(v.get()); it != elem_.end()) return InSegment(it->second);
    Elem el;
    if (e_.Inlined(v)) {
      el = Element(*e_.producer_.at(v.get()));
    } else {  // a materialized tile: read it, and clip the valid region by it
      el = Read(fmt::format("{}.v[r * {} + c]", e_.Name(v), shape_.cols()));
      pre_.push_back(fmt::format(
          "vr = std::min<int64_t>(vr, {0}.vr); vc = std::min<int64_t>(vc, {0}.vc);", e_.Name(v)));
    }
    return InSegment(elem_[v.get()] = el);
  }

  // The per-element names of op's first N operands, in the segment the op's line goes to. They
  // are computed in order, so a later operand's vector form (`x * sigmoid(x)`) may end the
  // segment an earlier one was named in: each tile operand is named again once all are computed.
  template <size_t N>
  std::array<std::string, N> Operands(const ir::OpStmt& op, const std::array<DType, N>& d) {
    std::array<std::string, N> names;
    for (size_t i = 0; i < N; ++i) names[i] = Operand(op.args()[i], d[i], op);
    for (size_t i = 0; i < N; ++i) {
      const ir::Operand& a = op.args()[i];
      if (a.is_value() && a.type().is_tile()) names[i] = InSegment(elem_.at(a.value().get()));
    }
    return names;
  }

  // The per-element expression of an inlined op (or the root). `round` false leaves a float
  // result in f32 for a store to round: Put<D>(RoundTo<D>(v)) == Put<D>(v), as rounding twice to
  // the same type is rounding once (bf16 / f16 stores skip a conversion per element).
  Elem Element(const ir::OpStmt& op, bool round = true) {
    const auto& a = op.args();
    const ir::Type& rt = op.result()->type;
    const std::string x = Fresh("e"), d = DTypeEnum(rt.dtype()), fn = Functor(op.op());
    auto rounded = [&](const std::string& v) {
      return round ? fmt::format("pc::RoundTo<{}>({})", d, v) : v;
    };
    switch (ir::FamilyOf(op.op())) {
      case ir::OpFamily::kLoad: {
        const std::string w = Window(a[0], a, 1, d, e_.Where(op, "tile.load"));
        Elem el =
            Read(fmt::format("pc::Get<{}>({}_row, kContig ? c : c * {}.col_stride)", d, w, w));
        if (rt.dtype() == DType::kF32) el.window = w;
        return el;
      }
      case ir::OpFamily::kBinary: {  // operands in order: their lines come in that order
        const auto [y, z] = Operands<2>(op, {rt.dtype(), rt.dtype()});
        Body(fmt::format("const auto {} = {};", x, rounded(Apply(fn, y, z, rt.dtype()))));
        break;
      }
      case ir::OpFamily::kUnary: {
        if (op.op() == ir::OpCode::kTileExp && rt.dtype() == DType::kF32)
          if (const ir::OpStmt* shift = InlinedRowShift(a[0])) return ExpSub(x, *shift, round);
        const std::string y = Operand(a[0], rt.dtype(), op);
        const std::string_view sfn = ir::GetOpInfo(op.op()).scalar_fn;
        if (!HasVectorForm(sfn)) {
          Body(fmt::format("const auto {} = {};", x, rounded(fmt::format("{}::F({})", fn, y))));
          break;
        }
        // The vector form over the chunk: the operand goes to a buffer, the result comes back.
        e_.uses_vmath_ = true;
        const std::string buf = Buffer("float");
        Body(fmt::format("{}[c - c0] = {};", buf, y));
        return VectorForm(x, rt.dtype(), fmt::format("pc::vmath::{}({}, ", sfn, buf), buf,
                          ", c1 - c0);", round);
      }
      case ir::OpFamily::kCompare: {
        const DType in = a[0].type().dtype();
        const auto [y, z] = Operands<2>(op, {in, in});
        Body(fmt::format("const uint8_t {} = {}::C({}, {}) ? 1 : 0;", x, fn, y, z));
        return {x, Segment(), "", "uint8_t"};
      }
      case ir::OpFamily::kSelect: {
        const auto [c, y, z] = Operands<3>(op, {DType::kBool, rt.dtype(), rt.dtype()});
        Body(fmt::format("const auto {} = {} ? {} : {};", x, c, y, z));
        break;
      }
      case ir::OpFamily::kBroadcast: {  // the source is materialized (fuse-tiles)
        const ir::Type& st = a[0].type();
        const std::string v = e_.Name(a[0].value());
        if (st.rows() > 1) pre_.push_back(fmt::format("vr = std::min<int64_t>(vr, {}.vr);", v));
        if (st.cols() > 1) pre_.push_back(fmt::format("vc = std::min<int64_t>(vc, {}.vc);", v));
        return Read(fmt::format("{}.v[{} * {} + {}]", v, st.rows() > 1 ? "r" : "0", st.cols(),
                                st.cols() > 1 ? "c" : "0"));
      }
      case ir::OpFamily::kCausalMask: {  // r, c: the element's position in the tile
        const std::string y = Operand(a[0], rt.dtype(), op), k = Fresh("k");
        pre_.push_back(fmt::format("const int64_t {} = {};", k, e_.Operand(a[1])));
        Body(
            fmt::format("const float {} = c - r > {} ? -__builtin_inff() : {};", x, k, y));
        break;
      }
      case ir::OpFamily::kCast: {
        const DType in = a[0].type().dtype();
        const std::string y = Operand(a[0], in, op);
        // Left unrounded, a float-to-float cast is its consumer's rounding (a bf16 composite's
        // last step, into a store).
        if (!round && IsFloat(in) && IsFloat(rt.dtype())) return {y, Segment()};
        Body(fmt::format("pc::Storage<{}> {};", d, x));
        Body(fmt::format("pc::CastValue<{}, {}>({}, &{});", DTypeEnum(in), d, y, x));
        return {x, Segment(), "", fmt::format("pc::Storage<{}>", d)};
      }
      case ir::OpFamily::kRowExpand:
      case ir::OpFamily::kColExpand: {
        const bool row = ir::FamilyOf(op.op()) == ir::OpFamily::kRowExpand;
        const std::string v = e_.Name(a[1].value()), y = Operand(a[0], rt.dtype(), op);
        pre_.push_back(row ? fmt::format("vr = std::min<int64_t>(vr, {}.vr);", v)
                           : fmt::format("vc = std::min<int64_t>(vc, {}.vc);", v));
        const std::string b = fmt::format("{}.v[{}]", v, row ? "r" : "c");
        Body(fmt::format("const auto {} = {};", x, rounded(Apply(fn, y, b, rt.dtype()))));
        break;
      }
      default: PTOX_ICHECK(false) << "not fusible: " << ir::OpName(op.op());
    }
    return {x, Segment()};
  }

  // The inlined f32 `tile.row_expand_sub %a, %m` that operand `a` is, or null.
  const ir::OpStmt* InlinedRowShift(const ir::Operand& a) const {
    if (!a.is_value() || !e_.Inlined(a.value())) return nullptr;
    const ir::OpStmt* p = e_.producer_.at(a.value().get());
    const bool f32 = p->result()->type.dtype() == DType::kF32 &&
                     p->args()[0].type().dtype() == DType::kF32;
    return p->op() == ir::OpCode::kTileRowExpandSub && f32 ? p : nullptr;
  }

  // exp(a - m) of an inlined row shift `shift` (softmax's): pc::vmath::ExpSub subtracts the row's
  // m itself, reading `a` in place when it is an f32 load (contiguous rows), else from a chunk
  // buffer. When m is tile.row_max of the same %a, ExpSub may leave out Exp's overflow and NaN
  // cases on rows whose maximum is finite. The difference is rounded to f32 before exp, as the
  // element code would, so the bits are the same.
  Elem ExpSub(const std::string& x, const ir::OpStmt& shift, bool round) {
    const ir::Operand& a = shift.args()[0];
    const ir::Value& m = shift.args()[1].value();  // materialized (fuse-tiles)
    const std::string mv = e_.Name(m);
    pre_.push_back(fmt::format("vr = std::min<int64_t>(vr, {}.vr);", mv));
    const std::string y = Operand(a, DType::kF32, shift);
    const std::string w = elem_.at(a.value().get()).window;
    const std::string buf = Buffer("float");
    Body(fmt::format("{}{}[c - c0] = {};", w.empty() ? "" : "if constexpr (!kContig) ", buf, y));
    const std::string in =
        w.empty() ? buf
                  : fmt::format("kContig ? reinterpret_cast<const float*>({}_row) + c0 : {}", w,
                                buf);
    auto it = e_.producer_.find(m.get());
    const bool max_of_a = it != e_.producer_.end() && it->second->op() == ir::OpCode::kTileRowMax &&
                          it->second->args()[0].is_value() &&
                          it->second->args()[0].value() == a.value();
    e_.uses_vmath_ = true;
    // The result goes to `buf` too: ExpSub may work in place.
    return VectorForm(x, DType::kF32, fmt::format("pc::vmath::ExpSub({}, {}.v[r], ", in, mv), buf,
                      fmt::format(", c1 - c0, {});", max_of_a), round);
  }

  // Ends the segment with a vector form over the chunk, `head` + its output + `tail`, writing
  // `out`, and starts the next segment, where element x reads the result back.
  Elem VectorForm(const std::string& x, DType d, std::string head, const std::string& out,
                  std::string tail, bool round) {
    segs_.back().call = head + out + tail;
    segs_.emplace_back();
    const std::string v = out + "[c - c0]";
    Body(fmt::format("const auto {} = {};", x,
                     round ? fmt::format("pc::RoundTo<{}>({})", DTypeEnum(d), v) : v));
    if (d == DType::kF32) vector_result_ = {x, std::move(head), std::move(tail)};
    return {x, Segment()};
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

  // Makes the loop a row reduction of root's operand into `dest` (R x 1) with functor `fn`: each
  // chunk's elements go through a buffer into the row's accumulator (kernels/cpu/reduce.h), in
  // the order the tile reduction adds them, so fused and unfused sums have the same bits. A
  // reduction of an f32 load reads its contiguous rows in place, without the copy (4096-column
  // layernorm's sum: 1.09-1.12x; softmax's max: 1.04-1.11x, paired A/B).
  void Reduce(const std::string& fn, const ir::OpStmt& root, DType d, const std::string& dest,
              const std::string& dtype, const std::string& where) {
    const ir::Operand& operand = root.args()[0];
    const std::string x = Operand(operand, d, root);
    const std::string buf = Buffer("float");
    const std::string w = elem_.at(operand.value().get()).window;
    Body(fmt::format("{}{}[c - c0] = {};", w.empty() ? "" : "if constexpr (!kContig) ", buf, x));
    exits_.emplace_back(x, "");
    const std::string in =
        w.empty() ? buf
                  : fmt::format("kContig ? reinterpret_cast<const float*>({}_row) + c0 : {}", w,
                                buf);
    reduce_ = {fn, dest, dtype, where, in};
  }

  // Makes the loop a store of element `x`, the value `op` stores.
  void Store(const ir::OpStmt& op, const std::string& x) {
    const DType dt = op.args()[0].type().dtype();
    const std::string d = DTypeEnum(dt);
    const std::string w = Window(op.args()[1], op.args(), 2, d, e_.Where(op, "tile.store"));
    exact_ |= dt == DType::kBF16;  // the fast mode's Put skips bf16 rounding's NaN case
    const std::string put = fmt::format("pc::Put<{}{}>", d, dt == DType::kBF16 ? ", kExact" : "");
    // bf16 in a fast loop's contiguous rows: the values go through a chunk buffer that
    // PutBf16Chunk rounds with the native instruction where the target has one; it also checks
    // them for NaN, so the element's own check is left out there.
    const bool native = dt == DType::kBF16 && shape_.cols() >= kMinFastCols;
    exits_.emplace_back(x, native ? " && !(kContig && pc::kNativeBf16Chunk)" : "");
    // The contiguous rows of a tensor that StreamsStores go through a chunk buffer that RowStream
    // writes after the chunk (a rerun in exact mode overwrites it first); the others are written
    // in place, from the chunk's first column on.
    const bool streamed = e_.streamable_.count(&op) != 0;
    std::string line =
        streamed
            ? fmt::format("{}({}_dst, kContig ? c - c0 : c * {}.col_stride, {});", put, w, w, x)
            : fmt::format("{}(const_cast<char*>({}_row), kContig ? c : c * {}.col_stride, {});",
                          put, w, w, x);
    if (streamed) {
      const std::string buf = Buffer(fmt::format("pc::Memory<{}>", d));
      const std::string bytes = fmt::format("sizeof(pc::Memory<{}>)", d);
      pre_.push_back(fmt::format("const bool {}_stream = pc::StreamsStores({}, {});", w,
                                 e_.Operand(op.args()[1]), bytes));
      stream_ = {w, buf, bytes};
    }
    if (native) {
      PTOX_ICHECK(segs_.back().call.empty());
      const std::string f32 = Buffer("float");
      const std::string dst = streamed ? w + "_dst"
                                       : fmt::format("const_cast<char*>({}_row) + c0 * 2", w);
      line = fmt::format("if constexpr (kContig && pc::kNativeBf16Chunk) {}[c - c0] = {}; else {}",
                         f32, x, line);
      segs_.back().call = fmt::format(
          "if constexpr (kContig && pc::kNativeBf16Chunk) "
          "nan |= pc::PutBf16Chunk<kExact>({}, {}, c1 - c0);",
          dst, f32);
    }
    Body(line);
  }

  // Makes the loop write element `x` into tile `dest`.
  void WriteTile(const std::string& dest, const std::string& x) {
    // An f32 vector form's result that is only written to the tile (an exact-only loop, so no
    // NaN check reads it): the vector form writes the tile row itself, without the copy.
    if (x == vector_result_.x && segs_.back().lines.size() == 1 && !exact_) {
      segs_.pop_back();
      segs_.back().call = fmt::format("{}&{}.v[r * {} + c0]{}", vector_result_.head, dest,
                                      shape_.cols(), vector_result_.tail);
      return;
    }
    Body(fmt::format("{}.v[r * {} + c] = {};", dest, shape_.cols(), x));
    exits_.emplace_back(x, "");
  }

  // Prefetches, chunk by chunk, the rows of a later fused store's window, and the rows the
  // enclosing loop's next trip loads (pc::Prefetch). Windows are found without checking: the
  // store and the loads report their errors, and a next trip past the tensor prefetches nothing.
  void Prefetch(const Emitter::Prefetches& p) {
    // The window of op's tensor operand t at its offsets (the operands after t), `shift` rows on
    // along dim `row_dim` (-1: none).
    // A streamed store's lines are not prefetched: that would read them.
    auto find = [&](const ir::OpStmt& op, size_t t, DType d, int row_dim, int64_t shift,
                    bool streamable, int64_t further) {
      const std::string w = Fresh("pw");
      const size_t row = row_dim < 0 ? op.args().size() : t + 1 + row_dim;
      std::vector<std::string> offs;
      for (size_t i = t + 1; i < op.args().size(); ++i) {
        offs.push_back(e_.Operand(op.args()[i]));
        if (i == row && shift != 0) offs.back() += fmt::format(" + {}", shift);
      }
      pre_.push_back(fmt::format("pc::Window {};", w));
      const std::string tensor = e_.Operand(op.args()[t]);
      const std::string bytes = fmt::format("sizeof(pc::Memory<{}>)", DTypeEnum(d));
      const std::string unless =
          streamable ? fmt::format("!pc::StreamsStores({}, {}) && ", tensor, bytes) : "";
      pre_.push_back(fmt::format("const bool {0}_ok = {1}pc::FindWindow({2}, {{{3}}}, {4}, &{0});",
                                 w, unless, tensor, fmt::join(offs, ", "), bytes));
      prefetch_.push_back({w, further});
    };
    if (p.store)
      find(*p.store, 1, p.store->args()[0].type().dtype(), -1, 0, e_.streamable_.count(p.store),
           0);
    // A trip of at most 32 KiB also prefetches the trip after next (pc::Prefetch's `further`).
    constexpr int64_t kFurtherBytes = 32 << 10;
    for (const auto& [load, step] : p.next_loads) {
      const ir::Type& tile = load->result()->type;
      const int64_t bytes = tile.rows() * tile.cols() * DTypeBytes(tile.dtype());
      find(*load, 0, tile.dtype(), load->args()[0].type().rank() - 2, step, false,
           bytes <= kFurtherBytes ? step : 0);
    }
  }

  // Appends a line to the current segment (after computing its operands, which may end one).
  void Body(std::string line) { segs_.back().lines.push_back(std::move(line)); }

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
    if (!reduce_.fn.empty()) {
      e_.Line(depth + 1, fmt::format("for (auto& o : {}.v) o = {{}};", reduce_.dest));
      if (reduce_.fn != "pc::FnAdd")
        e_.Line(depth + 1,
                fmt::format("if (vc == 0 && vr > 0) {{ pc::EmptyLineError<{}>(ctx, {}, 0); "
                            "return ctx.code(); }}",
                            reduce_.fn, reduce_.where));
    }
    // The row count hidden from the optimizer: knowing a one-row tile's loop runs at most once,
    // g++ 12 left its column loop scalar (bf16 softmax ran 2.5x slower).
    e_.Line(depth + 1, "vr = pc::Opaque(vr);");
    e_.Line(depth + 1, "auto rows = [&](auto contig) {");
    e_.Line(depth + 2, "constexpr bool kContig = decltype(contig)::value;");
    // The fast mode pays off over whole vectors of contiguous elements; elsewhere (and in the
    // strided specialization, which is compiled but rarely run) the loop is exact only.
    const bool fast = exact_ && shape_.cols() >= kMinFastCols;
    if (exact_ && !fast) e_.Line(depth + 2, "constexpr bool kExact = true;");
    e_.Line(depth + 2, "for (int64_t r = 0; r < vr; ++r) {");
    for (const std::string& w : windows_)
      e_.Line(
          depth + 3,
          fmt::format("const char* {0}_row = {0}.base + r * {0}.row_stride * {0}.elem_bytes;", w));
    if (segs_.size() == 1 && segs_[0].call.empty() && reduce_.fn.empty() && prefetch_.empty() &&
        !fast && stream_.window.empty()) {
      e_.Line(depth + 3, "for (int64_t c = 0; c < vc; ++c) {");
      for (const std::string& b : segs_[0].lines) e_.Line(depth + 4, b);
      e_.Line(depth + 3, "}");
    } else {
      for (const std::string& b : buffers_) e_.Line(depth + 3, b);
      if (!reduce_.fn.empty())
        e_.Line(depth + 3, fmt::format("pc::vred::RowAcc<{}> acc;", reduce_.fn));
      if (fast) {  // the chunk in either mode; true: it has a NaN result (fast mode only)
        e_.Line(depth + 3, "auto chunk = [&](auto exact, int64_t c0, int64_t c1) {");
        e_.Line(depth + 4, "constexpr bool kExact = decltype(exact)::value;");
        e_.Line(depth + 4, "int nan = 0;");
        EmitChunkDst(depth + 4);
        for (const auto& [x, unless] : exits_)
          segs_.back().lines.push_back(
              fmt::format("if constexpr (!kExact{}) nan |= pc::IsNaN({});", unless, x));
        EmitSegments(depth + 4);
        e_.Line(depth + 4, "return nan != 0;");
        e_.Line(depth + 3, "};");
      }
      if (!stream_.window.empty())
        e_.Line(depth + 3, fmt::format("pc::RowStream {0}_out(const_cast<char*>({0}_row));",
                                       stream_.window));
      e_.Line(depth + 3, fmt::format("for (int64_t c0 = 0; c0 < vc; c0 += {}) {{", kChunk));
      e_.Line(depth + 4, fmt::format("const int64_t c1 = std::min<int64_t>(vc, c0 + {});", kChunk));
      for (const auto& [w, further] : prefetch_)
        e_.Line(depth + 4, fmt::format("if ({0}_ok) pc::Prefetch({0}, r, c0, c1{1});", w,
                                       further ? fmt::format(", {}", further) : ""));
      if (fast) {
        e_.Line(depth + 4, "if constexpr (kContig) {");
        e_.Line(depth + 5,
                "if (chunk(std::false_type{}, c0, c1)) chunk(std::true_type{}, c0, c1);");
        e_.Line(depth + 4, "} else {");
        e_.Line(depth + 5, "chunk(std::true_type{}, c0, c1);");
        e_.Line(depth + 4, "}");
      } else {
        EmitChunkDst(depth + 4);
        EmitSegments(depth + 4);
      }
      if (!stream_.window.empty())
        e_.Line(depth + 4, fmt::format("if (kContig && {0}_stream) {0}_out.Put(reinterpret_cast<"
                                       "const char*>({1}), (c1 - c0) * {2});",
                                       stream_.window, stream_.buf, stream_.bytes));
      if (!reduce_.fn.empty())
        e_.Line(depth + 4, fmt::format("acc.Add({}, c1 - c0);", reduce_.in));
      e_.Line(depth + 3, "}");
      if (!stream_.window.empty())
        e_.Line(depth + 3,
                fmt::format("if (kContig && {0}_stream) {0}_out.Finish();", stream_.window));
      if (!reduce_.fn.empty())
        e_.Line(depth + 3, fmt::format("{}.v[r] = pc::RoundTo<{}>(acc.Result());", reduce_.dest,
                                       reduce_.dtype));
    }
    e_.Line(depth + 2, "}");
    e_.Line(depth + 1, "};");
    e_.Line(depth + 1,
            fmt::format("if ({}) rows(std::true_type{{}}); else rows(std::false_type{{}});",
                        contiguous));
    if (!stream_.window.empty())
      e_.Line(depth + 1, fmt::format("if ({}_stream) pc::StreamFence();", stream_.window));
    if (!dest.empty())
      e_.Line(depth + 1, fmt::format("pc::SetValid({}, vr, {});", dest,
                                     reduce_.fn.empty() ? "vc" : "1"));
    e_.Line(depth, "}");
  }

 private:
  std::string Fresh(const char* p) { return fmt::format("{}{}_{}", p, id_, counter_++); }

  // fn(y, z) computing in dtype d: a float Add or Mul in the chunk's mode (pc::Eval).
  std::string Apply(const std::string& fn, const std::string& y, const std::string& z, DType d) {
    if (!IsFloat(d) || (fn != "pc::FnAdd" && fn != "pc::FnMul"))
      return fmt::format("{}::F({}, {})", fn, y, z);
    exact_ = true;
    return fmt::format("pc::Eval<kExact, {}>({}, {})", fn, y, z);
  }

  // The per-element loops of the segments, each followed by its vector form.
  void EmitSegments(int depth) {
    for (const Seg& seg : segs_) {
      e_.Line(depth, "for (int64_t c = c0; c < c1; ++c) {");
      for (const std::string& b : seg.lines) e_.Line(depth + 1, b);
      e_.Line(depth, "}");
      if (!seg.call.empty()) e_.Line(depth, seg.call);
    }
  }
  int Segment() const { return static_cast<int>(segs_.size()) - 1; }

  // Where the chunk's store writes: the chunk buffer, or the row from column c0 on.
  void EmitChunkDst(int depth) {
    if (stream_.window.empty()) return;
    e_.Line(depth, fmt::format("char* const {0}_dst = !kContig ? const_cast<char*>({0}_row) : "
                               "{0}_stream ? reinterpret_cast<char*>({1}) : "
                               "const_cast<char*>({0}_row) + c0 * {2};",
                               stream_.window, stream_.buf, stream_.bytes));
  }

  // A per-element read (of a tile or a window): later segments read again rather than buffer.
  Elem Read(const std::string& expr) {
    const std::string x = Fresh("e");
    Body(fmt::format("const auto {} = {};", x, expr));
    return {x, Segment(), expr};
  }

  // A chunk buffer of `type`, declared once per row.
  std::string Buffer(const std::string& type) {
    const std::string b = Fresh("buf");
    buffers_.push_back(fmt::format("alignas(64) {} {}[{}];", type, b, kChunk));
    return b;
  }

  // The name of `el` in the current segment: itself, read again, or carried from its segment
  // through a chunk buffer (the memo is updated, so each value crosses once).
  std::string InSegment(Elem& el) {
    if (el.segment == Segment()) return el.name;
    const std::string x = Fresh("e");
    if (!el.reread.empty()) {
      Body(fmt::format("const auto {} = {};", x, el.reread));
    } else {
      const std::string buf = Buffer(el.type);
      segs_[el.segment].lines.push_back(fmt::format("{}[c - c0] = {};", buf, el.name));
      Body(fmt::format("const auto {} = {}[c - c0];", x, buf));
    }
    el.name = x;
    el.segment = Segment();
    return x;
  }

  Emitter& e_;
  const ir::Type& shape_;
  const int id_;
  int counter_ = 0;
  std::vector<std::string> pre_;      // before the loop
  std::vector<Seg> segs_{1};          // per element, one loop per segment
  std::vector<std::string> buffers_;  // chunk buffers, declared per row
  std::vector<std::string> windows_;  // inlined loads and the store: "w<k>" names
  // Windows prefetched per chunk, each with pc::Prefetch's `further`.
  std::vector<std::pair<std::string, int64_t>> prefetch_;
  // Elements that leave the loop, checked for NaN (unless the condition after `!kExact` fails).
  std::vector<std::pair<std::string, std::string>> exits_;
  bool exact_ = false;                 // whether a line depends on kExact (the chunk's mode)
  struct {
    std::string window, buf, bytes;  // window empty: the loop does not stream its store
  } stream_;
  // The last f32 vector form: its result element, and its call's text before and after the
  // output.
  struct {
    std::string x, head, tail;
  } vector_result_;
  std::unordered_map<const ir::ValueNode*, Elem> elem_;
  struct {
    std::string fn, dest, dtype, where;  // fn empty: not a reduction
    std::string in;                      // the chunk's elements: a buffer, or the row in place
  } reduce_;
};

bool Emitter::FusedRoot(const ir::OpStmt& op) const {
  const auto& a = op.args();
  switch (ir::FamilyOf(op.op())) {
    case ir::OpFamily::kRowReduce: return Inlined(a[0].value());
    case ir::OpFamily::kStore: return Inlined(a[0].value());
    default:
      if (!passes::FusibleOp(op) || Inlined(op.result())) return false;
      for (const auto& x : a)
        if (x.is_value() && Inlined(x.value())) return true;
      return false;
  }
}

void Emitter::PlanFusion(const ir::IncoreStmt& scope) {
  ir::ForEachOp(scope.body(), [&](const ir::OpStmt& op) {
    if (passes::Fused(op)) inlined_.insert(op.result().get());
  });
  // The fused loop just before a fused store over the same shape prefetches the store's lines
  // (when its tensor and offsets are defined by then) and, in a sequential loop's body, the rows
  // each load of the body reads on the next trip: a load whose row offset is the induction
  // variable plus a value from outside reads `step` rows further on.
  std::function<void(const ir::Block&, const ir::ForStmt*)> plan = [&](const ir::Block& block,
                                                                      const ir::ForStmt* loop) {
    std::vector<std::pair<const ir::OpStmt*, int64_t>> next;
    if (loop && loop->loop_kind() == ir::LoopKind::kSequential && loop->step().is_int()) {
      std::unordered_set<const ir::ValueNode*> shifted = {loop->iv().get()};
      for (const ir::StmtRef& s : block) {
        if (s->kind() != ir::StmtKind::kOp) continue;
        const auto& op = ir::As<ir::OpStmt>(*s);
        if (op.op() == ir::OpCode::kArithAdd)
          for (const ir::Operand& a : op.args())
            if (a.is_value() && a.value() == loop->iv()) shifted.insert(op.result().get());
        const int rank = ir::FamilyOf(op.op()) == ir::OpFamily::kLoad
                             ? op.args()[0].type().rank() : 0;
        if (rank >= 2) {
          const ir::Operand& row = op.args()[rank - 1];
          if (row.is_value() && shifted.count(row.value().get()))
            next.push_back({&op, loop->step().int_value()});
        }
      }
    }
    std::vector<std::pair<const ir::OpStmt*, int>> roots;  // fused loops and their positions
    std::unordered_map<const ir::ValueNode*, int> defined;  // value -> its op's position
    int pos = 0;
    for (const ir::StmtRef& s : block) {
      ++pos;
      ir::ForEachBody(*s, [&](const ir::Block& b) {
        plan(b, s->kind() == ir::StmtKind::kFor ? &ir::As<ir::ForStmt>(*s) : nullptr);
      });
      if (s->kind() != ir::StmtKind::kOp) {
        roots.clear();
        continue;
      }
      const auto& op = ir::As<ir::OpStmt>(*s);
      const bool store = ir::FamilyOf(op.op()) == ir::OpFamily::kStore;
      if (FusedRoot(op) && !store) roots.push_back({&op, pos});
      if (FusedRoot(op) && store) {  // the last loop over its shape after its offsets are defined
        const ir::Type& shape = LoopShape(op);
        for (auto it = roots.rbegin(); it != roots.rend(); ++it) {
          const ir::OpStmt& r = *it->first;
          const ir::Type& at = LoopShape(r);
          if (at.rows() != shape.rows() || at.cols() != shape.cols()) continue;
          // An f32 store after another pass over its rows streams when its tensor is large
          // (bf16 row kernels ran 3-11 % slower streaming: at half the bytes per element they
          // are not memory-bound here; and a one-pass chain ran 3-6 % slower). Integer
          // stores are not fused loops.
          if (shape.cols() >= FusedLoop::kMinFastCols && shape.dtype() == DType::kF32)
            streamable_.insert(&op);
          bool ready = true;
          for (size_t i = 1; i < op.args().size(); ++i) {
            const ir::Operand& a = op.args()[i];
            auto d = a.is_value() ? defined.find(a.value().get()) : defined.end();
            ready &= d == defined.end() || d->second < it->second;
          }
          if (ready) prefetches_[&r] = {&op, next};
          break;
        }
      }
      for (const ir::Value& r : op.results()) defined[r.get()] = pos;
    }
  };
  plan(scope.body(), nullptr);
}

bool Emitter::EmitFusedRoot(const ir::OpStmt& root, int depth) {
  if (!FusedRoot(root)) return false;
  const ir::OpFamily family = ir::FamilyOf(root.op());
  const bool store = family == ir::OpFamily::kStore;
  const ir::Type& shape = LoopShape(root);
  FusedLoop loop(*this, shape);
  if (auto it = prefetches_.find(&root); it != prefetches_.end()) loop.Prefetch(it->second);
  if (store) {
    // The stored value is used by the store alone in this loop: Put rounds it.
    const ir::Value& v = root.args()[0].value();
    const ir::OpStmt& producer = *producer_.at(v.get());
    const std::string result = ir::FamilyOf(producer.op()) == ir::OpFamily::kLoad
                                   ? loop.Operand(root.args()[0], shape.dtype(), root)
                                   : loop.Element(producer, /*round=*/false).name;
    loop.Store(root, result);
    loop.Emit(depth, "");
    return true;
  }
  const std::string dest = Name(root.result());
  if (family == ir::OpFamily::kRowReduce) {
    uses_reduce_ = true;
    DeclareTile(depth, root.result(), dest);
    loop.Reduce(Functor(root.op()), root, shape.dtype(), dest,
                DTypeEnum(root.result()->type.dtype()), Where(root, ir::OpName(root.op())));
    loop.Emit(depth, dest);
    return true;
  }
  DeclareTile(depth, root.result(), dest);
  loop.WriteTile(dest, loop.Element(root).name);
  loop.Emit(depth, dest);
  return true;
}

}  // namespace ptox::targets::cpu
