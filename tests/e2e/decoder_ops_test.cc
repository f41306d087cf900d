// The ops a tensor-level decoder needs, end to end on every compiled target (fused and unfused)
// against the interpreter: compares and select, a causal mask fused with its softmax, argmax,
// gather and tensor.store at offsets; their run-time errors on every target (and a failed store
// writes nothing); one function mixing tensor ops with explicit tile-level scopes; and a decoder
// step over a KV cache against an independent double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "compare.h"

namespace ptox::testing {
namespace {

TEST(CompareSelect, MatchTheInterpreter) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{N}x{M}xbf16>, %b: in tensor<{N}x1xbf16>, %s: in f32,
        %mask: out tensor<{N}x{M}xbool>, %y: out tensor<{N}x{M}xbf16>) {
  %c = tensor.gt %x, %b
  %m = tensor.le %b, %s
  %r = tensor.select %m, %x, %s
  %t = tensor.select %c, %r, %b
  tensor.store %c, %mask
  tensor.store %t, %y
}
)");
  for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {7, 13}, {0, 5}, {5, 0}, {3, 1025}})
    CheckAllTargets(prog, {{"N", n}, {"M", m}},
                    "N=" + std::to_string(n) + " M=" + std::to_string(m), {{"s", 0.25}});
}

// Distinct kernels (task names without their position) of one run on "cpu".
std::set<std::string> Kernels(const Program& prog, const Dims& dims, const Scalars& scalars) {
  Buffers b = MakeArgs(prog, dims, 7, scalars);
  std::vector<TaskTrace> trace;
  Status s = Run(prog, b.args, {.target = "cpu", .trace = &trace});
  EXPECT_TRUE(s.ok()) << s.message();
  std::set<std::string> out;
  for (const TaskTrace& t : trace) out.insert(t.name.substr(0, t.name.find(' ')));
  return out;
}

TEST(CausalMask, FusesWithItsSoftmaxAndMaskedKeysGetZero) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{T}x40xf32>, %pos: in index, %y: out tensor<{T}x40xf32>) {
  %m = tensor.causal_mask %x, %pos
  %p = tensor.softmax %m
  tensor.store %p, %y
}
)");
  EXPECT_EQ(Kernels(prog, {{"T", 9}}, {{"pos", int64_t{3}}}).size(), 1u);
  for (int64_t pos : {int64_t{0}, int64_t{3}, int64_t{39}, int64_t{-2}})
    CheckAllTargets(prog, {{"T", 9}}, "pos " + std::to_string(pos), {{"pos", pos}});
  Buffers b = RunOn(prog, {{"T", 9}}, {.target = "cpu"}, {{"pos", int64_t{3}}});
  const HostTensor& y = *b.tensors[2];
  for (int64_t t = 0; t < 9; ++t)
    for (int64_t s = 0; s < 40; ++s)
      if (s > t + 3) {
        EXPECT_EQ(y.Get(t * 40 + s), 0.0f) << t << ", " << s;
      }
}

TEST(Argmax, ManyColumnTilesAndOtherAxes) {
  Program prog = Parse(R"(
func @f(%x: in tensor<{B}x{N}x{V}xf32>, %a: out tensor<{B}x{N}xi32>, %b: out tensor<{B}x1x{V}xi32>) {
  %i = tensor.argmax %x
  %j = tensor.argmax %x {axis = 1, keepdims = true}
  tensor.store %i, %a
  tensor.store %j, %b
}
)");
  for (const Dims& dims : {Dims{{"B", 2}, {"N", 3}, {"V", 5000}},
                           Dims{{"B", 1}, {"N", 70}, {"V", 1}}, Dims{{"B", 0}, {"N", 3}, {"V", 4}}})
    CheckAllTargets(prog, dims, "V=" + std::to_string(dims.at("V")));
  ExpectRuntimeErrorEverywhere(prog, {{"B", 1}, {"N", 2}, {"V", 0}},
                               {"tensor.argmax", "argmax over the empty axis 2"});
}

const char kGather[] = R"(
func @f(%t: in tensor<{V}x{D}xf32>, %ids: in tensor<{T}xi64>, %y: out tensor<{T}x{D}xf32>) {
  %g = tensor.gather %t, %ids
  %h = tensor.mul %g, 2.0
  tensor.store %h, %y
}
)";

TEST(Gather, MatchesTheInterpreterAndChecksEveryId) {
  Program prog = Parse(kGather);
  for (const Dims& dims :
       {Dims{{"V", 8}, {"D", 64}, {"T", 300}}, Dims{{"V", 9}, {"D", 3000}, {"T", 2}},
        Dims{{"V", 8}, {"D", 5}, {"T", 0}}})
    CheckAllTargets(prog, dims, "D=" + std::to_string(dims.at("D")));
  // Ids are drawn from [0, 8): a table of 3 rows has ids out of range, also with no columns.
  for (int64_t d : {int64_t{4}, int64_t{0}})
    ExpectRuntimeErrorEverywhere(
        prog, {{"V", 3}, {"D", d}, {"T", 40}},
        {"tensor.gather", "is out of range [0, 3) (the table has 3 rows)"});
}

const char kAppend[] = R"(
func @f(%k: in tensor<{T}x{D}xf32>, %pos: in index, %cache: inout tensor<{L}x{D}xf32>) {
  %s = tensor.mul %k, -1.0
  tensor.store %s, %cache[%pos, 0]
}
)";

TEST(StoreAt, AppendsToACache) {
  Program prog = Parse(kAppend);
  for (int64_t pos : {int64_t{0}, int64_t{5}, int64_t{297}})
    CheckAllTargets(prog, {{"T", 3}, {"D", 1030}, {"L", 300}}, "pos " + std::to_string(pos),
                    {{"pos", pos}});
  CheckAllTargets(prog, {{"T", 0}, {"D", 8}, {"L", 4}}, "nothing to append", {{"pos", int64_t{4}}});
}

// A box past the end fails before any task writes: the cache is untouched on every target.
TEST(StoreAt, OutOfBoundsFailsAndWritesNothing) {
  Program prog = Parse(kAppend);
  const Dims dims = {{"T", 3}, {"D", 1030}, {"L", 300}};
  for (int64_t pos : {int64_t{298}, int64_t{-1}, INT64_MAX}) {
    ExpectRuntimeErrorEverywhere(prog, dims, {"tensor.store", "out of bounds in dim 0"},
                                 {{"pos", pos}});
    for (const std::string& t : AvailableTargets()) {
      Buffers b = MakeArgs(prog, dims, 42, {{"pos", pos}});  // the cache holds seeded values
      const uint64_t before = b.tensors[2]->Hash();
      EXPECT_FALSE(ptox::Run(prog, b.args, {.target = t}).ok());
      EXPECT_EQ(b.tensors[2]->Hash(), before) << t << " wrote part of the box at " << pos;
    }
  }
}

// One function mixing tensor-level ops with explicit tile-level scopes: a tile scope reads a
// tensor op's value and writes a buffer that tensor ops then read.
TEST(MixedLevels, TensorOpsAndTileScopesInOneFunction) {
  Program prog = Parse(R"(
func @mixed(%x: in tensor<{N}x64xf32>, %w: in tensor<64xf32>, %y: out tensor<{N}x64xf32>,
            %idx: out tensor<{N}xi32>) {
  %n = tensor.rmsnorm %x, %w
  %nn = tensor.dim %x, 0
  %buf = tensor.empty %nn : tensor<{N}x64xf32>
  for %i = 0 to %nn step 16 parallel {
    incore {
      %a = tile.load %n[%i, 0] : tile<16x64xf32>
      %b = tile.load %x[%i, 0] : tile<16x64xf32>
      %c = tile.add %a, %b
      tile.store %c, %buf[%i, 0]
    }
  }
  %e = tensor.exp %buf
  tensor.store %e, %y
  %am = tensor.argmax %buf
  tensor.store %am, %idx
}
)");
  for (int64_t n : {int64_t{1}, int64_t{37}, int64_t{0}})
    CheckAllTargets(prog, {{"N", n}}, "N=" + std::to_string(n));
}

// One decoder step over a KV cache of 32 slots: embed T new tokens, project, append k and v at
// `pos`, attend causally (each new token sees the cache up to its own position), project onto
// the (tied) embedding and pick the next tokens.
const char kDecodeStep[] = R"(
func @decode_step(%ids: in tensor<{T}xi32>, %emb: in tensor<{V}x64xf32>, %wq: in tensor<64x64xf32>,
                  %wk: in tensor<64x64xf32>, %wv: in tensor<64x64xf32>, %pos: in index,
                  %kc: inout tensor<32x64xf32>, %vc: inout tensor<32x64xf32>,
                  %next: out tensor<{T}xi32>, %h: out tensor<{T}x64xf32>) {
  %x = tensor.gather %emb, %ids
  %q = tensor.matmul %x, %wq
  %k = tensor.matmul %x, %wk
  %v = tensor.matmul %x, %wv
  tensor.store %k, %kc[%pos, 0]
  tensor.store %v, %vc[%pos, 0]
  %s = tensor.matmul %q, %kc {transpose_b = true}
  %sc = tensor.mul %s, 0.125
  %m = tensor.causal_mask %sc, %pos
  %p = tensor.softmax %m
  %o = tensor.matmul %p, %vc
  %logits = tensor.matmul %o, %emb {transpose_b = true}
  %n = tensor.argmax %logits
  tensor.store %n, %next
  tensor.store %o, %h
}
)";

TEST(DecodeStep, MatchesTheInterpreter) {
  Program prog = Parse(kDecodeStep);
  for (auto [t, pos] : {std::pair<int64_t, int64_t>{3, 5}, {1, 9}, {1, 31}, {0, 2}})
    CheckAllTargets(prog, {{"T", t}, {"V", 50}}, "T=" + std::to_string(t), {{"pos", pos}});
}

// The same step in double precision, written independently of ptox: the hidden states within
// f32 rounding, the next tokens exactly (unless the two best logits are too close to tell).
TEST(DecodeStep, MatchesADoublePrecisionReference) {
  Program prog = Parse(kDecodeStep);
  const int64_t kT = 3, kV = 50, kD = 64, kL = 32, kPos = 6;
  for (const std::string& target : AvailableTargets()) {
    Buffers b = MakeArgs(prog, {{"T", kT}, {"V", kV}}, 11, {{"pos", kPos}});
    HostTensor &ids = *b.tensors[0], &emb = *b.tensors[1], &wq = *b.tensors[2], &wk = *b.tensors[3],
               &wv = *b.tensors[4], &kc = *b.tensors[6], &vc = *b.tensors[7];
    for (int64_t t = 0; t < kT; ++t) ids.Set(t, static_cast<float>((t * 17 + 3) % kV));
    auto mat = [](const HostTensor& a, int64_t r, int64_t c, int64_t cols) {
      return static_cast<double>(a.Get(r * cols + c));
    };
    std::vector<double> q(kT * kD, 0), kx(kL * kD), vx(kL * kD);
    for (int64_t s = 0; s < kL; ++s)
      for (int64_t j = 0; j < kD; ++j)
        kx[s * kD + j] = mat(kc, s, j, kD), vx[s * kD + j] = mat(vc, s, j, kD);
    for (int64_t t = 0; t < kT; ++t) {
      const int64_t id = static_cast<int64_t>(ids.Get(t));
      for (int64_t j = 0; j < kD; ++j) {
        double a = 0, bk = 0, bv = 0;
        for (int64_t i = 0; i < kD; ++i) {
          const double x = mat(emb, id, i, kD);
          a += x * mat(wq, i, j, kD), bk += x * mat(wk, i, j, kD), bv += x * mat(wv, i, j, kD);
        }
        q[t * kD + j] = a, kx[(kPos + t) * kD + j] = bk, vx[(kPos + t) * kD + j] = bv;
      }
    }
    ASSERT_TRUE(ptox::Run(prog, b.args, {.target = target}).ok()) << target;
    for (int64_t t = 0; t < kT; ++t) {
      std::vector<double> p(kL, 0), o(kD, 0), logits(kV, 0);
      double mx = -INFINITY, z = 0;
      for (int64_t s = 0; s <= kPos + t; ++s) {
        for (int64_t j = 0; j < kD; ++j) p[s] += q[t * kD + j] * kx[s * kD + j] * 0.125;
        mx = std::max(mx, p[s]);
      }
      for (int64_t s = 0; s <= kPos + t; ++s) z += p[s] = std::exp(p[s] - mx);
      for (int64_t s = 0; s <= kPos + t; ++s)
        for (int64_t j = 0; j < kD; ++j) o[j] += p[s] / z * vx[s * kD + j];
      for (int64_t j = 0; j < kD; ++j)
        EXPECT_NEAR(b.tensors[9]->Get(t * kD + j), o[j], 1e-4 * (std::fabs(o[j]) + 1)) << target;
      for (int64_t w = 0; w < kV; ++w)
        for (int64_t j = 0; j < kD; ++j) logits[w] += o[j] * mat(emb, w, j, kD);
      int64_t best = 0, second = -1;
      for (int64_t w = 1; w < kV; ++w) {
        if (logits[w] > logits[best]) {
          second = best, best = w;
        } else if (second < 0 || logits[w] > logits[second]) {
          second = w;
        }
      }
      const int64_t got = static_cast<int64_t>(b.tensors[8]->Get(t));
      if (logits[best] - logits[second] > 1e-3) {
        EXPECT_EQ(got, best) << target << " token " << t;
      } else {
        EXPECT_TRUE(got == best || got == second) << target << " token " << t;
      }
    }
  }
}

}  // namespace
}  // namespace ptox::testing
