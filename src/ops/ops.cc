// Op table built from ops.def.
#include "ops/ops.h"

#include <array>
#include <string>
#include <unordered_map>

namespace ptox::ir {
namespace {

constexpr OpInfo kOps[] = {
#define PTOX_OP(e, name, family, fn) {name, OpFamily::k##family, #fn},
#include "ops/ops.def"
#undef PTOX_OP
};

}  // namespace

const OpInfo& GetOpInfo(OpCode op) { return kOps[static_cast<size_t>(op)]; }

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
