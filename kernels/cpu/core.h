// The CPU tile library's core: dtypes, storage types, tiles with a valid region, the error
// context, and conversions between storage, f32 and scalars. Semantics follow src/interp exactly
// (the interpreter is the specification); elementwise math comes from kernels/scalar.h.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

#include "kernels/abi.h"
#include "kernels/scalar.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace ptox::cpu {

// f32 <-> f16 as scalar::F32ToF16 / F16ToF32 define them. F16C's vcvtps2ph (round to nearest
// even) and vcvtph2ps give the same bits for every input — checked over all 2^32 f32 and 2^16 f16
// values (NaN payloads, subnormals, the overflow and underflow ties included) — in one
// instruction instead of ~30 (a decode step's f16 cache append: 11 -> ~1 us per layer).
inline uint16_t F32ToF16(float x) {
#if defined(__F16C__)
  return static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  return scalar::F32ToF16(x);
#endif
}
inline float F16ToF32(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return scalar::F16ToF32(h);
#endif
}

// The orchestration ABI under the names generated code uses (pc::TaskDesc, ...).
using abi::AccessDesc;
using abi::AllocDesc;
using abi::CollectiveDesc;
using abi::CollectiveKind;
using abi::Arg;
using abi::DT;
using abi::ErrorBuf;
using abi::kMaxRank;
using abi::PackCache;
using abi::PackKey;
using abi::Runtime;
using abi::TaskDesc;
using abi::TensorArg;
using abi::ViewDesc;

// DT, the dtype enum, is part of the ABI (kernels/abi.h).
constexpr bool IsFloatDT(DT d) { return d == DT::kF32 || d == DT::kF16 || d == DT::kBF16; }

// How a tile of each dtype is held: floats as f32 (bf16 / f16 values exactly representable in
// their type), integers in their own width, bool as 0 / 1 bytes.
template <DT D> struct StorageOf { using type = float; };
template <> struct StorageOf<DT::kI8> { using type = int8_t; };
template <> struct StorageOf<DT::kI32> { using type = int32_t; };
template <> struct StorageOf<DT::kI64> { using type = int64_t; };
template <> struct StorageOf<DT::kIndex> { using type = int64_t; };
template <> struct StorageOf<DT::kBool> { using type = uint8_t; };
template <DT D> using Storage = typename StorageOf<D>::type;

// How an element sits in a tensor in memory (bf16 / f16 as their 16-bit patterns).
template <DT D> struct MemoryOf { using type = Storage<D>; };
template <> struct MemoryOf<DT::kBF16> { using type = uint16_t; };
template <> struct MemoryOf<DT::kF16> { using type = uint16_t; };
template <DT D> using Memory = typename MemoryOf<D>::type;

inline constexpr double kInf = std::numeric_limits<double>::infinity();
// A double of these bits (NaN immediates keep their sign and payload).
constexpr double DoubleFromBits(uint64_t u) { return __builtin_bit_cast(double, u); }

template <DT D> constexpr int64_t IntMin() {
  if constexpr (D == DT::kBool) return 0;
  else return std::numeric_limits<Storage<D>>::min();
}
template <DT D> constexpr int64_t IntMax() {
  if constexpr (D == DT::kBool) return 1;
  else return std::numeric_limits<Storage<D>>::max();
}

// An R x C tile whose top-left vr x vc elements are valid.
template <DT D, int R, int C>
struct Tile {
  static constexpr DT kDType = D;
  static constexpr int kRows = R, kCols = C;
  using S = Storage<D>;
  alignas(64) S v[R * C];
  int64_t vr = R, vc = C;
  S& at(int64_t r, int64_t c) { return v[r * C + c]; }
  const S& at(int64_t r, int64_t c) const { return v[r * C + c]; }
};

template <typename T> struct IsTile : std::false_type {};
template <DT D, int R, int C> struct IsTile<Tile<D, R, C>> : std::true_type {};

// Errors raised inside a kernel: the first one is kept and the kernel returns.
class Ctx {
 public:
  explicit Ctx(ErrorBuf* err) : err_(err) {}
  bool failed() const { return failed_; }
  int code() const { return 1; }
  __attribute__((format(printf, 2, 3))) void Error(const char* fmt, ...) {
    if (failed_) return;
    failed_ = true;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err_->message, sizeof(err_->message), fmt, ap);
    va_end(ap);
    err_->code = 1;
  }
  int Fail(const char* where, int64_t step) {
    Error("%s: step must be positive, got %lld", where, static_cast<long long>(step));
    return code();
  }

 private:
  ErrorBuf* err_;
  bool failed_ = false;
};

// The tiles of a task live in one arena per worker thread, at offsets plan-memory chose from tile
// liveness (tiles never live at once share bytes); it grows to the largest task a thread has run
// and is kept (the heap, not the thread's stack: large tiles cannot overflow it). Returns nullptr
// after reporting an error when the memory is not there.
inline char* Arena(Ctx& ctx, int64_t bytes) {
  struct Block {
    void* p = nullptr;
    int64_t n = 0;
    ~Block() { std::free(p); }
  };
  thread_local Block arena;
  if (bytes <= arena.n) return static_cast<char*>(arena.p);
  std::free(arena.p);
  arena.n = 0;
  arena.p = std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64));
  if (arena.p == nullptr) {
    ctx.Error("cannot allocate %lld bytes of tiles for a task", static_cast<long long>(bytes));
    return nullptr;
  }
  arena.n = bytes;
  return static_cast<char*>(arena.p);
}

// A tile constructed in place at `at`, an arena offset with kBytes of room (analysis::TileBytes
// computed them; the assert keeps that formula honest).
template <typename T, int64_t kBytes>
inline T& TileAt(char* at) {
  static_assert(sizeof(T) <= kBytes && alignof(T) <= 64, "tile plan smaller than the tile");
  return *::new (static_cast<void*>(at)) T;
}

// f32 -> the storage value of a float dtype (round to nearest even for bf16 / f16).
template <DT D>
inline float RoundTo(float x) {
  if constexpr (D == DT::kBF16) return scalar::Bf16ToF32(scalar::F32ToBf16(x));
  else if constexpr (D == DT::kF16) return F16ToF32(F32ToF16(x));
  else return x;
}

template <DT D>
inline Storage<D> FromMemory(Memory<D> m) {
  if constexpr (D == DT::kBF16) return scalar::Bf16ToF32(m);
  else if constexpr (D == DT::kF16) return F16ToF32(m);
  else if constexpr (D == DT::kBool) return m != 0 ? 1 : 0;
  else return m;
}
// kExact false: `s` is known not to be NaN (a fused loop's fast mode), so bf16 skips NaN's case.
template <DT D, bool kExact = true>
inline Memory<D> ToMemory(Storage<D> s) {
  if constexpr (D == DT::kBF16 && !kExact) return scalar::F32ToBf16NotNaN(s);
  else if constexpr (D == DT::kBF16) return scalar::F32ToBf16(s);
  else if constexpr (D == DT::kF16) return F32ToF16(s);
  else return s;
}

// Float -> integer dtype: truncate toward zero, saturate, NaN -> 0 (as the interpreter).
template <DT To>
inline int64_t FloatToInt(float v) {
  if (v != v) return 0;
  double t = __builtin_trunc(static_cast<double>(v));
  if (t >= 9223372036854775808.0) return IntMax<To>();
  if (t < -9223372036854775808.0) return IntMin<To>();
  int64_t i = static_cast<int64_t>(t);
  return i < IntMin<To>() ? IntMin<To>() : (i > IntMax<To>() ? IntMax<To>() : i);
}

// `v`, unknown to the optimizer. Scalars that reach tiles go through it so that the host
// compiler never folds arithmetic on constants: its folding (under -fno-trapping-math) makes
// +NaN of an invalid operation (inf - inf) where the hardware, and so the interpreter, makes
// x86's default -NaN.
template <typename T>
inline T Opaque(T v) {
  asm volatile("" : "+m"(v));
  return v;
}

// Any scalar (C++ int64_t / double / float / bool) converted to dtype D's storage with the
// interpreter's cast rules; integers that do not fit raise an error naming `where` (the op).
// Float results are opaque to the optimizer (see Opaque).
template <DT D, typename X>
inline Storage<D> ScalarAs(Ctx& ctx, X x, const char* where) {
  if constexpr (IsFloatDT(D)) {
    return Opaque(RoundTo<D>(static_cast<float>(x)));
  } else if constexpr (D == DT::kBool) {
    return x != X(0) ? 1 : 0;
  } else if constexpr (std::is_floating_point_v<X>) {
    return static_cast<Storage<D>>(FloatToInt<D>(static_cast<float>(x)));
  } else {
    int64_t i = static_cast<int64_t>(x);
    if (i < IntMin<D>() || i > IntMax<D>()) {
      ctx.Error("%s: value %lld does not fit in the operand type", where,
                static_cast<long long>(i));
      return 0;
    }
    return static_cast<Storage<D>>(i);
  }
}

// arith.cast / tile.cast element rule From -> To; false when an integer does not fit.
template <DT From, DT To>
inline bool CastValue(Storage<From> x, Storage<To>* out) {
  if constexpr (IsFloatDT(To)) {
    *out = RoundTo<To>(static_cast<float>(x));
  } else if constexpr (To == DT::kBool) {
    *out = x != Storage<From>(0) ? 1 : 0;
  } else if constexpr (IsFloatDT(From)) {
    *out = static_cast<Storage<To>>(FloatToInt<To>(x));
  } else {
    int64_t i = static_cast<int64_t>(x);
    if (i < IntMin<To>() || i > IntMax<To>()) return false;
    *out = static_cast<Storage<To>>(i);
  }
  return true;
}

// Scalar values in generated code: every integer dtype is an int64_t, floats are float.
template <DT D>
using ScalarC = std::conditional_t<IsFloatDT(D), float, std::conditional_t<D == DT::kBool, bool, int64_t>>;

// Iterations of `for iv = lb to ub step step` (0 when it runs none), for flop estimates.
inline int64_t TripCount(int64_t lb, int64_t ub, int64_t step) {
  if (step <= 0 || ub <= lb) return 0;
  return static_cast<int64_t>((static_cast<__int128>(ub) - lb + step - 1) / step);
}

}  // namespace ptox::cpu
