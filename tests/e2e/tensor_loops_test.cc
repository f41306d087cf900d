// Sequential loops and ifs whose carried values / results are tensors, end to end on every compiled
// target (fused and unfused) against the interpreter: 0, 1, 2 and many trips with constant and
// dynamic bounds over symbolic dims, several carried tensors (one unchanged, two swapped), the
// iter argument read after the value that replaces it is computed, a KV-cache-like inout written
// at offsets that depend on the loop index and read back in the same iteration, tensors of other
// dtypes (bf16, i32 token ids, bool masks), nested loops, tensor-valued ifs, and a 3-layer
// decoder-like body that must give the unrolled program's bits. Elementwise bodies are also
// checked against values computed here, independently of ptox.
#include <gtest/gtest.h>

#include <cmath>

#include "compare.h"

namespace ptox::testing {
namespace {

std::string Trips(int64_t n) { return std::to_string(n) + " trips"; }

// h <- h * 0.5 + z, n times, over symbolic N x M: exact IEEE ops, so every target must give the
// bits of the same recurrence computed here in float.
const char kAxpy[] = R"(
func @f(%x: in tensor<{N}x{M}xf32>, %z: in tensor<{N}x{M}xf32>, %n: in index,
        %y: out tensor<{N}x{M}xf32>) {
  %r = for %i = 0 to %n step 1 iter(%h = %x) {
    %a = tensor.mul %h, 0.5
    %b = tensor.add %a, %z
    yield %b
  }
  tensor.store %r, %y
}
)";

TEST(TensorLoops, DynamicTripCountsMatchTheInterpreter) {
  Program prog = Parse(kAxpy);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{13}})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {7, 13}, {0, 5}, {33, 2049}})
      CheckAllTargets(prog, {{"N", rows}, {"M", cols}},
                      Trips(n) + " " + std::to_string(rows) + "x" + std::to_string(cols),
                      {{"n", n}});
}

TEST(TensorLoops, DynamicTripCountsMatchAnIndependentRecurrence) {
  Program prog = Parse(kAxpy);
  for (const std::string& target : AvailableTargets()) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{13}}) {
      Buffers b = RunOn(prog, {{"N", 5}, {"M", 70}}, {.target = target}, {{"n", n}});
      const HostTensor &x = *b.tensors[0], &z = *b.tensors[1], &y = *b.tensors[3];
      for (int64_t k = 0; k < x.numel(); ++k) {
        float h = x.Get(k);
        for (int64_t i = 0; i < n; ++i) h = h * 0.5f + z.Get(k);
        ASSERT_EQ(y.Get(k), h) << target << " " << Trips(n) << " element " << k;
      }
    }
  }
}

// Constant bounds stay a loop (only `unroll` loops are copied): 3 trips, and none.
TEST(TensorLoops, ConstantTripCounts) {
  for (const std::string bounds : {"0 to 3 step 1", "4 to 4 step 1", "2 to 9 step 3"}) {
    std::string text = kAxpy;
    text.replace(text.find("0 to %n step 1"), 14, bounds);
    CheckAllTargets(Parse(text), {{"N", 9}, {"M", 40}}, bounds, {{"n", int64_t{0}}});
  }
}

// Four carried tensors: two swapped every trip (`yield %b, %a`), one carried unchanged (a
// parameter), one accumulating the product of whichever the first holds with the unchanged one.
const char kSwap[] = R"(
func @f(%x: in tensor<{N}x{M}xf32>, %z: in tensor<{N}x{M}xf32>, %k: in tensor<{M}xf32>,
        %n: in index, %ya: out tensor<{N}x{M}xf32>, %yb: out tensor<{N}x{M}xf32>,
        %yk: out tensor<{M}xf32>, %ys: out tensor<{N}x{M}xf32>) {
  %ra, %rb, %rk, %rs = for %i = 0 to %n step 1 iter(%a = %x, %b = %z, %kk = %k, %s = %x) {
    %t = tensor.mul %a, %kk
    %s2 = tensor.add %s, %t
    yield %b, %a, %kk, %s2
  }
  tensor.store %ra, %ya
  tensor.store %rb, %yb
  tensor.store %rk, %yk
  tensor.store %rs, %ys
}
)";

TEST(TensorLoops, SwappedAndUnchangedCarriedTensors) {
  Program prog = Parse(kSwap);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7}})
    CheckAllTargets(prog, {{"N", 6}, {"M", 33}}, Trips(n), {{"n", n}});
  for (const std::string& target : AvailableTargets()) {
    const int64_t n = 5;
    Buffers b = RunOn(prog, {{"N", 3}, {"M", 9}}, {.target = target}, {{"n", n}});
    const HostTensor &x = *b.tensors[0], &z = *b.tensors[1], &k = *b.tensors[2];
    for (int64_t e = 0; e < x.numel(); ++e) {
      float a = x.Get(e), bb = z.Get(e), s = x.Get(e);
      for (int64_t i = 0; i < n; ++i) {
        s = s + a * k.Get(e % 9);
        std::swap(a, bb);
      }
      ASSERT_EQ(b.tensors[4]->Get(e), a) << target;
      ASSERT_EQ(b.tensors[5]->Get(e), bb) << target;
      ASSERT_EQ(b.tensors[7]->Get(e), s) << target;
    }
    for (int64_t e = 0; e < 9; ++e) ASSERT_EQ(b.tensors[6]->Get(e), k.Get(e)) << target;
  }
}

// The iter argument is read after the value replacing it is computed; the yielded value is read
// again in its iteration (a row sum stored at the loop index) and the loop's result twice after
// the loop.
const char kReadAfter[] = R"(
func @f(%x: in tensor<{N}x{M}xf32>, %n: in index, %hist: inout tensor<{N}x{K}xf32>,
        %y: out tensor<{N}x{M}xf32>, %y2: out tensor<{N}x{M}xf32>) {
  %r = for %i = 0 to %n step 1 iter(%h = %x) {
    %e = tensor.mul %h, 1.25
    %d = tensor.sub %e, %h
    %t = tensor.tanh %d
    %s = tensor.sum %e {axis = -1, keepdims = true}
    tensor.store %s, %hist[0, %i]
    %u = tensor.add %t, %e
    yield %u
  }
  %m = tensor.reduce_max %r {axis = -1, keepdims = true}
  %o = tensor.sub %r, %m
  tensor.store %o, %y
  tensor.store %r, %y2
}
)";

TEST(TensorLoops, IterArgumentReadAfterItsReplacementAndResultReadTwice) {
  Program prog = Parse(kReadAfter);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{6}})
    CheckAllTargets(prog, {{"N", 9}, {"M", 70}, {"K", 6}}, Trips(n), {{"n", n}});
}

// A KV-cache-like inout: each trip appends T rows at pos + i * T, then attends over the whole
// cache (keys past the rows written so far masked), so the rows it just wrote are read back.
const char kCache[] = R"(
func @f(%x: in tensor<{T}x16xf32>, %wk: in tensor<16x16xf32>, %pos: in index, %n: in index,
        %kc: inout tensor<{L}x16xf32>, %y: out tensor<{T}x16xf32>) {
  %t = tensor.dim %x, 0
  %r = for %i = 0 to %n step 1 iter(%h = %x) {
    %k = tensor.matmul %h, %wk
    %o0 = arith.mul %i, %t
    %off = arith.add %pos, %o0
    tensor.store %k, %kc[%off, 0]
    %s = tensor.matmul %h, %kc {transpose_b = true}
    %sc = tensor.mul %s, 0.25
    %m = tensor.causal_mask %sc, %off
    %p = tensor.softmax %m
    %a = tensor.matmul %p, %kc
    %h2 = tensor.add %h, %a
    yield %h2
  }
  tensor.store %r, %y
}
)";

TEST(TensorLoops, CacheWrittenAtTheLoopIndexAndReadBack) {
  Program prog = Parse(kCache);
  for (auto [t, n, pos] :
       {std::tuple<int64_t, int64_t, int64_t>{3, 4, 2}, {1, 9, 0}, {2, 0, 5}, {4, 1, 3}})
    CheckAllTargets(prog, {{"T", t}, {"L", 40}},
                    "T=" + std::to_string(t) + " " + Trips(n) + " pos " + std::to_string(pos),
                    {{"n", n}, {"pos", pos}});
  // Past the end of the cache on the last trip: the same error everywhere.
  ExpectRuntimeErrorEverywhere(prog, {{"T", 3}, {"L", 10}}, {"tensor.store", "out of bounds"},
                               {{"n", int64_t{4}}, {"pos", int64_t{0}}});
}

// The cache carried as an iter argument (a reference to the inout parameter): the stores through
// it write the parameter, trip after trip, and the loop's result is the parameter itself.
TEST(TensorLoops, CacheCarriedAsAnIterArgument) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{T}x16xf32>, %n: in index, %kc: inout tensor<{L}x16xf32>,
        %y: out tensor<{L}x16xf32>) {
  %t = tensor.dim %x, 0
  %r = for %i = 0 to %n step 1 iter(%c = %kc) {
    %s = tensor.sum %c {axis = 0, keepdims = true}
    %v = tensor.add %x, %s
    %off = arith.mul %i, %t
    tensor.store %v, %c[%off, 0]
    yield %c
  }
  %e = tensor.exp %r
  tensor.store %e, %y
}
)");
  for (auto [t, n] : {std::pair<int64_t, int64_t>{3, 4}, {1, 0}, {2, 1}, {5, 8}})
    CheckAllTargets(prog, {{"T", t}, {"L", 40}}, "T=" + std::to_string(t) + " " + Trips(n),
                    {{"n", n}});
}

// bf16 state with a bool mask carried beside it: elementwise and exact.
TEST(TensorLoops, Bf16StateAndBoolMask) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{N}x{M}xbf16>, %m0: in tensor<{N}x{M}xbool>, %n: in index,
        %y: out tensor<{N}x{M}xbf16>, %ym: out tensor<{N}x{M}xbool>) {
  %r, %rm = for %i = 0 to %n step 1 iter(%h = %x, %m = %m0) {
    %a = tensor.mul %h, -0.75
    %b = tensor.add %a, 0.125
    %c = tensor.select %m, %b, %h
    %m2 = tensor.gt %c, 0.0
    yield %c, %m2
  }
  tensor.store %r, %y
  tensor.store %rm, %ym
}
)");
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{11}})
    CheckAllTargets(prog, {{"N", 17}, {"M", 130}}, Trips(n), {{"n", n}});
}

// An outer loop carrying a tensor around an inner one that carries another, seeded from it, and
// a tensor-valued if choosing per trip between the state and a new value.
TEST(TensorLoops, NestedLoopsAndIfs) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{N}x{M}xf32>, %z: in tensor<{N}x{M}xf32>, %n: in index, %m: in index,
        %y: out tensor<{N}x{M}xf32>) {
  %r = for %i = 0 to %n step 1 iter(%h = %x) {
    %q = for %j = 0 to %m step 1 iter(%g = %h) {
      %g2 = tensor.mul %g, 0.5
      yield %g2
    }
    %odd = arith.rem %i, 2
    %c = arith.eq %odd, 1
    %s = if %c -> tensor<{N}x{M}xf32> {
      %e = tensor.add %q, %z
      yield %e
    } else {
      yield %q
    }
    %h2 = tensor.sub %s, %h
    yield %h2
  }
  tensor.store %r, %y
}
)");
  for (auto [n, m] : {std::pair<int64_t, int64_t>{0, 2}, {1, 0}, {2, 1}, {5, 3}})
    CheckAllTargets(prog, {{"N", 5}, {"M", 40}}, Trips(n) + " x " + Trips(m), {{"n", n}, {"m", m}});
}

// A tensor-valued if outside any loop, both arms taken, one yielding a parameter.
TEST(TensorIfs, EitherArmsTensor) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{N}x{M}xf32>, %z: in tensor<{N}x{M}xf32>, %c: in index,
        %y: out tensor<{N}x{M}xf32>) {
  %p = arith.gt %c, 0
  %r = if %p -> tensor<{N}x{M}xf32> {
    %e = tensor.exp %x
    yield %e
  } else {
    yield %z
  }
  %s = tensor.add %r, %x
  tensor.store %s, %y
}
)");
  for (int64_t c : {int64_t{0}, int64_t{1}})
    CheckAllTargets(prog, {{"N", 7}, {"M", 300}}, "c=" + std::to_string(c), {{"c", c}});
}

// Greedy generation: the token ids (i32) are carried; each trip embeds them (gather), applies
// RoPE, round-trips through a transpose, mixes in a tile-level scope, appends the states to a
// cache at the loop index, and picks the next ids by argmax over tied logits.
const char kGenerate[] = R"(
func @gen(%ids0: in tensor<{T}xi32>, %emb: in tensor<8x32xf32>, %cos: in tensor<{T}x32xf32>,
          %sin: in tensor<{T}x32xf32>, %n: in index, %cache: inout tensor<{L}x32xf32>,
          %toks: out tensor<{T}xi32>, %last: out tensor<{T}x32xf32>) {
  %t = tensor.dim %ids0, 0
  %z = tensor.empty %t : tensor<{T}x32xf32>
  %ri, %rh = for %i = 0 to %n step 1 iter(%ids = %ids0, %prev = %z) {
    %x = tensor.gather %emb, %ids
    %xr = tensor.rope %x, %cos, %sin
    %xt = tensor.transpose %xr
    %xb = tensor.transpose %xt
    %mix = tensor.empty %t : tensor<{T}x32xf32>
    for %r = 0 to %t step 8 parallel {
      incore {
        %a = tile.load %xb[%r, 0] : tile<8x32xf32>
        %b = tile.load %prev[%r, 0] : tile<8x32xf32>
        %hb = tile.mul %b, 0.5
        %c = tile.add %a, %hb
        tile.store %c, %mix[%r, 0]
      }
    }
    %off = arith.mul %i, %t
    tensor.store %mix, %cache[%off, 0]
    %logits = tensor.matmul %mix, %emb {transpose_b = true}
    %next = tensor.argmax %logits
    yield %next, %mix
  }
  tensor.store %ri, %toks
  tensor.store %rh, %last
}
)";

TEST(TensorLoops, GenerationLoopCarriesTokenIds) {
  Program prog = Parse(kGenerate);
  for (auto [t, n] : {std::pair<int64_t, int64_t>{3, 4}, {1, 1}, {2, 0}, {9, 2}})
    CheckAllTargets(prog, {{"T", t}, {"L", 40}}, "T=" + std::to_string(t) + " " + Trips(n),
                    {{"n", n}});
}

// A decoder-like stack of 3 layers whose weights are stacked per layer: attention (RMSNorm,
// q = n Wq^T, causal softmax over n n^T, output projection, residual) then an MLP (RMSNorm,
// SwiGLU, residual). The loop must give the bits of the same program unrolled on each target.
const char kLayers[] = R"(
func @layers(%x: in tensor<{T}x64xf32>, %wq: in tensor<3x64x64xf32>, %wo: in tensor<3x64x64xf32>,
             %wg: in tensor<3x96x64xf32>, %wd: in tensor<3x64x96xf32>, %g: in tensor<3x64xf32>,
             %y: out tensor<{T}x64xf32>) {
  %r = for %l = 0 to 3 step 1KIND iter(%h = %x) {
    %gl = tensor.slice %g[%l, 0] : tensor<1x64xf32>
    %g1 = tensor.reshape %gl : tensor<64xf32>
    %n = tensor.rmsnorm %h, %g1 {eps = 1e-5}
    %wql = tensor.slice %wq[%l, 0, 0] : tensor<1x64x64xf32>
    %wq2 = tensor.reshape %wql : tensor<64x64xf32>
    %q = tensor.matmul %n, %wq2 {transpose_b = true}
    %s = tensor.matmul %q, %n {transpose_b = true}
    %sc = tensor.mul %s, 0.125
    %mk = tensor.causal_mask %sc, 0
    %p = tensor.softmax %mk
    %a = tensor.matmul %p, %n
    %wol = tensor.slice %wo[%l, 0, 0] : tensor<1x64x64xf32>
    %wo2 = tensor.reshape %wol : tensor<64x64xf32>
    %o = tensor.matmul %a, %wo2 {transpose_b = true}
    %h1 = tensor.add %h, %o
    %n2 = tensor.rmsnorm %h1, %g1 {eps = 1e-5}
    %wgl = tensor.slice %wg[%l, 0, 0] : tensor<1x96x64xf32>
    %wg2 = tensor.reshape %wgl : tensor<96x64xf32>
    %u = tensor.matmul %n2, %wg2 {transpose_b = true}
    %v = tensor.silu %u
    %wdl = tensor.slice %wd[%l, 0, 0] : tensor<1x64x96xf32>
    %wd2 = tensor.reshape %wdl : tensor<64x96xf32>
    %d = tensor.matmul %v, %wd2 {transpose_b = true}
    %h2 = tensor.add %h1, %d
    yield %h2
  }
  tensor.store %r, %y
}
)";

std::string Layers(const std::string& kind) {
  std::string text = kLayers;
  text.replace(text.find("KIND"), 4, kind);
  return text;
}

TEST(TensorLoops, DecoderLikeLayersMatchTheInterpreter) {
  Program prog = Parse(Layers(""));
  for (int64_t t : {int64_t{1}, int64_t{5}, int64_t{70}})
    CheckAllTargets(prog, {{"T", t}}, "T=" + std::to_string(t));
}

TEST(TensorLoops, DecoderLikeLayersGiveTheUnrolledProgramsBits) {
  Program loop = Parse(Layers("")), unrolled = Parse(Layers(" unroll"));
  for (const std::string& target : AvailableTargets()) {
    if (target == "interp") continue;
    for (int64_t t : {int64_t{1}, int64_t{5}, int64_t{70}}) {
      Buffers a = RunOn(loop, {{"T", t}}, {.target = target});
      Buffers b = RunOn(unrolled, {{"T", t}}, {.target = target});
      ExpectClose(a, b, 0, target + " T=" + std::to_string(t) + " loop vs unrolled");
    }
  }
}

// A buffer each trip writes one row of (the rest must read as zeros): it stays per trip.
const char kPartial[] = R"(
func @f(%x: in tensor<8x8xf32>, %n: in index, %y: out tensor<8x8xf32>) {
  %r = for %i = 0 to %n step 1 iter(%h = %x) {
    %e = tensor.empty : tensor<8x8xf32>
    incore {
      %t = tile.load %h[%i, 0] : tile<1x8xf32>
      tile.store %t, %e[%i, 0]
    }
    %s = tensor.add %e, %h
    yield %s
  }
  tensor.store %r, %y
}
)";

TEST(TensorLoops, PartlyWrittenBufferPerTrip) {
  Program prog = Parse(kPartial);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{8}})
    CheckAllTargets(prog, {}, Trips(n), {{"n", n}});
}

// hoist-loop-buffers reuses a loop's buffers across trips (and alternates the carried one): the
// interpreter, running the transformed program literally, must give the original's bits; and the
// decoder's loop then allocates nothing per trip.
TEST(HoistLoopBuffers, KeepsTheMeaningOnTheInterpreter) {
  struct Case {
    std::string text;
    Dims dims;
    Scalars scalars;
  };
  const std::vector<Case> cases = {
      {kAxpy, {{"N", 7}, {"M", 13}}, {{"n", int64_t{5}}}},
      {kSwap, {{"N", 6}, {"M", 33}}, {{"n", int64_t{3}}}},
      {kReadAfter, {{"N", 9}, {"M", 70}, {"K", 6}}, {{"n", int64_t{4}}}},
      {kCache, {{"T", 3}, {"L", 40}}, {{"n", int64_t{4}}, {"pos", int64_t{2}}}},
      {kGenerate, {{"T", 3}, {"L", 40}}, {{"n", int64_t{4}}}},
      {Layers(""), {{"T", 5}}, {}},
      {kPartial, {}, {{"n", int64_t{5}}}},
  };
  for (const Case& c : cases) {
    Program prog = Parse(c.text);
    Result<Program> hoisted =
        Transform(prog, {.passes = {"lower-composites", "fuse-elementwise", "hoist-loop-buffers"}});
    ASSERT_TRUE(hoisted.ok()) << hoisted.status().message();
    Buffers want = RunOn(prog, c.dims, {.target = "interp"}, c.scalars);
    Buffers got = RunOn(*hoisted, c.dims, {.target = "interp"}, c.scalars);
    ExpectClose(got, want, 0, "hoisted " + c.text.substr(0, 40));
    if (c.text == Layers("")) {
      const std::string ir = hoisted->ToText();
      const size_t loop = ir.find("for %l");
      ASSERT_NE(loop, std::string::npos) << ir;
      EXPECT_EQ(ir.find("tensor.empty", loop), std::string::npos) << ir;
      EXPECT_NE(ir.find("iter(%h = %x, %next = "), std::string::npos) << ir;
    }
  }
}

// Many trips on more workers than cores: each trip's tasks must wait for the previous trip's
// writes (and a reused buffer's writes for its reads) however the workers interleave.
TEST(TensorLoops, ManyTripsOnManyWorkers) {
  Program prog = Parse(kAxpy), layers = Parse(Layers(""));
  Buffers ref = RunOn(layers, {{"T", 37}}, {.target = "interp"});
  for (const std::string& target : AvailableTargets()) {
    if (target == "interp") continue;
    for (int threads : {1, 3, 8}) {
      const int64_t n = 300;
      Buffers b = RunOn(prog, {{"N", 70}, {"M", 200}}, {.target = target, .num_threads = threads},
                        {{"n", n}});
      const HostTensor &x = *b.tensors[0], &z = *b.tensors[1], &y = *b.tensors[3];
      for (int64_t k = 0; k < x.numel(); ++k) {
        float h = x.Get(k);
        for (int64_t i = 0; i < n; ++i) h = h * 0.5f + z.Get(k);
        ASSERT_EQ(y.Get(k), h) << target << " on " << threads << " workers, element " << k;
      }
      Buffers l = RunOn(layers, {{"T", 37}}, {.target = target, .num_threads = threads});
      Result<double> bound = ReorderBound(layers, {}, l.args);
      ASSERT_TRUE(bound.ok());
      ExpectClose(l, ref, *bound, target + " layers on " + std::to_string(threads) + " workers");
    }
  }
}

}  // namespace
}  // namespace ptox::testing
