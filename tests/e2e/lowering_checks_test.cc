// Tensor programs whose lowering once lost a symbolic size, a rounding step or a run-time check
// (silent wrong results on compiled targets): each runs on every target against the interpreter,
// or must fail on every target with the interpreter's error, naming the op the user wrote.
#include <gtest/gtest.h>

#include "compare.h"

namespace ptox::testing {
namespace {

std::string Typed(std::string text, const std::string& dtype) {
  for (size_t at = text.find("f32"); at != std::string::npos; at = text.find("f32", at + 1))
    text.replace(at, 3, dtype);
  return text;
}

// 1 / C of a symbolic C was folded to 1 / 0 = inf (rmsnorm all zeros, layernorm all NaN).
TEST(SymbolicNorms, MatchTheInterpreter) {
  const std::string rms = R"(
func @rmsnorm(%x: in tensor<{N}x{D}xf32>, %w: in tensor<{D}xf32>, %y: out tensor<{N}x{D}xf32>) {
  %r = tensor.rmsnorm %x, %w {eps = 1e-6}
  tensor.store %r, %y
}
)";
  const std::string ln = R"(
func @ln(%x: in tensor<{N}x{D}xf32>, %w: in tensor<{D}xf32>, %b: in tensor<{D}xf32>,
         %y: out tensor<{N}x{D}xf32>) {
  %r = tensor.layernorm %x, %w, %b
  tensor.store %r, %y
}
)";
  for (std::string dtype : {"f32", "bf16", "f16"}) {
    for (const std::string& text : {rms, ln}) {
      Program prog = Parse(Typed(text, dtype));
      for (const Dims& dims : {Dims{{"N", 5}, {"D", 1031}}, Dims{{"N", 1}, {"D", 768}},
                               Dims{{"N", 3}, {"D", 1}}})
        CheckAllTargets(prog, dims, dtype + " D=" + std::to_string(dims.at("D")));
    }
  }
}

// A bf16 / f16 sum longer than one tile rounded every tile's partial sum to the dtype.
TEST(LongNarrowSums, AccumulateInF32) {
  Program rows = Parse(R"(
func @f(%x: in tensor<3000x4xbf16>, %y: out tensor<4xbf16>) {
  %u = tensor.sum %x {axis = 0}
  tensor.store %u, %y
}
)");
  CheckAllTargets(rows, {}, "axis 0");
  Program cols = Parse(R"(
func @f(%x: in tensor<4x{N}xf16>, %y: out tensor<4xf16>) {
  %u = tensor.sum %x {axis = -1}
  tensor.store %u, %y
}
)");
  CheckAllTargets(cols, {{"N", 3001}}, "symbolic axis -1");
}

// An f32 scalar operand of a bf16 tensor op is converted to bf16 (it did not compile).
TEST(ScalarOperands, ConvertToTheTensorDtype) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{N}x8xbf16>, %s: in f32, %y: out tensor<{N}x8xbf16>) {
  %u = tensor.mul %x, %s
  tensor.store %u, %y
}
)");
  CheckAllTargets(prog, {{"N", 5}}, "bf16 * f32 scalar", {{"s", 0.3}});
}

// max / min over an empty axis of a non-empty result returned -inf / +inf on compiled targets.
TEST(EmptyAxisReductions, FailEverywhere) {
  Program axis0 = Parse(R"(
func @f(%x: in tensor<{N}x5xf32>, %y: out tensor<5xf32>) {
  %r = tensor.reduce_max %x {axis = 0}
  tensor.store %r, %y
}
)");
  ExpectRuntimeErrorEverywhere(axis0, {{"N", 0}}, {"reduce_max", "empty axis 0", "0x5"});
  Program last = Parse(R"(
func @f(%x: in tensor<3x{N}xf32>, %y: out tensor<3xf32>) {
  %r = tensor.reduce_min %x {axis = -1}
  tensor.store %r, %y
}
)");
  ExpectRuntimeErrorEverywhere(last, {{"N", 0}}, {"reduce_min", "empty axis 1", "3x0"});
  Program softmax = Parse(R"(
func @f(%x: in tensor<3x{N}xf32>, %y: out tensor<3x{N}xf32>) {
  %r = tensor.softmax %x
  tensor.store %r, %y
}
)");
  ExpectRuntimeErrorEverywhere(softmax, {{"N", 0}}, {"empty axis 1", "3x0"});
  // An empty result needs no element: no error.
  Program empty = Parse(R"(
func @f(%x: in tensor<{M}x{N}xf32>, %y: out tensor<{M}xf32>) {
  %r = tensor.reduce_max %x {axis = -1}
  tensor.store %r, %y
}
)");
  CheckAllTargets(empty, {{"M", 0}, {"N", 0}}, "0x0");
}

// A dynamic slice window running past the end copied the rows in bounds and left the rest.
TEST(SliceBounds, DynamicOffsetsAreChecked) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{N}x8xf32>, %o: in index, %y: out tensor<4x8xf32>) {
  %r = tensor.slice %x[%o, 0] : tensor<4x8xf32>
  tensor.store %r, %y
}
)");
  CheckAllTargets(prog, {{"N", 9}}, "in bounds", {{"o", int64_t{5}}});
  for (int64_t o : {int64_t{6}, int64_t{-1}, int64_t{100000}, INT64_MAX})
    ExpectRuntimeErrorEverywhere(prog, {{"N", 9}}, {"tensor.slice", "out of bounds in dim 0"},
                                 {{"o", o}});
  Program whole = Parse(R"(
func @f(%x: in tensor<{N}x{K}xf32>, %y: out tensor<2x{K}xf32>) {
  %r = tensor.slice %x[3, 0] : tensor<2x{K}xf32>
  tensor.store %r, %y
}
)");
  CheckAllTargets(whole, {{"N", 5}, {"K", 3}}, "static offset, symbolic dim");
  ExpectRuntimeErrorEverywhere(whole, {{"N", 4}, {"K", 3}}, {"tensor.slice", "dim 0"});
}

}  // namespace
}  // namespace ptox::testing

namespace ptox::testing {
namespace {

// Every pair of dims of a rank-3 and a rank-4 tensor (split heads [T, H, D] -> [H, T, D] was
// "not supported" on compiled targets), symbolic and static, with partial tiles.
TEST(Transposes, EveryPairOfDimsMatchesTheInterpreter) {
  const std::vector<std::string> shapes = {"{T}x3x70", "2x{T}x3x5"};
  for (const std::string& shape : shapes) {
    std::vector<std::string> dims;
    for (size_t at = 0, next; at <= shape.size(); at = next + 1) {
      next = shape.find('x', at);
      if (next == std::string::npos) next = shape.size();
      dims.push_back(shape.substr(at, next - at));
    }
    for (size_t d0 = 0; d0 < dims.size(); ++d0) {
      for (size_t d1 = d0 + 1; d1 < dims.size(); ++d1) {
        std::vector<std::string> out = dims;
        std::swap(out[d0], out[d1]);
        std::string out_shape;
        for (const std::string& d : out) out_shape += (out_shape.empty() ? "" : "x") + d;
        Program prog = Parse("func @f(%x: in tensor<" + shape + "xbf16>, %y: out tensor<" +
                             out_shape + "xbf16>) {\n  %r = tensor.transpose %x {dim0 = " +
                             std::to_string(d0) + ", dim1 = " + std::to_string(d1) +
                             "}\n  tensor.store %r, %y\n}\n");
        for (int64_t t : {1, 67})
          CheckAllTargets(prog, {{"T", t}}, shape + " dims " + std::to_string(d0) + ", " +
                                                std::to_string(d1) + " T=" + std::to_string(t));
      }
    }
  }
}

}  // namespace
}  // namespace ptox::testing

namespace ptox::testing {
namespace {

// A symbol no parameter carries, bound by tensor.empty (an internal error on compiled targets),
// and a tensor.empty that gives a parameter's symbol another size (it computed on the
// parameter's rows and exited 0; the interpreter failed).
TEST(EmptySymbols, BindOrCheck) {
  Program fresh = Parse(R"(
func @f(%x: in tensor<{N}x8xf32>, %m: in index, %y: out tensor<{N}x8xf32>) {
  %e = tensor.empty %m : tensor<{M}x8xf32>
  %s = tensor.add %e, 1.0
  %t = tensor.sum %s {axis = 0, keepdims = true}
  %u = tensor.add %x, %t
  tensor.store %u, %y
}
)");
  CheckAllTargets(fresh, {{"N", 3}}, "fresh symbol", {{"m", int64_t{5}}});
  Program clash = Parse(R"(
func @f(%x: in tensor<{N}x8xf32>, %m: in index, %y: out tensor<{N}x8xf32>) {
  %e = tensor.empty %m : tensor<{N}x8xf32>
  %u = tensor.add %x, %e
  tensor.store %u, %y
}
)");
  CheckAllTargets(clash, {{"N", 3}}, "same size", {{"m", int64_t{3}}});
  ExpectRuntimeErrorEverywhere(clash, {{"N", 3}}, {"tensor.empty", "size 5 for symbol N"},
                               {{"m", int64_t{5}}});
}

// Concat along a symbolic axis (rejected before): the result names its size, a new symbol or a
// parameter's (checked).
TEST(SymbolicConcat, MatchesTheInterpreter) {
  Program into_param = Parse(R"(
func @f(%a: in tensor<{A}x3x8xbf16>, %b: in tensor<{B}x3x8xbf16>, %y: out tensor<{S}x3x8xbf16>) {
  %c = tensor.concat %a, %b {axis = 0} : tensor<{S}x3x8xbf16>
  tensor.store %c, %y
}
)");
  CheckAllTargets(into_param, {{"A", 3}, {"B", 300}, {"S", 303}}, "into an output");
  CheckAllTargets(into_param, {{"A", 0}, {"B", 1}, {"S", 1}}, "empty piece");
  ExpectRuntimeErrorEverywhere(into_param, {{"A", 3}, {"B", 5}, {"S", 9}},
                               {"tensor.concat", "8"});
  Program fresh = Parse(R"(
func @f(%a: in tensor<4x{A}xf32>, %b: in tensor<4x{B}xf32>, %y: out tensor<4x1xf32>) {
  %c = tensor.concat %a, %b, %a {axis = 1} : tensor<4x{S}xf32>
  %e = tensor.exp %c
  %s = tensor.reduce_max %e {axis = 1, keepdims = true}
  tensor.store %s, %y
}
)");
  CheckAllTargets(fresh, {{"A", 5}, {"B", 1030}}, "a new symbol, used after");
}

}  // namespace
}  // namespace ptox::testing

namespace ptox::testing {
namespace {

// Reshapes that split or merge dims anywhere, or regroup rows into other widths ("not supported
// on compiled targets yet" before, but for the last dim kept or split / merged statically).
TEST(Reshapes, AnyShapeMatchesTheInterpreter) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{N}x12", "{N}x3x4"},       {"{N}x2x6", "{N}x3x4"}, {"2x{N}x6", "{N}x12"},
      {"4x{N}", "{N}x4"},          {"{N}x{K}x6", "{K}x{N}x6"}, {"8x6", "4x12"},
      {"60", "3x4x5"},             {"3x4x5", "60"},        {"{N}x0", "0x{N}"}};
  for (const auto& [from, to] : cases) {
    Program prog = Parse("func @f(%x: in tensor<" + from + "xf16>, %y: out tensor<" + to +
                         "xf16>) {\n  %r = tensor.reshape %x : tensor<" + to +
                         "xf16>\n  tensor.store %r, %y\n}\n");
    Dims dims;
    if (from.find("{N}") != std::string::npos) dims["N"] = 7;
    if (from.find("{K}") != std::string::npos) dims["K"] = 3;
    CheckAllTargets(prog, dims, from + " -> " + to);
  }
}

}  // namespace
}  // namespace ptox::testing

namespace ptox::testing {
namespace {

// Found by the program fuzzer. A value smaller than its fusion group's domain (broadcast into
// it) and stored: it was stored once per tile of the broadcast dim, at those tiles' offsets (an
// out-of-bounds store for N = 2) and never for N = 0 (the output left unwritten).
TEST(FusedBroadcastOutputs, AreStoredOnceAtTheirShape) {
  Program prog = Parse(R"(
func @f(%x0: in tensor<{N}x1x1xf32>, %x2: in tensor<1x1xf32>, %out6: out tensor<1x1xf32>,
        %out8: out tensor<{N}x1x1xf32>) {
  %v3 = tensor.max %x0, %x2
  %v5 = tensor.mul %x2, 3.0
  tensor.store %v5, %out6
  tensor.store %v3, %out8
}
)");
  for (int64_t n : {0, 1, 2, 5}) CheckAllTargets(prog, {{"N", n}}, "N=" + std::to_string(n));
  Program feature = Parse(R"(
func @f(%x: in tensor<{N}x300xf32>, %b: in tensor<300xf32>, %y: out tensor<{N}x300xf32>,
        %b2: out tensor<300xf32>) {
  %c = tensor.mul %b, 2.0
  %s = tensor.add %x, %c
  tensor.store %s, %y
  tensor.store %c, %b2
}
)");
  for (int64_t n : {0, 3}) CheckAllTargets(feature, {{"N", n}}, "per-feature N=" + std::to_string(n));
}

// A tensor op whose result nothing uses was an internal error ('a standalone op has one
// output'); it still fails where the interpreter fails.
TEST(DeadTensorOps, CompileAndKeepTheirChecks) {
  Program dead = Parse(R"(
func @f(%x: in tensor<{N}x4x8xf32>, %o: in index, %y: out tensor<{N}x4x8xf32>) {
  %t = tensor.transpose %x {dim0 = 0, dim1 = 1}
  %s = tensor.slice %x[0, %o, 0] : tensor<{N}x2x8xf32>
  %e = tensor.exp %x
  tensor.store %e, %y
}
)");
  CheckAllTargets(dead, {{"N", 3}}, "dead ops", {{"o", int64_t{2}}});
  ExpectRuntimeErrorEverywhere(dead, {{"N", 3}}, {"tensor.slice", "out of bounds"},
                               {{"o", int64_t{3}}});
}

// Statically empty dims: layernorm of 1x0 divided by zero in the compiler (SIGFPE), rmsnorm of
// a 0-vector made 1x0 tiles ('tile extents must be positive').
TEST(StaticEmptyDims, CompileToNothingOrZeros) {
  Program ln = Parse(R"(
func @f(%x: in tensor<1x0xf32>, %w: in tensor<0xf32>, %b: in tensor<0xf32>, %y: out tensor<1x0xf32>) {
  %r = tensor.layernorm %x, %w, %b {eps = 0.001}
  tensor.store %r, %y
}
)");
  CheckAllTargets(ln, {}, "layernorm 1x0");
  Program sums = Parse(R"(
func @f(%x: in tensor<{N}x0xbf16>, %y: out tensor<{N}x1xbf16>, %z: out tensor<{N}x0xbf16>) {
  %s = tensor.sum %x {axis = -1, keepdims = true}
  %t = tensor.add %s, 1.0
  %u = tensor.mul %x, %t
  tensor.store %t, %y
  tensor.store %u, %z
}
)");
  CheckAllTargets(sums, {{"N", 5}}, "sums over a static empty axis");
  auto softmax = Program::Parse(R"(
func @f(%x: in tensor<1x0xf32>, %y: out tensor<1x0xf32>) {
  %r = tensor.softmax %x
  tensor.store %r, %y
}
)");
  EXPECT_EQ(softmax.status().code(), StatusCode::kInvalid);  // like reduce_max, which defines it
}

}  // namespace
}  // namespace ptox::testing
