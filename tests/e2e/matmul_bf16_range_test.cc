// bf16 x bf16 matmuls on CPU take bf16 dot products (AVX512_BF16's vdpbf16ps, Arm's BFDOT), which
// flush subnormal inputs, products and sums to zero, only on pairs of blocks where none can occur:
// no subnormal input, and the exponent fields of the smallest nonzero magnitudes of A's and B's
// blocks summing to at least 142 (kernels/cpu/matmul_bf16.h). One element of B of 2^-80 against A
// of 2^-50 (77 + 47 = 124), placed where each packing path reads it (even / odd row of a pair, the
// 32-column fast path or the columns after it, the odd last row, the few-row streaming path),
// must send its block to the exact f32 kernel: 2^-130 is an f32 subnormal that only the exact
// path keeps; likewise for a transposed B. BFDOT rounds to odd, which turns an overflow into the
// largest finite number: blocks whose products could overflow take the f32 kernel too. On hosts
// without bf16 dot products every path is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "host_tensor.h"
#include "ptox/ptox.h"

namespace ptox::testing {
namespace {

const char kMatmul[] = R"(
func @mm(%a: in tensor<{M}x{K}xbf16>, %b: in tensor<{K}x{N}xbf16>, %c: out tensor<{M}x{N}xf32>) {
  %p = tensor.matmul %a, %b
  tensor.store %p, %c
}
)";

const char kMatmulT[] = R"(
func @mm(%a: in tensor<{M}x{K}xbf16>, %bt: in tensor<{N}x{K}xbf16>, %c: out tensor<{M}x{N}xf32>) {
  %p = tensor.matmul %a, %bt {transpose_b = true}
  tensor.store %p, %c
}
)";

struct TinyAt {
  int64_t m, k, n;   // sizes (tiles of <= 128 columns: the first 96 take the fast packing)
  int64_t row, col;  // where B holds 2^-80
  bool transposed = false;  // B given as B^T (N x K): packed by 16-pair transposes of 8 columns
};

TEST(MatmulBf16Range, TinyElementOfBTakesTheExactKernel) {
  Result<Program> prog = Program::Parse(kMatmul, "<matmul_bf16_range_test>");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  Result<Program> prog_t = Program::Parse(kMatmulT, "<matmul_bf16_range_test>");
  ASSERT_TRUE(prog_t.ok()) << prog_t.status().message();
  const float a_val = std::ldexp(1.0f, -50), b_val = std::ldexp(1.0f, -80);
  const float want = std::ldexp(1.0f, -130);
  // B^T: in a transposed chunk of 16 pairs, in the pairs after the chunks, in the odd last row,
  // in the columns after the whole groups of 8, with 4-16 rows (packed too).
  for (const TinyAt& t :
       {TinyAt{32, 6, 130, 1, 5}, TinyAt{32, 6, 130, 2, 50}, TinyAt{32, 6, 130, 3, 100},
        TinyAt{32, 5, 130, 4, 7}, TinyAt{32, 6, 130, 5, 129}, TinyAt{8, 6, 130, 3, 7},
        TinyAt{32, 40, 130, 5, 60, true}, TinyAt{32, 40, 130, 35, 7, true},
        TinyAt{32, 41, 130, 40, 100, true}, TinyAt{32, 40, 130, 8, 129, true},
        TinyAt{8, 40, 130, 30, 20, true}}) {
    const std::string where = "M=" + std::to_string(t.m) + " K=" + std::to_string(t.k) +
                              " N=" + std::to_string(t.n) + " B[" + std::to_string(t.row) + "][" +
                              std::to_string(t.col) + "]" + (t.transposed ? " as B^T" : "");
    HostTensor a(DType::kBF16, {t.m, t.k}), c(DType::kF32, {t.m, t.n});
    HostTensor b(DType::kBF16, t.transposed ? std::vector<int64_t>{t.n, t.k}
                                            : std::vector<int64_t>{t.k, t.n});
    for (int64_t i = 0; i < a.numel(); ++i) a.Set(i, a_val);
    for (int64_t i = 0; i < b.numel(); ++i) b.Set(i, 0.0f);
    for (int64_t i = 0; i < c.numel(); ++i) c.Set(i, -1.0f);
    b.Set(t.transposed ? t.col * t.k + t.row : t.row * t.n + t.col, b_val);
    Status s = ptox::Run(t.transposed ? *prog_t : *prog, {a.view(), b.view(), c.view()},
                         {.target = "cpu"});
    ASSERT_TRUE(s.ok()) << where << ": " << s.message();
    int wrong = 0;
    for (int64_t i = 0; i < t.m; ++i)
      for (int64_t j = 0; j < t.n; ++j) wrong += c.Get(i * t.n + j) != (j == t.col ? want : 0.0f);
    EXPECT_EQ(wrong, 0) << where << ": C[0][" << t.col << "] = " << c.Get(t.col) << ", want "
                        << want;
  }
}

// The rule is on the pair of blocks: exponent fields Ea + Eb >= 142 keep every partial sum normal.
// At Ea + Eb = 141 (A 2^-57, B 2^-56) two products that cancel leave 2^-127, an f32 subnormal
// that vdpbf16ps would flush: the block must take the exact kernel. A small activation against
// ordinary weights (2^-60 x 2^-3: far from subnormal) stays on the dot-product path and exact.
TEST(MatmulBf16Range, PartialSumBelowNormalTakesTheExactKernel) {
  Result<Program> prog = Program::Parse(kMatmul, "<matmul_bf16_range_test>");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  struct Case {
    int64_t m;
    bool constant_b;  // kept blocks: 4-16 rows take the packed kernels too
    float scale_a, scale_b;
  };
  const float u = 1.0f + std::ldexp(1.0f, -7), v = 1.0f + std::ldexp(1.0f, -6);
  const float a57 = std::ldexp(1.0f, -57), b56 = std::ldexp(1.0f, -56);
  for (const Case& c :
       {Case{32, false, a57, b56}, Case{8, false, a57, b56}, Case{8, true, a57, b56},
        Case{32, true, a57, b56}, Case{32, false, std::ldexp(1.0f, -60), std::ldexp(1.0f, -3)}}) {
    const int64_t k = 6, n = 130;
    const std::string where = "M=" + std::to_string(c.m) + (c.constant_b ? " constant B" : "") +
                              " scales " + std::to_string(std::ilogb(c.scale_a)) + ", " +
                              std::to_string(std::ilogb(c.scale_b));
    // Every C element: a0 b0 + a1 b1 = sa sb ((1 + 2^-7)^2 - (1 + 2^-6)) = sa sb 2^-14.
    const float want = std::ldexp(c.scale_a * c.scale_b, -14);
    HostTensor a(DType::kBF16, {c.m, k}), b(DType::kBF16, {k, n}), out(DType::kF32, {c.m, n});
    for (int64_t i = 0; i < a.numel(); ++i) a.Set(i, 0.0f);
    for (int64_t i = 0; i < b.numel(); ++i) b.Set(i, 0.0f);
    for (int64_t i = 0; i < c.m; ++i) a.Set(i * k, c.scale_a * u), a.Set(i * k + 1, c.scale_a);
    for (int64_t j = 0; j < n; ++j) b.Set(j, c.scale_b * u), b.Set(n + j, -c.scale_b * v);
    RunOptions options{.target = "cpu"};
    if (c.constant_b) options.constants = {"b"};
    Status s = ptox::Run(*prog, {a.view(), b.view(), out.view()}, options);
    ASSERT_TRUE(s.ok()) << where << ": " << s.message();
    int wrong = 0;
    for (int64_t i = 0; i < out.numel(); ++i) wrong += out.Get(i) != want;
    EXPECT_EQ(wrong, 0) << where << ": C[0][0] = " << out.Get(0) << ", want " << want;
  }
}

// vdpbf16ps reads a subnormal input as zero whatever its partner: 2^-130 (a bf16 subnormal)
// times 2^100 is 2^-30, which only the exact kernel keeps.
TEST(MatmulBf16Range, SubnormalInputTakesTheExactKernel) {
  Result<Program> prog = Program::Parse(kMatmul, "<matmul_bf16_range_test>");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  for (int64_t m : {8, 32}) {
    const int64_t k = 6, n = 130;
    HostTensor a(DType::kBF16, {m, k}), b(DType::kBF16, {k, n}), out(DType::kF32, {m, n});
    for (int64_t i = 0; i < a.numel(); ++i) a.Set(i, 0.0f);
    for (int64_t i = 0; i < b.numel(); ++i) b.Set(i, std::ldexp(1.0f, 100));
    a.Set(3, std::ldexp(1.0f, -130));
    Status s = ptox::Run(*prog, {a.view(), b.view(), out.view()}, {.target = "cpu"});
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(out.Get(5), std::ldexp(1.0f, -30)) << "M=" << m;
    EXPECT_EQ(out.Get(n + 5), 0.0f) << "M=" << m;
  }
}

// 2^100 x 2^100 overflows f32: every C element is +inf, as the interpreter's f32 products make it,
// never the largest finite number that BFDOT's rounding to odd would give.
TEST(MatmulBf16Range, OverflowingProductsGiveInfinity) {
  Result<Program> prog = Program::Parse(kMatmul, "<matmul_bf16_range_test>");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  for (int64_t m : {8, 32}) {
    const int64_t k = 6, n = 130;
    HostTensor a(DType::kBF16, {m, k}), b(DType::kBF16, {k, n}), out(DType::kF32, {m, n});
    for (int64_t i = 0; i < a.numel(); ++i) a.Set(i, std::ldexp(1.0f, 100));
    for (int64_t i = 0; i < b.numel(); ++i) b.Set(i, std::ldexp(1.0f, 100));
    Status s = ptox::Run(*prog, {a.view(), b.view(), out.view()}, {.target = "cpu"});
    ASSERT_TRUE(s.ok()) << s.message();
    int finite = 0;
    for (int64_t i = 0; i < out.numel(); ++i) finite += out.Get(i) != INFINITY;
    EXPECT_EQ(finite, 0) << "M=" << m << ": C[0][0] = " << out.Get(0);
  }
}

}  // namespace
}  // namespace ptox::testing
