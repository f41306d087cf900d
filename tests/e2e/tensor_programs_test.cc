// Tensor-level programs (examples/tensor) on every compiled target against the interpreter, with
// fusion on and off, for symbolic shapes that are not multiples of the tiles and the same
// programs with the sizes written in; and fusion itself: kernels per program, bytes moved.
// (tests/e2e/numpy_check.py compares the same programs with numpy, an independent reference.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "compare.h"
#include "ptox/ptox.h"

namespace ptox::testing {
namespace {

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(PTOX_EXAMPLES_DIR) + "/tensor/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The program with its symbolic dims written in as static sizes.
std::string WithStaticDims(std::string text, const Dims& dims) {
  for (const auto& [sym, n] : dims)
    text = std::regex_replace(text, std::regex("\\{" + sym + "\\}"), std::to_string(n));
  return text;
}

struct Case {
  std::string file;
  std::vector<Dims> sizes;
};

std::vector<Case> Cases() {
  return {
      {"blend.pto", {{{"N", 1}}, {{"N", 37}}, {{"N", 130}}}},
      {"softmax.pto", {{{"N", 1}}, {{"N", 37}}, {{"N", 130}}}},
      {"rmsnorm.pto", {{{"N", 1}}, {{"N", 37}}, {{"N", 300}}}},
      {"layernorm.pto", {{{"B", 1}, {"T", 1}}, {{"B", 3}, {"T", 21}}, {{"B", 2}, {"T", 130}}}},
      {"linear_gelu.pto", {{{"M", 1}}, {{"M", 37}}, {{"M", 200}}}},
      {"swiglu_mlp.pto", {{{"M", 1}}, {{"M", 37}}, {{"M", 150}}}},
      {"attention.pto", {{{"S", 1}}, {{"S", 37}}, {{"S", 150}}}},
      {"rope.pto", {{{"T", 1}}, {{"T", 19}}}},
      {"layers.pto", {{{"T", 1}}, {{"T", 5}}, {{"T", 130}}}},
  };
}

class TensorProgram : public ::testing::TestWithParam<Case> {};

TEST_P(TensorProgram, SymbolicShapesMatchTheInterpreter) {
  const std::string text = ReadExample(GetParam().file);
  auto prog = Program::Parse(text, GetParam().file);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  for (const Dims& dims : GetParam().sizes) CheckAllTargets(*prog, dims, GetParam().file);
}

TEST_P(TensorProgram, StaticShapesMatchTheInterpreter) {
  const Dims& dims = GetParam().sizes.back();
  auto prog = Program::Parse(WithStaticDims(ReadExample(GetParam().file), dims), GetParam().file);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  CheckAllTargets(*prog, {}, GetParam().file + " (static)");
}

INSTANTIATE_TEST_SUITE_P(Examples, TensorProgram, ::testing::ValuesIn(Cases()),
                         [](const auto& info) {
                           std::string n = info.param.file.substr(0, info.param.file.find('.'));
                           return n;
                         });

// Tensor-level matmuls of symbolic shape take tiles sized for large problems; the CPU target
// sets their accumulators only where the products land (MatmulAccOnFull) and fills the whole
// tile after a K loop that ran none (K = 0). Row-major and transposed B; a K loop of two steps,
// the second partial; rows and columns spilling into a second, partial tile.
TEST(TensorMatmul, SymbolicShapesMatchTheInterpreter) {
  for (const char* text : {R"(
func @mm(%a: in tensor<{M}x{K}xf32>, %b: in tensor<{K}x{N}xf32>, %c: out tensor<{M}x{N}xf32>) {
  %p = tensor.matmul %a, %b
  tensor.store %p, %c
}
)",
                           R"(
func @mm(%a: in tensor<{M}x{K}xf32>, %b: in tensor<{N}x{K}xf32>, %c: out tensor<{M}x{N}xf32>) {
  %p = tensor.matmul %a, %b {transpose_b = true}
  tensor.store %p, %c
}
)"}) {
    auto prog = Program::Parse(text, "<tensor_matmul>");
    ASSERT_TRUE(prog.ok()) << prog.status().message();
    // (K = 0 after the same tiles held products: the arena's stale values must not show.)
    for (const Dims& dims :
         {Dims{{"M", 5}, {"K", 3000}, {"N", 7}}, Dims{{"M", 16}, {"K", 64}, {"N", 1030}},
          Dims{{"M", 600}, {"K", 40}, {"N", 1030}}, Dims{{"M", 600}, {"K", 0}, {"N", 1030}},
          Dims{{"M", 3}, {"K", 0}, {"N", 5}}})
      CheckAllTargets(*prog, dims, std::string("matmul M=") + std::to_string(dims.at("M")) +
                                       " K=" + std::to_string(dims.at("K")) +
                                       " N=" + std::to_string(dims.at("N")));
  }
}

// Special values through every target: NaN, +-Inf, +-0, subnormals, all-negative and all -inf
// rows, bf16 rounding ties; elementwise results must be bit-identical, rows within the bound.
TEST(TensorSpecialValues, MatchTheInterpreter) {
  const float kSpecial[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f,
                            -1e30f, 3.4e38f, 1.00390625f /* bf16 tie */, -2.5f, 7.0f};
  for (const char* file : {"blend.pto", "softmax.pto", "rmsnorm.pto", "layernorm.pto", "rope.pto"}) {
    auto prog = Program::Parse(ReadExample(file), file);
    ASSERT_TRUE(prog.ok()) << prog.status().message();
    Dims dims;
    auto params = prog->Params();
    ASSERT_TRUE(params.ok());
    for (const ParamInfo& p : *params)
      for (const auto& d : p.dims)
        if (!d.sym.empty()) dims[d.sym] = 9;
    auto fill = [&](Buffers& b) {
      for (size_t i = 0; i < b.tensors.size(); ++i) {
        if (b.is_out[i]) continue;
        HostTensor& t = *b.tensors[i];
        for (int64_t k = 0; k < t.numel(); ++k) {
          const int64_t row = k / t.shape().back();
          float v = kSpecial[(k * 7 + row) % 12];
          if (row == 2) v = -1e3f - k;       // an all-negative row
          if (row == 3) v = -INFINITY;      // an all -inf row: NaN out of softmax
          if (i > 0 && !std::isfinite(v)) v = 0.5f;  // keep weights finite
          t.Set(k, v);
        }
      }
    };
    Buffers ref = MakeArgs(*prog, dims, 1);
    fill(ref);
    ASSERT_TRUE(ptox::Run(*prog, ref.args, {.target = "interp"}).ok());
    Result<double> bound = ReorderBound(*prog, {}, ref.args);
    ASSERT_TRUE(bound.ok());
    for (const std::string& t : AvailableTargets()) {
      if (t == "interp") continue;
      for (bool fuse : {true, false}) {
        Buffers got = MakeArgs(*prog, dims, 1);
        fill(got);
        Status st = ptox::Run(*prog, got.args, {.target = t, .fuse = fuse});
        ASSERT_TRUE(st.ok()) << st.message();
        ExpectClose(got, ref, *bound, std::string(file) + " special values on " + t);
      }
    }
  }
}

// exp(x - m) per row, fused into pc::vmath::ExpSub: m the row's maximum (the form that leaves
// out Exp's overflow and NaN cases where the maximum is finite) or its minimum (the general
// form), on rows whose maximum is NaN, +inf, -inf (all -inf), finite beside -inf, or finite with
// differences that overflow to -inf, underflow or give subnormals; 300 columns, so vectors and a
// tail. The exp values are stored as they are, so each must be bit-identical to the interpreter's.
TEST(TensorSpecialValues, ExpOfARowShiftMatchesTheInterpreter) {
  for (const char* m : {"tensor.reduce_max", "tensor.reduce_min"}) {
    Program prog = Parse(std::string(R"(
func @shifted_exp(%x: in tensor<{N}x300xf32>, %y: out tensor<{N}x300xf32>) {
  %m = )") + m + R"( %x {axis = -1, keepdims = true}
  %s = tensor.sub %x, %m
  %e = tensor.exp %s
  tensor.store %e, %y
}
)");
    const Dims dims = {{"N", 9}};
    auto fill = [](Buffers& b) {
      HostTensor& t = *b.tensors[0];
      for (int64_t k = 0; k < t.numel(); ++k) {
        const int64_t row = k / 300, col = k % 300;
        float v = std::ldexp(static_cast<float>((k * 37) % 101) - 50.0f, -3);  // [-6.25, 6.25]
        if (row == 0 && col == 17) v = NAN;
        if (row == 1 && col == 290) v = INFINITY;
        if (row == 2) v = -INFINITY;
        if (row == 3 && col % 3 == 0) v = -INFINITY;
        if (row == 4) v = col % 2 ? 3e38f : -3e38f;         // x - max overflows to -inf
        if (row == 5) v = -0.37f * static_cast<float>(col);  // down to -110: subnormals, zeros
        if (row == 6) v = col == 5 ? 1e-40f : -1e-40f;
        if (row == 7) v = col == 0 ? 88.0f : -20.0f + 0.1f * col;
        t.Set(k, v);
      }
    };
    Buffers ref = MakeArgs(prog, dims, 1);
    fill(ref);
    ASSERT_TRUE(ptox::Run(prog, ref.args, {.target = "interp"}).ok());
    for (const std::string& t : AvailableTargets()) {
      if (t == "interp") continue;
      for (bool fuse : {true, false}) {
        Buffers got = MakeArgs(prog, dims, 1);
        fill(got);
        Status st = ptox::Run(prog, got.args, {.target = t, .fuse = fuse});
        ASSERT_TRUE(st.ok()) << st.message();
        ExpectClose(got, ref, 0.0, std::string("exp(x - ") + m + ") on " + t);
      }
    }
  }
}

// Distinct kernels (task names without the position) and bytes moved in one run on "cpu".
struct Traffic {
  std::set<std::string> kernels;
  int64_t read = 0, written = 0;
};
Traffic Measure(const Program& prog, const Dims& dims, bool fuse) {
  Buffers b = MakeArgs(prog, dims, 7);
  std::vector<TaskTrace> trace;
  Status s = Run(prog, b.args, {.target = "cpu", .trace = &trace, .fuse = fuse});
  EXPECT_TRUE(s.ok()) << s.message();
  Traffic t;
  for (const TaskTrace& task : trace) {
    t.kernels.insert(task.name.substr(0, task.name.find(' ')));
    t.read += task.bytes_read;
    t.written += task.bytes_written;
  }
  return t;
}

const char kChain[] = R"(
func @chain(%a: in tensor<{N}x300xf32>, %b: in tensor<{N}x300xf32>, %c: in tensor<300xf32>,
            %y: out tensor<{N}x300xf32>) {
  %0 = tensor.mul %a, %b
  %1 = tensor.add %0, %c
  %2 = tensor.silu %1
  %3 = tensor.sub %2, %a
  %4 = tensor.mul %3, 0.5
  %5 = tensor.max %4, %b
  %6 = tensor.exp %5
  %7 = tensor.div %6, %c
  tensor.store %7, %y
}
)";

TEST(Fusion, ElementwiseChainIsOneKernelReadingEachInputOnce) {
  auto prog = Program::Parse(kChain);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  const int64_t n = 77, bytes = n * 300 * 4;
  Traffic fused = Measure(*prog, {{"N", n}}, true);
  EXPECT_EQ(fused.kernels.size(), 1u);
  // a and b once; the 300-wide c once per row tile (it broadcasts down the rows).
  EXPECT_GE(fused.read, 2 * bytes + 300 * 4);
  EXPECT_LE(fused.read, 2 * bytes + 300 * 4 * ((n + 1) / 2));
  EXPECT_EQ(fused.written, bytes);
  Traffic unfused = Measure(*prog, {{"N", n}}, false);
  EXPECT_EQ(unfused.kernels.size(), 8u);
  EXPECT_GT(unfused.written, 7 * bytes);  // every intermediate goes through memory
  CheckAllTargets(*prog, {{"N", n}}, "chain");
}

TEST(Fusion, KernelsPerExample) {
  const std::map<std::string, size_t> want = {{"blend.pto", 1}, {"softmax.pto", 1}, {"rmsnorm.pto", 1},
                                              {"layernorm.pto", 1}, {"linear_gelu.pto", 1},
                                              {"swiglu_mlp.pto", 3}};
  for (const Case& c : Cases()) {
    auto it = want.find(c.file);
    if (it == want.end()) continue;
    auto prog = Program::Parse(ReadExample(c.file), c.file);
    ASSERT_TRUE(prog.ok()) << prog.status().message();
    EXPECT_EQ(Measure(*prog, c.sizes.back(), true).kernels.size(), it->second) << c.file;
    EXPECT_GT(Measure(*prog, c.sizes.back(), false).kernels.size(), it->second) << c.file;
  }
}

TEST(Fusion, RowReductionReadsItsInputOnce) {
  auto prog = Program::Parse(ReadExample("softmax.pto"));
  ASSERT_TRUE(prog.ok());
  const int64_t n = 130, bytes = n * 200 * 4;
  Traffic t = Measure(*prog, {{"N", n}}, true);
  EXPECT_EQ(t.read, bytes);
  EXPECT_EQ(t.written, bytes);
}

}  // namespace
}  // namespace ptox::testing
