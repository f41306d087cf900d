// RunOptions::constants: the blocks a matmul packs from a constant B are kept across runs
// (kernels/cpu/matmul.h KeptBlock). Kept blocks must give what packing on every run gives, stay
// within the documented bound of an independent reference, survive concurrent tasks asking for
// the same block, keep the bf16 range check's verdict, and never be used once the constant
// changed (a changed spot-checked row or column fails the run; ForgetConstants drops them).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "host_tensor.h"
#include "ptox/ptox.h"

namespace ptox::testing {
namespace {

// C = A B, or A B^T with B stored N x K (the layout of most LLM weights).
std::string MatmulText(const std::string& dtype, bool transpose_b) {
  return "func @mm(%a: in tensor<{M}x{K}x" + dtype + ">, %b: in tensor<" +
         (transpose_b ? "{N}x{K}x" : "{K}x{N}x") + dtype +
         ">, %c: out tensor<{M}x{N}xf32>) {\n  %p = tensor.matmul %a, %b" +
         (transpose_b ? " {transpose_b = true}" : "") + "\n  tensor.store %p, %c\n}\n";
}

struct Shape {
  int64_t m, k, n;
};

struct Operands {
  HostTensor a, b;
  Operands(DType dt, Shape s, bool transpose_b, uint32_t seed)
      : a(dt, {s.m, s.k}),
        b(dt, transpose_b ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n}) {
    std::mt19937 rng(seed);
    a.FillUniform(rng, -1.0f, 1.0f);
    b.FillUniform(rng, -1.0f, 1.0f);
  }
};

// C = a b from one run; fails the test on an error.
std::vector<float> RunMatmul(const Program& prog, HostTensor& a, HostTensor& b, Shape s,
                             const RunOptions& options) {
  HostTensor c(DType::kF32, {s.m, s.n});
  Status st = ptox::Run(prog, {a.view(), b.view(), c.view()}, options);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<float> out(c.numel());
  for (int64_t i = 0; i < c.numel(); ++i) out[i] = c.Get(i);
  return out;
}
std::vector<float> RunMatmul(const Program& prog, Operands& x, Shape s, const RunOptions& options) {
  return RunMatmul(prog, x.a, x.b, s, options);
}

// Elements farther from a double-precision reference than the documented matmul bound
// (K * 2^-24 * sum |a||b|, doubled as ReorderBound does).
int64_t OutsideBound(const std::vector<float>& got, const Operands& x, Shape s, bool tb) {
  int64_t bad = 0;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < s.k; ++k) {
        const double p = double(x.a.Get(i * s.k + k)) * x.b.Get(tb ? j * s.k + k : k * s.n + j);
        sum += p, mag += std::fabs(p);
      }
      bad += !(std::fabs(got[i * s.n + j] - sum) <= 2.0 * s.k * 0x1p-24 * mag + 1e-30);
    }
  return bad;
}

Program Parse(const std::string& text) {
  Result<Program> p = Program::Parse(text, "<matmul_constants_test>");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

// The vector CPU targets this host runs (the scalar one packs nothing: it runs the exact loop).
std::vector<std::string> PackingTargets() {
  std::vector<std::string> out;
  for (const std::string& t : AvailableTargets())
    if (t == "cpu-avx512" || t == "cpu-avx2") out.push_back(t);
  return out;
}

TEST(MatmulConstants, KeptBlocksGiveWhatPackingEveryRunGives) {
  // Rows: 4-16 (few rows: packed only when B is constant), 17+ (always packed); K across the
  // f32 (256) and bf16 (512) k blocks, odd, and empty; N with partial panels.
  const std::vector<Shape> shapes = {{5, 37, 130}, {16, 600, 200}, {37, 600, 130}, {70, 1, 50},
                                     {130, 3, 1},  {2, 70, 90},    {20, 0, 7}};
  for (const std::string& target : PackingTargets())
    for (DType dt : {DType::kF32, DType::kBF16})
      for (bool tb : {false, true})
        for (Shape s : shapes) {
          const std::string what = target + (dt == DType::kF32 ? " f32" : " bf16") +
                                   (tb ? " B^T " : " ") + std::to_string(s.m) + "x" +
                                   std::to_string(s.k) + "x" + std::to_string(s.n);
          Program prog = Parse(MatmulText(dt == DType::kF32 ? "f32" : "bf16", tb));
          Operands x(dt, s, tb, 11);
          const uint64_t b_hash = x.b.Hash();
          const std::vector<float> packed_each_run = RunMatmul(prog, x, s, {.target = target});
          const RunOptions keep{.target = target, .constants = {"b"}};
          const std::vector<float> first = RunMatmul(prog, x, s, keep);
          const int64_t kept = prog.ConstantBytes();
          const std::vector<float> second = RunMatmul(prog, x, s, keep);
          EXPECT_EQ(prog.ConstantBytes(), kept) << what << ": the second run packed again";
          EXPECT_EQ(first, second) << what;
          if (s.m >= 4 && s.k > 0) {
            EXPECT_GT(kept, 0) << what << ": nothing was kept";
          }
          // The same kernels run unless few rows switch from B in place to packed panels.
          if (s.m > 16 || s.m < 4) {
            EXPECT_EQ(first, packed_each_run) << what;
          }
          EXPECT_EQ(OutsideBound(first, x, s, tb), 0) << what;
          EXPECT_EQ(x.b.Hash(), b_hash) << what << ": the constant was modified";
        }
}

TEST(MatmulConstants, ConcurrentTasksShareKeptBlocks) {
  // 1100 rows: several row tiles need the same blocks of B at once on two workers.
  const Shape s{1100, 300, 260};
  for (DType dt : {DType::kF32, DType::kBF16}) {
    Program prog = Parse(MatmulText(dt == DType::kF32 ? "f32" : "bf16", false));
    Operands x(dt, s, false, 5);
    const std::vector<float> want = RunMatmul(prog, x, s, {.target = "cpu", .num_threads = 2});
    for (int rep = 0; rep < 3; ++rep)
      EXPECT_EQ(RunMatmul(prog, x, s, {.target = "cpu", .num_threads = 2, .constants = {"b"}}),
                want)
          << "run " << rep;
  }
}

TEST(MatmulConstants, DecodeAndPrefillShareOneConstant) {
  // Two entry points over the same weights (one Program, one store): blocks either kept by the
  // other (same tiling) or their own, packed in the first round only.
  Program prog = Parse(R"(
func @decode(%a: in tensor<8x300xbf16>, %b: in tensor<300x1024xbf16>, %c: out tensor<8x1024xf32>) {
  %p = tensor.matmul %a, %b
  tensor.store %p, %c
}
func @prefill(%a: in tensor<64x300xbf16>, %b: in tensor<300x1024xbf16>, %c: out tensor<64x1024xf32>) {
  %p = tensor.matmul %a, %b
  tensor.store %p, %c
}
)");
  Operands decode(DType::kBF16, {8, 300, 1024}, false, 9);
  Operands prefill(DType::kBF16, {64, 300, 1024}, false, 10);
  int64_t before = 0;
  for (int round = 0; round < 2; ++round)
    for (Operands* x : {&decode, &prefill}) {
      const Shape s{x->a.shape()[0], 300, 1024};
      const std::string fn = s.m == 8 ? "decode" : "prefill";
      const std::string what = fn + " round " + std::to_string(round);
      x->b = decode.b;  // one set of weights, read where decode's are
      const std::vector<float> got =
          RunMatmul(prog, x->a, decode.b, s, {.target = "cpu", .function = fn, .constants = {"b"}});
      EXPECT_EQ(OutsideBound(got, *x, s, false), 0) << what;
      if (round == 0) {
        EXPECT_GT(prog.ConstantBytes(), 0) << what;
      } else {
        EXPECT_EQ(prog.ConstantBytes(), before) << what << ": packed again";
      }
      if (round == 0) before = prog.ConstantBytes();
    }
}

TEST(MatmulConstants, KeptBf16BlockKeepsTheRangeCheck) {
  // A B element of 2^-80 makes its block take the exact f32 kernel (matmul_bf16_range_test);
  // a kept block must remember that verdict on the run that reuses it.
  const Shape s{32, 6, 130};
  Program prog = Parse(MatmulText("bf16", false));
  Operands x(DType::kBF16, s, false, 1);
  for (int64_t i = 0; i < x.a.numel(); ++i) x.a.Set(i, std::ldexp(1.0f, -50));
  for (int64_t i = 0; i < x.b.numel(); ++i) x.b.Set(i, 0.0f);
  x.b.Set(3 * s.n + 100, std::ldexp(1.0f, -80));
  for (int run = 0; run < 2; ++run) {
    const std::vector<float> c = RunMatmul(prog, x, s, {.target = "cpu", .constants = {"b"}});
    EXPECT_EQ(c[100], std::ldexp(1.0f, -130)) << "run " << run;
  }
}

TEST(MatmulConstants, ChangedConstantFailsUntilForgotten) {
  const Shape s{64, 40, 100};
  // The spot check reads what lies contiguous: a kept block's first row of B [K, N], its first
  // column of a transposed B [N, K] (element 7: row 0 of either layout).
  for (bool tb : {false, true}) {
    Program prog = Parse(MatmulText("f32", tb));
    Operands x(DType::kF32, s, tb, 3);
    const RunOptions keep{.target = "cpu", .constants = {"b"}};
    RunMatmul(prog, x, s, keep);
    x.b.Set(7, 2.5f);
    HostTensor c(DType::kF32, {s.m, s.n});
    Status st = ptox::Run(prog, {x.a.view(), x.b.view(), c.view()}, keep);
    EXPECT_EQ(st.code(), StatusCode::kRuntime) << "transpose_b " << tb;
    EXPECT_NE(st.message().find("ForgetConstants"), std::string::npos) << st.message();
    prog.ForgetConstants();
    EXPECT_EQ(prog.ConstantBytes(), 0);
    EXPECT_EQ(RunMatmul(prog, x, s, keep), RunMatmul(prog, x, s, {.target = "cpu"}));
  }
}

TEST(MatmulConstants, OnlyTensorInputsCanBeConstant) {
  Program prog = Parse(MatmulText("f32", false));
  const Shape s{4, 4, 4};
  Operands x(DType::kF32, s, false, 2);
  HostTensor c(DType::kF32, {s.m, s.n});
  for (const std::string target : {"cpu", "interp"}) {
    Status out =
        ptox::Run(prog, {x.a.view(), x.b.view(), c.view()}, {.target = target, .constants = {"c"}});
    EXPECT_EQ(out.code(), StatusCode::kInvalid) << target;
    EXPECT_NE(out.message().find("must be a tensor input"), std::string::npos) << out.message();
    Status unknown =
        ptox::Run(prog, {x.a.view(), x.b.view(), c.view()}, {.target = target, .constants = {"w"}});
    EXPECT_EQ(unknown.code(), StatusCode::kInvalid) << target;
    EXPECT_NE(unknown.message().find("'w' is not a parameter of @mm"), std::string::npos)
        << unknown.message();
  }
}

}  // namespace
}  // namespace ptox::testing
