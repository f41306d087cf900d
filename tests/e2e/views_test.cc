// Slices, reshapes and size-1 transposes read in place (views, passes/views.h), end to end on
// every compiled target (fused and unfused) against the interpreter, where a view must read what
// the copy would have held: the memory rewritten before the reader (an inout parameter, a
// buffer) must turn the view back into a copy; a view read by tasks while a later task writes
// the viewed memory must be waited for; views of views, reshapes of strided slices that only move
// size-1 dims, slices at loop-dependent offsets feeding matmuls; an out-of-bounds offset fails
// as the interpreter does. The lowered IR shows which ops became views.
#include <gtest/gtest.h>

#include "compare.h"
#include "kernels/scalar.h"

namespace ptox::testing {
namespace {

// The program after the default pipeline up to convert-tensor-to-tile, as text.
std::string Lowered(const Program& prog) {
  Result<Program> p = Transform(prog, {.passes = {"lower-composites", "fuse-elementwise",
                                                  "hoist-loop-buffers", "convert-tensor-to-tile"}});
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p->ToText() : "";
}

// A slice of an inout parameter, then the same box overwritten, then the slice read: the slice
// holds the values from before the store, so it must be a copy.
const char kRewrittenParam[] = R"(
func @f(%io: inout tensor<{N}x64xf32>, %z: in tensor<8x32xf32>, %y: out tensor<8x32xf32>) {
  %s = tensor.slice %io[2, 16] : tensor<8x32xf32>
  tensor.store %z, %io[2, 16]
  %e = tensor.exp %s
  tensor.store %e, %y
}
)";

TEST(Views, MemoryWrittenBeforeTheReaderMakesACopy) {
  Program prog = Parse(kRewrittenParam);
  CheckAllTargets(prog, {{"N", 12}}, "rewritten inout");
  EXPECT_EQ(Lowered(prog).find("= tensor.slice"), std::string::npos) << Lowered(prog);
  for (const std::string& target : AvailableTargets()) {
    Buffers in = MakeArgs(prog, {{"N", 12}}, 42);  // RunOn's inputs
    Buffers b = RunOn(prog, {{"N", 12}}, {.target = target});
    const HostTensor &io0 = *in.tensors[0], &io = *b.tensors[0], &z = *b.tensors[1],
                     &y = *b.tensors[2];
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t c = 0; c < 32; ++c) {
        ASSERT_EQ(y.Get(r * 32 + c), scalar::Exp(io0.Get((r + 2) * 64 + c + 16))) << target;
        ASSERT_EQ(io.Get((r + 2) * 64 + c + 16), z.Get(r * 32 + c)) << target;
      }
  }
}

// The same with a buffer the program made: filled, sliced, overwritten at offsets, then read.
const char kRewrittenBuffer[] = R"(
func @f(%x: in tensor<16x64xf32>, %z: in tensor<4x64xf32>, %y: out tensor<4x64xf32>) {
  %b = tensor.empty : tensor<16x64xf32>
  %a = tensor.add %x, 1.0
  tensor.store %a, %b
  %s = tensor.slice %b[4, 0] : tensor<4x64xf32>
  tensor.store %z, %b[4, 0]
  %t = tensor.mul %s, 2.0
  tensor.store %t, %y
}
)";

TEST(Views, BufferWrittenBeforeTheReaderMakesACopy) {
  CheckAllTargets(Parse(kRewrittenBuffer), {}, "rewritten buffer");
}

// Views everywhere: layer %l's rows of a stacked weight (an `in` parameter) feed a matmul, the
// product is reshaped into heads, a head transposed past a size-1 dim, a slice of that reshape
// (a view of a view), and a strided slice whose reshapes and transpose only move size-1 dims;
// a reshape that regroups that strided view's elements must copy.
const char kViews[] = R"(
func @f(%x: in tensor<{T}x32xf32>, %w: in tensor<96x32xf32>, %l: in index,
        %heads: out tensor<{T}x4x8xf32>, %first: out tensor<{T}x2x8xf32>,
        %col: out tensor<{T}x4xf32>, %t1: out tensor<4x1x8xf32>,
        %regroup: out tensor<4x{T}xf32>) {
  %o = arith.mul %l, 32
  %wl = tensor.slice %w[%o, 0] : tensor<32x32xf32>
  %p = tensor.matmul %x, %wl {transpose_b = true}
  %h = tensor.reshape %p : tensor<{T}x4x8xf32>
  %h2 = tensor.mul %h, 1.0
  tensor.store %h2, %heads
  %f = tensor.slice %h[0, 0, 0] : tensor<{T}x2x8xf32>
  %f2 = tensor.add %f, 0.5
  tensor.store %f2, %first
  %c = tensor.slice %x[0, 3] : tensor<{T}x4xf32>
  %c3 = tensor.reshape %c : tensor<1x{T}x4xf32>
  %c2 = tensor.reshape %c3 : tensor<{T}x4xf32>
  %c4 = tensor.exp %c2
  tensor.store %c4, %col
  %one = tensor.slice %h[0, 0, 0] : tensor<1x4x8xf32>
  %tr = tensor.transpose %one {dim0 = 0, dim1 = 1}
  %tr2 = tensor.neg %tr
  tensor.store %tr2, %t1
  %u = tensor.transpose %c3 {dim0 = 0, dim1 = 1}
  %u2 = tensor.reshape %u : tensor<4x{T}xf32>
  %u3 = tensor.mul %u2, 3.0
  tensor.store %u3, %regroup
}
)";

TEST(Views, SlicesReshapesAndUnitTransposesReadInPlace) {
  Program prog = Parse(kViews);
  for (int64_t l : {0, 1, 2})
    for (int64_t t : {1, 5, 70})
      CheckAllTargets(prog, {{"T", t}}, "layer " + std::to_string(l) + " T " + std::to_string(t),
                      {{"l", l}});
  const std::string ir = Lowered(prog);
  for (const char* view :
       {"%wl = tensor.slice", "%h = tensor.reshape", "%f = tensor.slice", "%c = tensor.slice",
        "%c3 = tensor.reshape", "%c2 = tensor.reshape", "%one = tensor.slice",
        "%tr = tensor.transpose", "%u = tensor.transpose"})
    EXPECT_NE(ir.find(view), std::string::npos) << view << " is not a view:\n" << ir;
  EXPECT_EQ(ir.find("%u2 = tensor.reshape"), std::string::npos) << "a strided regroup is a view";
}

// A view of an inout read by several tasks, then the viewed rows overwritten by a later store:
// the store waits for the readers (their accesses map onto %io), on any number of workers.
const char kReadThenWrite[] = R"(
func @f(%io: inout tensor<4096x64xf32>, %z: in tensor<4096x64xf32>, %y: out tensor<2048x64xf32>) {
  %s = tensor.slice %io[1024, 0] : tensor<2048x64xf32>
  %e = tensor.mul %s, 3.0
  tensor.store %e, %y
  tensor.store %z, %io
}
)";

TEST(Views, LaterWritesWaitForTheViewsReaders) {
  Program prog = Parse(kReadThenWrite);
  for (const std::string& target : AvailableTargets())
    for (int threads : {1, 2, 8})
      for (int rep = 0; rep < 3; ++rep) {
        Buffers in = MakeArgs(prog, {}, 42);  // RunOn's inputs
        Buffers b = RunOn(prog, {}, {.target = target, .num_threads = threads});
        for (int64_t k = 0; k < 2048 * 64; ++k)
          ASSERT_EQ(b.tensors[2]->Get(k), in.tensors[0]->Get(1024 * 64 + k) * 3.0f)
              << target << " " << threads << " threads, element " << k;
      }
}

// A view at an offset out of bounds fails everywhere with the slice's own error.
TEST(Views, OutOfBoundsOffsetsFailAsTheInterpreterDoes) {
  Program prog = Parse(R"(
func @f(%w: in tensor<96x32xf32>, %l: in index, %y: out tensor<32x32xf32>) {
  %o = arith.mul %l, 32
  %wl = tensor.slice %w[%o, 0] : tensor<32x32xf32>
  %e = tensor.exp %wl
  tensor.store %e, %y
}
)");
  ExpectRuntimeErrorEverywhere(prog, {}, {"tensor.slice", "out of bounds"}, {{"l", int64_t{3}}});
}

}  // namespace
}  // namespace ptox::testing
