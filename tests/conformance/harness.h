// Differential conformance harness: runs one program on a CPU target and on the interpreter over
// identical guarded buffers and checks bit identity (or a documented error bound) per output.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ptox/builder.h"
#include "ptox/ptox.h"

namespace ptox::conformance {

inline constexpr int kGuardBytes = 64;
inline constexpr uint8_t kGuardByte = 0xA7;   // around every buffer
inline constexpr uint8_t kUnwrittenByte = 0x5C;  // output elements and stride gaps before a run

// How input values are drawn. Every kind mixes in its dtype's edge cases (see values.cc).
enum class Values {
  kGeneral,  // floats: normal(0, 2) plus NaN / Inf / -0 / subnormal / huge / rounding ties;
             // ints: full range including MIN and MAX; bool: bytes 0, 1, 2, 255
  kNaNEven,  // kGeneral with NaNs only where r + c is even (kNaNOdd: odd), so that two inputs
  kNaNOdd,   // never hold NaNs at the same element (payload choice: ErrorsTest.NanPayload*)
  kNoNaN,    // kGeneral without NaNs (a second operand next to NaN-holding inputs)
  kTiny,     // ints in the i8 range (-128..127) for narrowing casts (floats: kGeneral)
  kSmall,    // ints small enough that add / sub / mul of two never overflow (floats: kGeneral)
  kNonZero,  // kSmall without zeros (integer divisors)
  kReduce,   // all-negative rows and columns, ties, +-0 rows, one NaN / Inf in a few rows and
             // columns, no value whose sum could overflow (so reordered sums keep their class)
  kReduceNormal,  // kReduce without subnormals: the inputs on which the CPU's bf16 matmul
                  // takes its dot-product instructions (kernels/cpu/matmul_bf16.h)
  kIds,           // ints in [0, 7): tensor.gather ids of a table of at least 7 rows (floats:
                  // kGeneral)
};
// Generates the bytes of element (r, c) of a tensor of `dtype` into `out`.
void GenerateValue(DType dtype, Values kind, int64_t r, int64_t c, std::mt19937& rng, char* out);

// Where a tensor lives inside its buffer: a byte offset from a 64-byte aligned base, and
// contiguous or strided (gaps between rows and between elements).
struct Layout {
  std::string name;
  int byte_offset = 0;
  bool strided = false;
};
// The layouts to try for a dtype: aligned, +1 element, odd / 2-byte misaligned, strided.
std::vector<Layout> LayoutsFor(DType dtype);

// A tensor view inside a buffer with guard bytes on both sides.
class GuardedTensor {
 public:
  GuardedTensor(DType dtype, std::vector<int64_t> shape, const Layout& layout, int salt);
  Tensor view() const;
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  // Byte address of the element with this row-major linear index.
  char* Elem(int64_t linear);
  const char* Elem(int64_t linear) const;
  bool GuardsIntact() const;
  uint64_t Hash() const;
  // Data bytes that are no element (stride gaps); they must never change.
  bool GapsEqual(const GuardedTensor& other) const;
  // The bytes the view covers (elements and stride gaps), without guards and alignment slack.
  std::string_view span() const {
    return {reinterpret_cast<const char*>(bytes_.data()) + data_, span_};
  }
  void set_span(std::string_view b) { std::memcpy(bytes_.data() + data_, b.data(), span_); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  DType dtype_;
  std::vector<int64_t> shape_, strides_;
  bool strided_ = false;
  std::vector<uint8_t> bytes_;
  size_t data_ = 0, span_ = 0;  // offset of element 0 and bytes covered by the view
  std::vector<bool> is_elem_;   // per byte of the span: part of an element
};

// How an output is compared with the interpreter.
struct Rule {
  enum Kind { kBits, kSumBound } kind = kBits;
  // kSumBound: |target - interp| <= 2 * n * 2^-24 * abs[k] (+ one ulp of a bf16 / f16 output),
  // where abs is the interpreter's value of output `abs_output` (the same reduction over |x|):
  // docs/ops.md bounds each result's distance from the exact sum by n * eps * sum|x|, so two
  // conforming results differ by at most twice that.
  std::string abs_output;
  std::function<int64_t(const std::map<std::string, int64_t>&)> n;
};

// A program plus how to feed and judge it.
struct Spec {
  std::string name;
  Program program;
  std::map<std::string, Values> values;   // per input tensor (default kGeneral)
  std::map<std::string, Rule> rules;      // per output (default kBits)
  std::map<std::string, Arg> scalars;     // per scalar parameter
};

// One run: symbol values, a layout for every tensor and a data seed.
struct RunConfig {
  std::map<std::string, int64_t> dims;
  Layout layout;
  uint32_t seed = 1;
  // Expected failure: the interpreter must fail with kRuntime (else it must succeed).
  bool expect_runtime_error = false;
};
std::string Describe(const RunConfig& config);

// Runs `spec` on `target` and on the interpreter with identical inputs and checks (gtest
// expectations): same status; inputs and guard bytes untouched; outputs bit-identical or within
// their rule's bound, unwritten elements and stride gaps unchanged.
void CheckConforms(const Spec& spec, const RunConfig& config, const std::string& target);

// The CPU targets this host runs (AvailableTargets() without "interp").
std::vector<std::string> CpuTargets();

// Size pairs (rows, cols) for a loop over rows x cols tiles: 1, tile-1, tile, tile+1, 19, 35 and
// zero-size tensors.
std::vector<std::pair<int64_t, int64_t>> EdgeSizes(int64_t tile_rows, int64_t tile_cols);

// Builds a program; throws (failing the running test) when it does not verify.
Program BuildOrDie(FunctionBuilder& f);

// A name usable in a gtest parameter name.
std::string Sanitize(std::string s);

}  // namespace ptox::conformance
