// Element-level semantics shared by tile and scalar ops: the ScalarFn of each op, checked integer
// arithmetic, f32 math via kernels/scalar.h, storage rounding and the cast rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "interp/value.h"
#include "ops/ops.h"

namespace ptox::interp {

// The ScalarFn column of ops.def: kernels/scalar_fns.def, plus kNone.
enum class Fn : uint8_t {
  kNone,
#define PTOX_SCALAR_FN(name, text) k##name,
#include "kernels/scalar_fns.def"
#undef PTOX_SCALAR_FN
};
Fn FnOf(ir::OpCode op);
std::string_view FnName(Fn fn);

// Integer ranges (bool: 0..1; index and i64: the full int64 range).
int64_t IntMin(DType d);
int64_t IntMax(DType d);
inline bool InRange(DType d, int64_t v) { return v >= IntMin(d) && v <= IntMax(d); }

// Rounds an f32 to the storage dtype (identity for f32, RNE to bf16 / f16 otherwise).
float RoundTo(DType d, float v);

enum class IntStatus : uint8_t { kOk, kOverflow, kDivByZero };
std::string_view IntStatusName(IntStatus s);

// Integer Add Sub Mul Div Rem Max Min in dtype `d` (Div / Rem floor); overflow of the type's
// range and division by zero are reported, never wrapped.
IntStatus IntBinary(Fn fn, DType d, int64_t a, int64_t b, int64_t* out);
// Integer Neg Abs Relu.
IntStatus IntUnary(Fn fn, DType d, int64_t a, int64_t* out);
bool IntCompare(Fn fn, int64_t a, int64_t b);

// f32 math through kernels/scalar.h (the caller rounds to bf16 / f16).
float FloatBinary(Fn fn, float a, float b);
float FloatUnary(Fn fn, float a);
bool FloatCompare(Fn fn, float a, float b);

// Casts (tile.cast and arith.cast). From any scalar to a float dtype: ints round to nearest f32
// then to bf16 / f16; bool gives 0 / 1; floats round RNE. To bool: nonzero (NaN included) -> 1.
// Float -> int truncates toward zero, saturates to the type range, NaN -> 0. Int -> int is
// range-checked: returns false when the value does not fit.
bool Cast(const Scalar& from, DType to, Scalar* out);

// One element of caller memory at `p` (any alignment), in its memory encoding: float dtypes widen
// exactly (bf16 / f16) and narrow with RNE; integer dtypes; bool reads nonzero as 1.
float ReadFloat(DType d, const char* p);
int64_t ReadInt(DType d, const char* p);
void WriteFloat(DType d, char* p, float v);
void WriteInt(DType d, char* p, int64_t v);

// "f32 1.5" / "i32 -3": for error messages.
std::string ToString(const Scalar& s);

}  // namespace ptox::interp
