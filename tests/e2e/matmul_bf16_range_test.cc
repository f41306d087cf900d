// bf16 x bf16 matmuls on CPU take AVX512_BF16 dot products, which flush subnormal products to
// zero, only on blocks whose every nonzero |x| is at least 2^-50 (kernels/cpu/matmul_bf16.h).
// One element of B below that bound, placed where each packing path reads it (even / odd row of
// a pair, the 32-column fast path or the columns after it, the odd last row, the few-row
// streaming path), must send its block to the exact f32 kernel: 2^-50 * 2^-80 = 2^-130 is an
// f32 subnormal that only the exact path keeps. On hosts without AVX512_BF16 every path is exact.
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

struct TinyAt {
  int64_t m, k, n;   // sizes (tiles of <= 128 columns: the first 96 take the fast packing)
  int64_t row, col;  // where B holds 2^-80
};

TEST(MatmulBf16Range, TinyElementOfBTakesTheExactKernel) {
  Result<Program> prog = Program::Parse(kMatmul, "<matmul_bf16_range_test>");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  const float a_val = std::ldexp(1.0f, -50), b_val = std::ldexp(1.0f, -80);
  const float want = std::ldexp(1.0f, -130);
  for (const TinyAt& t :
       {TinyAt{32, 6, 130, 1, 5}, TinyAt{32, 6, 130, 2, 50}, TinyAt{32, 6, 130, 3, 100},
        TinyAt{32, 5, 130, 4, 7}, TinyAt{32, 6, 130, 5, 129}, TinyAt{8, 6, 130, 3, 7}}) {
    const std::string where = "M=" + std::to_string(t.m) + " K=" + std::to_string(t.k) +
                              " N=" + std::to_string(t.n) + " B[" + std::to_string(t.row) + "][" +
                              std::to_string(t.col) + "]";
    HostTensor a(DType::kBF16, {t.m, t.k}), b(DType::kBF16, {t.k, t.n}), c(DType::kF32, {t.m, t.n});
    for (int64_t i = 0; i < a.numel(); ++i) a.Set(i, a_val);
    for (int64_t i = 0; i < b.numel(); ++i) b.Set(i, 0.0f);
    for (int64_t i = 0; i < c.numel(); ++i) c.Set(i, -1.0f);
    b.Set(t.row * t.n + t.col, b_val);
    Status s = ptox::Run(*prog, {a.view(), b.view(), c.view()}, {.target = "cpu"});
    ASSERT_TRUE(s.ok()) << where << ": " << s.message();
    int wrong = 0;
    for (int64_t i = 0; i < t.m; ++i)
      for (int64_t j = 0; j < t.n; ++j) wrong += c.Get(i * t.n + j) != (j == t.col ? want : 0.0f);
    EXPECT_EQ(wrong, 0) << where << ": C[0][" << t.col << "] = " << c.Get(t.col) << ", want "
                        << want;
  }
}

}  // namespace
}  // namespace ptox::testing
