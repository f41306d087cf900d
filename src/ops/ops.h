// Op codes and their static properties, generated from ops.def.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ptox::ir {

enum class OpCode : uint16_t {
#define PTOX_OP(e, name, ...) k##e,
#include "ops/ops.def"
#undef PTOX_OP
};

enum class OpFamily : uint8_t {
  kLoad, kStore, kFull, kBinary, kUnary, kCompare, kSelect, kCast, kRowReduce, kColReduce,
  kRowArgmax, kRowExpand, kColExpand, kTranspose, kReshape, kSlice, kAssemble, kMatmul,
  kMatmulAcc, kBroadcast, kExtract, kCausalMask, kDequantize, kScalarBinary, kScalarCompare, kScalarSelect,
  kScalarCast, kAssert, kDim, kDistInfo, kDistCollective, kDistRma,
  // Tensor level.
  kTensorBinary, kTensorUnary, kTensorCast, kTensorCompare, kTensorSelect, kTensorCausalMask,
  kTensorReduce, kTensorArgmax, kTensorMatmul, kTensorReshape, kTensorTranspose, kTensorSlice,
  kTensorConcat, kTensorGather, kTensorEmpty, kTensorStore, kComposite, kTensorCollective,
};

// Tensor-level families (whole-tensor ops that convert-tensor-to-tile lowers).
inline bool IsTensorLevel(OpFamily f) { return f >= OpFamily::kTensorBinary; }

// The kind of an attribute's value, as the text form writes it.
enum class AttrKind : uint8_t { kBool, kInt, kFloat, kString };
std::string_view AttrKindName(AttrKind kind);  // "bool", "int", "float", "string"

// One attribute an op takes: a row of op_attrs.def.
struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  // A string attribute's validator: the strings it accepts (nullptr: any string).
  std::span<const std::string_view> (*values)() = nullptr;
  bool mark = false;  // set by a pass, never written by users (fuse-tiles' `fused`)
};

// ops.def's Attrs column: a set of op_attrs.def.
enum class AttrSet : uint8_t {
#define PTOX_ATTRS(set, ...) k##set,
#include "ops/op_attrs.def"
#undef PTOX_ATTRS
};

// ops.def's Cost column: an elementwise op's work per element (kNone: not elementwise).
enum class OpCost : uint8_t { kNone, kCheap, kModerate, kCostly };

struct OpInfo {
  std::string_view name;
  OpFamily family;
  std::string_view scalar_fn;  // the kernels/scalar.h function ("None" when not elementwise)
  AttrSet attrs;
  OpCost cost;
};

const OpInfo& GetOpInfo(OpCode op);
std::optional<OpCode> LookupOp(std::string_view name);
inline std::string_view OpName(OpCode op) { return GetOpInfo(op).name; }
inline OpFamily FamilyOf(OpCode op) { return GetOpInfo(op).family; }
inline OpCost CostOf(OpCode op) { return GetOpInfo(op).cost; }
// The attributes `op` takes, in op_attrs.def order; FindAttr: the one named `name`, or nullptr.
std::span<const AttrSpec> OpAttrs(OpCode op);
const AttrSpec* FindAttr(OpCode op, std::string_view name);

// Text format: ops whose result type cannot be inferred print it (`: tile<...>`).
bool HasExplicitType(OpFamily family);
// Indexed ops print `%t[%i, %j]` for the operand at this position (-1: plain operand list).
// load / slice / extract / tensor.slice: position 0; store / assemble / tensor.store: position 1
// (tensor.store's offsets are optional: without them it stores the whole tensor).
int IndexedOperandPos(OpFamily family);
// Ops that produce no SSA result (side effects only: a write, or a run-time check).
inline bool HasNoResult(OpFamily family) {
  return family == OpFamily::kStore || family == OpFamily::kTensorStore ||
         family == OpFamily::kAssert || family == OpFamily::kDistCollective ||
         family == OpFamily::kDistRma;
}
// The operand an op writes in place (a store's destination, an in-place collective's buffer, a
// put's window, a get's destination), or -1; dist.fence has none (callers check the arity).
inline int WrittenOperandPos(OpFamily family) {
  if (family == OpFamily::kStore || family == OpFamily::kTensorStore) return 1;
  return family == OpFamily::kDistCollective || family == OpFamily::kDistRma ? 0 : -1;
}
// Ops that communicate with the other ranks of a distributed run (outside incore scopes).
inline bool IsDistributed(OpFamily family) {
  return family == OpFamily::kDistInfo || family == OpFamily::kDistCollective ||
         family == OpFamily::kTensorCollective || family == OpFamily::kDistRma;
}

}  // namespace ptox::ir
