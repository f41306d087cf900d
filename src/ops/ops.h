// Op codes and their static properties, generated from ops.def.
#pragma once

#include <optional>
#include <string_view>

namespace ptox::ir {

enum class OpCode : uint16_t {
#define PTOX_OP(e, name, family, fn) k##e,
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

struct OpInfo {
  std::string_view name;
  OpFamily family;
  std::string_view scalar_fn;  // the kernels/scalar.h function ("None" when not elementwise)
};

const OpInfo& GetOpInfo(OpCode op);
std::optional<OpCode> LookupOp(std::string_view name);
inline std::string_view OpName(OpCode op) { return GetOpInfo(op).name; }
inline OpFamily FamilyOf(OpCode op) { return GetOpInfo(op).family; }

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
