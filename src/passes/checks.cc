// Run-time checks kept by lowerings (see checks.h).
#include "passes/checks.h"

namespace ptox::passes::checks {
namespace {

using ir::OpCode;

bool IsInt(const ir::Operand& o, int64_t v) { return o.is_int() && o.int_value() == v; }

ir::Operand Compare(BlockWriter& w, OpCode op, const ir::Operand& a, const ir::Operand& b) {
  return w.Op(op, {a, b}, {}, {}, "ok");
}

}  // namespace

std::string ShapeHoles(const Shape& shape) {
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d) s += d ? "x{}" : "{}";
  return s;
}

ir::Operand Or(BlockWriter& w, const ir::Operand& a, const ir::Operand& b) {
  return w.Op(OpCode::kArithSelect, {a, a, b}, {}, {}, "ok");
}

ir::Operand And(BlockWriter& w, const ir::Operand& a, const ir::Operand& b) {
  return w.Op(OpCode::kArithSelect, {a, b, a}, {}, {}, "ok");
}

void Assert(BlockWriter& w, const ir::Operand& ok, std::string_view op, std::string msg,
            std::vector<ir::Operand> values) {
  std::vector<ir::Operand> args = {ok};
  args.insert(args.end(), values.begin(), values.end());
  w.Op(OpCode::kArithAssert, std::move(args), {{"op", std::string(op)}, {"msg", std::move(msg)}});
}

void Window(BlockWriter& w, std::string_view op, int dim, const ir::Operand& offset,
            const ir::Operand& size, const Shape& shape) {
  const ir::Operand& extent = shape[dim];
  if (offset.is_int() && extent.is_int() && size.is_int() && offset.int_value() >= 0 &&
      offset.int_value() <= extent.int_value() - size.int_value())
    return;  // holds statically (the type rule rejects the static failures)
  // offset <= extent - size, with extent - size computed first: it cannot overflow (extent and
  // size are in [0, 2^48]), while offset + size could for a huge offset.
  ir::Operand limit = extent.is_int() && size.is_int()
                          ? ir::Operand::Int(extent.int_value() - size.int_value())
                          : w.Op(OpCode::kArithSub, {extent, size});
  ir::Operand ok = Compare(w, OpCode::kArithLe, offset, limit);
  if (!offset.is_int()) ok = And(w, Compare(w, OpCode::kArithGe, offset, ir::Operand::Int(0)), ok);
  std::vector<ir::Operand> values = {offset};
  if (!size.is_int()) values.push_back(size);
  values.insert(values.end(), shape.begin(), shape.end());
  const std::string size_text = size.is_int() ? std::to_string(size.int_value()) : "{}";
  Assert(w, ok, op,
         "offset {} + size " + size_text + " is out of bounds in dim " + std::to_string(dim) +
             " of a tensor of shape " + ShapeHoles(shape),
         std::move(values));
}

void NonEmptyAxis(BlockWriter& w, std::string_view op, std::string_view fn, int axis,
                  const Shape& shape) {
  const ir::Operand& len = shape[axis];
  if (len.is_int() && len.int_value() > 0) return;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int>(d) != axis && IsInt(shape[d], 0)) return;  // the result is empty
  ir::Operand ok = Compare(w, OpCode::kArithGt, len, ir::Operand::Int(0));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int>(d) == axis || shape[d].is_int()) continue;
    ok = Or(w, ok, Compare(w, OpCode::kArithEq, shape[d], ir::Operand::Int(0)));
  }
  Assert(w, ok, op,
         std::string(fn) + " over the empty axis " + std::to_string(axis) +
             " of a tensor of shape " + ShapeHoles(shape),
         shape);
}

void SameSize(BlockWriter& w, std::string_view op, const ir::Operand& a, const ir::Operand& b,
              std::string msg) {
  if (a == b || (a.is_int() && b.is_int() && a.int_value() == b.int_value())) return;
  Assert(w, Compare(w, OpCode::kArithEq, a, b), op, std::move(msg), {a, b});
}

}  // namespace ptox::passes::checks
