// Op table built from ops.def.
#include "ops/ops.h"

#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/quant.h"

namespace ptox::ir {
namespace {

constexpr OpInfo kOps[] = {
#define PTOX_OP(e, name, family, fn, attrs, cost) \
  {name, OpFamily::k##family, #fn, AttrSet::k##attrs, OpCost::k##cost},
#include "ops/ops.def"
#undef PTOX_OP
};

// The validators of op_attrs.def's Values column. The quant formats are kernels/quant.h's list,
// so a new format needs no line here.
std::span<const std::string_view> QuantFormat() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string_view>();
    for (quant::Format f : quant::kFormats) v->emplace_back(quant::FormatName(f));
    return v;
  }();
  return *names;
}
std::span<const std::string_view> SumOrMax() {
  static constexpr std::string_view kNames[] = {"sum", "max"};
  return kNames;
}

// The words op_attrs.def's rows are written in.
constexpr AttrKind Bool = AttrKind::kBool, Int = AttrKind::kInt, Float = AttrKind::kFloat,
                   String = AttrKind::kString;
constexpr std::nullptr_t Any = nullptr;
constexpr bool Mark = true;

}  // namespace

const OpInfo& GetOpInfo(OpCode op) { return kOps[static_cast<size_t>(op)]; }

std::string_view AttrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::kBool: return "bool";
    case AttrKind::kInt: return "int";
    case AttrKind::kFloat: return "float";
    case AttrKind::kString: return "string";
  }
  return "?";
}

std::span<const AttrSpec> OpAttrs(OpCode op) {
  // Indexed by AttrSet; never destroyed, as LookupOp's table.
  static const auto* sets = new std::vector<std::vector<AttrSpec>>{
#define PTOX_ATTRS(set, ...) {__VA_ARGS__},
#include "ops/op_attrs.def"
#undef PTOX_ATTRS
  };
  return (*sets)[static_cast<size_t>(GetOpInfo(op).attrs)];
}

const AttrSpec* FindAttr(OpCode op, std::string_view name) {
  for (const AttrSpec& a : OpAttrs(op))
    if (a.name == name) return &a;
  return nullptr;
}

std::optional<OpCode> LookupOp(std::string_view name) {
  static const auto* table = [] {
    auto* m = new std::unordered_map<std::string_view, OpCode>();
    for (size_t i = 0; i < std::size(kOps); ++i) (*m)[kOps[i].name] = static_cast<OpCode>(i);
    return m;
  }();
  auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  return it->second;
}

bool HasExplicitType(OpFamily f) {
  return f == OpFamily::kLoad || f == OpFamily::kFull || f == OpFamily::kCast ||
         f == OpFamily::kReshape || f == OpFamily::kSlice || f == OpFamily::kScalarCast ||
         f == OpFamily::kBroadcast || f == OpFamily::kTensorCast || f == OpFamily::kTensorReshape ||
         f == OpFamily::kTensorSlice || f == OpFamily::kTensorEmpty;
}

int IndexedOperandPos(OpFamily f) {
  switch (f) {
    case OpFamily::kLoad:
    case OpFamily::kSlice:
    case OpFamily::kExtract:
    case OpFamily::kTensorSlice: return 0;
    case OpFamily::kStore:
    case OpFamily::kAssemble:
    case OpFamily::kTensorStore: return 1;
    default: return -1;
  }
}

}  // namespace ptox::ir
