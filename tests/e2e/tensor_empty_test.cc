// tensor.empty on target "cpu": intermediate tensors made by the orchestration, written by one
// incore scope and read by later ones — results, partial tiles, dependencies and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "host_tensor.h"
#include "kernels/scalar.h"
#include "ptox/ptox.h"

namespace ptox::testing {
namespace {

Program MustParse(const std::string& text) {
  Result<Program> p = Program::Parse(text, "<tensor_empty_test>");
  EXPECT_TRUE(p.ok()) << p.status().message();
  if (!p.ok()) std::abort();
  return *p;
}

// The arguments of one run, by parameter name, in parameter order.
struct Args {
  std::vector<std::string> order;
  std::map<std::string, std::unique_ptr<HostTensor>> t;

  HostTensor& operator[](const std::string& name) { return *t.at(name); }
  std::vector<Arg> Views() const {
    std::vector<Arg> v;
    for (const std::string& n : order) v.push_back(t.at(n)->view());
    return v;
  }
  Args Clone() const {
    Args c;
    c.order = order;
    for (const auto& [n, p] : t) c.t[n] = std::make_unique<HostTensor>(*p);
    return c;
  }
};

// f32 tensors for every parameter of `prog` with symbolic sizes from `dims`: inputs uniform in
// [lo, hi), outputs zero.
Args MakeArgs(const Program& prog, const std::map<std::string, int64_t>& dims, uint32_t seed,
              float lo, float hi) {
  Args a;
  std::mt19937 rng(seed);
  auto params = prog.Params();
  EXPECT_TRUE(params.ok()) << params.status().message();
  for (const ParamInfo& p : *params) {
    std::vector<int64_t> shape;
    for (const auto& d : p.dims) shape.push_back(d.sym.empty() ? d.size : dims.at(d.sym));
    auto t = std::make_unique<HostTensor>(p.dtype, shape);
    for (int64_t i = 0; i < t->numel(); ++i) t->Set(i, 0.0f);
    if (p.dir != ParamDirection::kOut) t->FillUniform(rng, lo, hi);
    a.order.push_back(p.name);
    a.t[p.name] = std::move(t);
  }
  return a;
}

// Index of the first element whose bits differ, or -1.
int64_t FirstBitDifference(const HostTensor& a, const HostTensor& b) {
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (scalar::FloatBits(a.Get(i)) != scalar::FloatBits(b.Get(i))) return i;
  }
  return -1;
}

// Checks `out` against per-element f32 values computed here, bit for bit.
void ExpectExact(const HostTensor& out, const std::string& what,
                 const std::function<float(int64_t)>& want) {
  for (int64_t i = 0; i < out.numel(); ++i) {
    const float w = want(i);
    ASSERT_EQ(scalar::FloatBits(out.Get(i)), scalar::FloatBits(w))
        << what << ": element " << i << " is " << out.Get(i) << ", expected " << w;
  }
}

// The interpreter must agree bit for bit with the cpu results in `got` (the same inputs); skipped
// only while the interpreter cannot run tensor.empty.
void ExpectInterpAgrees(const Program& prog, const Args& inputs, Args& got) {
  Args ref = inputs.Clone();
  Status s = ptox::Run(prog, ref.Views(), {.target = "interp"});
  if (s.code() == StatusCode::kUnsupported &&
      s.message().find("cannot run tensor.empty") != std::string::npos)
    return;
  ASSERT_TRUE(s.ok()) << s.message();
  for (const std::string& n : ref.order)
    EXPECT_EQ(FirstBitDifference(got[n], ref[n]), -1) << "%" << n << " differs from interp";
}

// ---- One intermediate: y = exp(x) + 1 through %tmp ------------------------------------------
// (8 x 1024 tiles: above the size coarsen-tasks merges, so each is a task)

const char* kExpAdd = R"(
func @f(%x: in tensor<{N}x1024xf32>, %y: out tensor<{N}x1024xf32>) {
  %n = tensor.dim %x, 0
  %tmp = tensor.empty %n : tensor<{N}x1024xf32>
  for %i = 0 to %n step 8 parallel {
    incore {
      %t = tile.load %x[%i, 0] : tile<8x1024xf32>
      %e = tile.exp %t
      tile.store %e, %tmp[%i, 0]
    }
  }
  for %j = 0 to %n step 8 parallel {
    incore {
      %u = tile.load %tmp[%j, 0] : tile<8x1024xf32>
      %v = tile.add %u, 1.0
      tile.store %v, %y[%j, 0]
    }
  }
}
)";

TEST(TensorEmpty, ExpThenAddThroughAnIntermediateIsExactForPartialTiles) {
  Program prog = MustParse(kExpAdd);
  for (int64_t n : {0, 1, 7, 8, 50}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE("N = " + std::to_string(n) + ", threads = " + std::to_string(threads));
      const Args inputs = MakeArgs(prog, {{"N", n}}, 7 + n, -4.0f, 4.0f);
      Args a = inputs.Clone();
      Status s = ptox::Run(prog, a.Views(), {.target = "cpu", .num_threads = threads});
      ASSERT_TRUE(s.ok()) << s.message();
      HostTensor& x = a["x"];
      ExpectExact(a["y"], "%y", [&](int64_t i) { return scalar::Exp(x.Get(i)) + 1.0f; });
      for (int64_t i = 0; i < x.numel(); ++i) {  // and an independent double reference
        const double want = std::exp(static_cast<double>(x.Get(i))) + 1.0;
        ASSERT_NEAR(a["y"].Get(i), want, 4e-7 * want) << "element " << i;
      }
      EXPECT_EQ(FirstBitDifference(x, *inputs.t.at("x")), -1) << "%x was modified";
      ExpectInterpAgrees(prog, inputs, a);
    }
  }
}

TEST(TensorEmpty, TaskRegionsOnAnIntermediateAreClippedToItsShape) {
  Program prog = MustParse(kExpAdd);
  Args a = MakeArgs(prog, {{"N", 50}}, 3, -1.0f, 1.0f);
  std::vector<TaskTrace> trace;
  Status s = ptox::Run(prog, a.Views(), {.target = "cpu", .num_threads = 2, .trace = &trace});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(trace.size(), 14u);  // 7 tiles of 8 rows (the last has 2) x 2 scopes
  for (const TaskTrace& t : trace) {
    const int64_t rows = std::min<int64_t>(8, 50 - 8 * (t.id % 7));
    EXPECT_EQ(t.bytes_read, rows * 1024 * 4) << t.name << " task " << t.id;
    EXPECT_EQ(t.bytes_written, rows * 1024 * 4) << t.name << " task " << t.id;
  }
}

// ---- A chain of three scopes through two intermediates, each tiled differently ----------------

// %a = exp(x) (8x16 tiles); %b[1] = a * 2 + x (4x32 tiles) in a rank-3 tensor whose slice
// %b[0] is never written (so reads zeros); y = (b[1] - a) + b[0] (16x8 tiles).
const char* kChain = R"(
func @chain(%x: in tensor<{N}x{M}xf32>, %y: out tensor<{N}x{M}xf32>) {
  %n = tensor.dim %x, 0
  %m = tensor.dim %x, 1
  %a = tensor.empty %n, %m : tensor<{N}x{M}xf32>
  %b = tensor.empty %n, %m : tensor<2x{N}x{M}xf32>
  for %i1 = 0 to %n step 8 parallel {
    for %j1 = 0 to %m step 16 parallel {
      incore {
        %t1 = tile.load %x[%i1, %j1] : tile<8x16xf32>
        %e1 = tile.exp %t1
        tile.store %e1, %a[%i1, %j1]
      }
    }
  }
  for %i2 = 0 to %n step 4 parallel {
    for %j2 = 0 to %m step 32 parallel {
      incore {
        %a2 = tile.load %a[%i2, %j2] : tile<4x32xf32>
        %x2 = tile.load %x[%i2, %j2] : tile<4x32xf32>
        %d2 = tile.mul %a2, 2.0
        %s2 = tile.add %d2, %x2
        tile.store %s2, %b[1, %i2, %j2]
      }
    }
  }
  for %i3 = 0 to %n step 16 parallel {
    for %j3 = 0 to %m step 8 parallel {
      incore {
        %b3 = tile.load %b[1, %i3, %j3] : tile<16x8xf32>
        %a3 = tile.load %a[%i3, %j3] : tile<16x8xf32>
        %z3 = tile.load %b[0, %i3, %j3] : tile<16x8xf32>
        %d3 = tile.sub %b3, %a3
        %r3 = tile.add %d3, %z3
        tile.store %r3, %y[%i3, %j3]
      }
    }
  }
}
)";

TEST(TensorEmpty, ThreeScopesThroughTwoIntermediatesAreExact) {
  Program prog = MustParse(kChain);
  const std::pair<int64_t, int64_t> sizes[] = {{0, 5}, {3, 0}, {1, 1}, {7, 33}, {50, 70}};
  for (auto [n, m] : sizes) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE("N = " + std::to_string(n) + ", M = " + std::to_string(m) +
                   ", threads = " + std::to_string(threads));
      const Args inputs = MakeArgs(prog, {{"N", n}, {"M", m}}, 11, -3.0f, 3.0f);
      Args a = inputs.Clone();
      Status s = ptox::Run(prog, a.Views(), {.target = "cpu", .num_threads = threads});
      ASSERT_TRUE(s.ok()) << s.message();
      HostTensor& x = a["x"];
      ExpectExact(a["y"], "%y", [&](int64_t i) {
        const float e = scalar::Exp(x.Get(i));
        const float b1 = e * 2.0f + x.Get(i);  // -ffp-contract=off: two roundings
        return (b1 - e) + 0.0f;
      });
      ExpectInterpAgrees(prog, inputs, a);
    }
  }
}

// ---- Dependencies through an intermediate: RAW, WAR and WAW across differently sized boxes ----

// A (one slow task: its loop runs 200 times) writes tmp = x + 1; S (one slow task) writes w =
// exp(x[0:64]); B (8-row tasks) y = tmp * 2 + 0 * w[0:8] must wait for A (RAW on tmp) and S;
// C (4-row tasks) tmp = x * 3 must wait for A (WAW) and for the B tasks reading those rows (WAR);
// D (2-row tasks) y += tmp must wait for C (RAW on tmp) and B (on y). While A and S run, a
// runtime that missed any edge on %tmp would run B or C early and change the result.
const char* kHazards = R"(
func @hazards(%x: in tensor<{N}x64xf32>, %w: inout tensor<64x64xf32>,
              %y: inout tensor<{N}x64xf32>) {
  %n = tensor.dim %x, 0
  %tmp = tensor.empty %n : tensor<{N}x64xf32>
  incore {
    for %ka = 0 to 200 step 1 {
      for %ra = 0 to %n step 8 {
        %xa = tile.load %x[%ra, 0] : tile<8x64xf32>
        %pa = tile.add %xa, 1.0
        tile.store %pa, %tmp[%ra, 0]
      }
    }
  }
  incore {
    for %ks = 0 to 2000 step 1 {
      %xs = tile.load %x[0, 0] : tile<64x64xf32>
      %es = tile.exp %xs
      tile.store %es, %w[0, 0]
    }
  }
  for %i2 = 0 to %n step 8 parallel {
    incore {
      %t2 = tile.load %tmp[%i2, 0] : tile<8x64xf32>
      %w2 = tile.load %w[0, 0] : tile<8x64xf32>
      %d2 = tile.mul %t2, 2.0
      %z2 = tile.mul %w2, 0.0
      %s2 = tile.add %d2, %z2
      tile.store %s2, %y[%i2, 0]
    }
  }
  for %i3 = 0 to %n step 4 parallel {
    incore {
      %x3 = tile.load %x[%i3, 0] : tile<4x64xf32>
      %m3 = tile.mul %x3, 3.0
      tile.store %m3, %tmp[%i3, 0]
    }
  }
  for %i4 = 0 to %n step 2 parallel {
    incore {
      %y4 = tile.load %y[%i4, 0] : tile<2x64xf32>
      %t4 = tile.load %tmp[%i4, 0] : tile<2x64xf32>
      %s4 = tile.add %y4, %t4
      tile.store %s4, %y[%i4, 0]
    }
  }
}
)";

TEST(TensorEmpty, DependenciesThroughAnIntermediateHoldOnTwoThreads) {
  Program prog = MustParse(kHazards);
  const Args inputs = MakeArgs(prog, {{"N", 998}}, 5, -2.0f, 2.0f);  // 876 tasks
  for (int rep = 0; rep < 10; ++rep) {
    SCOPED_TRACE("repetition " + std::to_string(rep));
    Args a = inputs.Clone();
    Status s = ptox::Run(prog, a.Views(), {.target = "cpu", .num_threads = 2});
    ASSERT_TRUE(s.ok()) << s.message();
    HostTensor& x = a["x"];
    ExpectExact(a["y"], "%y", [&](int64_t i) {
      return ((x.Get(i) + 1.0f) * 2.0f + 0.0f) + x.Get(i) * 3.0f;  // 0 * w = +0: w > 0
    });
    ExpectExact(a["w"], "%w", [&](int64_t i) { return scalar::Exp(x.Get(i)); });
    if (rep == 0) ExpectInterpAgrees(prog, inputs, a);
  }
}

// ---- Errors -----------------------------------------------------------------------------------

// %tmp has N - 10 rows (negative for N < 10); its rows (tensor.dim) bound the loops.
// y[i] = x[i] + 1 for the first N - 10 rows.
const char* kShort = R"(
func @short(%x: in tensor<{N}x64xf32>, %y: out tensor<{N}x64xf32>) {
  %n = tensor.dim %x, 0
  %m = arith.sub %n, 10
  %tmp = tensor.empty %m : tensor<{M}x64xf32>
  %rows = tensor.dim %tmp, 0
  for %i = 0 to %rows step 4 parallel {
    incore {
      %t = tile.load %x[%i, 0] : tile<4x64xf32>
      %p = tile.add %t, 1.0
      tile.store %p, %tmp[%i, 0]
    }
  }
  for %j = 0 to %rows step 4 parallel {
    incore {
      %u = tile.load %tmp[%j, 0] : tile<4x64xf32>
      tile.store %u, %y[%j, 0]
    }
  }
}
)";

TEST(TensorEmpty, NegativeSymbolicSizeIsAClearRuntimeErrorAndTheNextRunWorks) {
  Program prog = MustParse(kShort);
  for (int threads : {1, 2}) {
    Args bad = MakeArgs(prog, {{"N", 3}}, 1, -1.0f, 1.0f);
    Status s = ptox::Run(prog, bad.Views(), {.target = "cpu", .num_threads = threads});
    ASSERT_EQ(s.code(), StatusCode::kRuntime) << s.message();
    EXPECT_NE(
        s.message().find("tensor.empty at <tensor_empty_test>:5:3: size -7 of dim 0 is negative"),
        std::string::npos)
        << s.message();
    for (int64_t i = 0; i < bad["y"].numel(); ++i) ASSERT_EQ(bad["y"].Get(i), 0.0f);

    Args ok = MakeArgs(prog, {{"N", 17}}, 2, -1.0f, 1.0f);
    s = ptox::Run(prog, ok.Views(), {.target = "cpu", .num_threads = threads});
    ASSERT_TRUE(s.ok()) << s.message();
    HostTensor& x = ok["x"];
    ExpectExact(ok["y"], "%y", [&](int64_t i) { return i < 7 * 64 ? x.Get(i) + 1.0f : 0.0f; });
  }
}

// %tmp is (2^40 N) x (2^40 N) x 64 f32: its byte size overflows int64; %big is 2^52 N x 64 f32,
// 2^60 N bytes, more than any address space.
const char* kHuge = R"(
func @huge(%x: in tensor<{N}x64xf32>, %y: out tensor<{N}x64xf32>) {
  %n = tensor.dim %x, 0
  %s = arith.mul %n, 1099511627776
  %tmp = tensor.empty %s, %s : tensor<{A}x{A}x64xf32>
  incore {
    %t = tile.load %x[0, 0] : tile<1x64xf32>
    tile.store %t, %tmp[0, 0, 0]
    %u = tile.load %tmp[0, 0, 0] : tile<1x64xf32>
    tile.store %u, %y[0, 0]
  }
}
func @big(%x: in tensor<{N}x64xf32>, %y: out tensor<{N}x64xf32>) {
  %n = tensor.dim %x, 0
  %s = arith.mul %n, 4503599627370496
  %tmp = tensor.empty %s : tensor<{A}x64xf32>
  incore {
    %t = tile.load %x[0, 0] : tile<1x64xf32>
    tile.store %t, %tmp[0, 0]
    %u = tile.load %tmp[0, 0] : tile<1x64xf32>
    tile.store %u, %y[0, 0]
  }
}
)";

TEST(TensorEmpty, UnallocatableSizesAreClearRuntimeErrors) {
  Program prog = MustParse(kHuge);
  Args a = MakeArgs(prog, {{"N", 1}}, 3, -1.0f, 1.0f);
  Status s = ptox::Run(prog, a.Views(), {.target = "cpu", .function = "huge"});
  ASSERT_EQ(s.code(), StatusCode::kRuntime) << s.message();
  EXPECT_NE(
      s.message().find("tensor.empty at <tensor_empty_test>:5:3: cannot allocate 3.095e+26 bytes"),
      std::string::npos)
      << s.message();
  s = ptox::Run(prog, a.Views(), {.target = "cpu", .function = "big"});
  ASSERT_EQ(s.code(), StatusCode::kRuntime) << s.message();
  EXPECT_NE(s.message().find("tensor.empty at <tensor_empty_test>:16:3: cannot allocate "
                             "1152921504606846976 bytes"),
            std::string::npos)
      << s.message();
}

// ---- Fresh tensors are zero, even where a previous run's tensor was ---------------------------

// @dirty fills an intermediate with x; @clean reads a fresh one it never writes (its rows from
// tensor.dim inside the kernel): y = tmp + x must be x. Small buffers are the ones malloc
// reuses, so @clean's tensor usually sits where @dirty's was.
const char* kDirtyThenClean = R"(
func @dirty(%x: in tensor<{N}x64xf32>, %y: out tensor<{N}x64xf32>) {
  %n = tensor.dim %x, 0
  %tmp = tensor.empty %n : tensor<{N}x64xf32>
  incore {
    %t = tile.load %x[0, 0] : tile<16x64xf32>
    tile.store %t, %tmp[0, 0]
  }
  incore {
    %u = tile.load %tmp[0, 0] : tile<16x64xf32>
    tile.store %u, %y[0, 0]
  }
}
func @clean(%x: in tensor<{N}x64xf32>, %y: out tensor<{N}x64xf32>) {
  %n = tensor.dim %x, 0
  %tmp = tensor.empty %n : tensor<{N}x64xf32>
  incore {
    %r = tensor.dim %tmp, 0
    %l = arith.sub %r, 16
    %u = tile.load %tmp[%l, 0] : tile<16x64xf32>
    %t = tile.load %x[%l, 0] : tile<16x64xf32>
    %s = tile.add %u, %t
    tile.store %s, %y[%l, 0]
  }
}
)";

TEST(TensorEmpty, FreshTensorsReadAsZeroAfterAnotherRunFilledOne) {
  Program prog = MustParse(kDirtyThenClean);
  for (int rep = 0; rep < 20; ++rep) {
    Args d = MakeArgs(prog, {{"N", 16}}, 8 + rep, 1.0f, 2.0f);
    Status s = ptox::Run(prog, d.Views(), {.target = "cpu", .function = "dirty"});
    ASSERT_TRUE(s.ok()) << s.message();
    ExpectExact(d["y"], "@dirty %y", [&](int64_t i) { return d["x"].Get(i); });
    Args c = MakeArgs(prog, {{"N", 16}}, 9 + rep, -1.0f, 1.0f);
    s = ptox::Run(prog, c.Views(), {.target = "cpu", .function = "clean"});
    ASSERT_TRUE(s.ok()) << s.message();
    ExpectExact(c["y"], "@clean %y", [&](int64_t i) { return 0.0f + c["x"].Get(i); });
  }
}

// ---- The NaN check covers intermediates ---------------------------------------------------------

const char* kLogs = R"(
func @logs(%x: in tensor<16x16xf32>, %y: out tensor<16x16xf32>) {
  %tmp = tensor.empty : tensor<16x16xf32>
  for %i = 0 to 16 step 4 parallel {
    incore {
      %t = tile.load %x[%i, 0] : tile<4x16xf32>
      %l = tile.log %t
      tile.store %l, %tmp[%i, 0]
    }
  }
  for %j = 0 to 16 step 8 parallel {
    incore {
      %u = tile.load %tmp[%j, 0] : tile<8x16xf32>
      tile.store %u, %y[%j, 0]
    }
  }
}
)";

TEST(TensorEmpty, CheckNanNamesTheIntermediateAndElement) {
  Program prog = MustParse(kLogs);
  Args a = MakeArgs(prog, {}, 4, 0.5f, 4.0f);
  a["x"].Set(9 * 16 + 5, -1.0f);  // log(-1) = NaN at tmp[9, 5]
  Status s = ptox::Run(prog, a.Views(), {.target = "cpu", .num_threads = 2, .check_nan = true});
  ASSERT_EQ(s.code(), StatusCode::kRuntime) << s.message();
  EXPECT_NE(s.message().find("logs.incore0"), std::string::npos) << s.message();
  EXPECT_NE(
      s.message().find("NaN written to %tmp (tensor.empty at <tensor_empty_test>:3:3) at [9, 5]"),
      std::string::npos)
      << s.message();

  Args b = MakeArgs(prog, {}, 4, 0.5f, 4.0f);
  b["x"].Set(9 * 16 + 5, -1.0f);
  s = ptox::Run(prog, b.Views(), {.target = "cpu", .num_threads = 2});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(std::isnan(b["y"].Get(9 * 16 + 5)));
  EXPECT_EQ(b["y"].Get(0), scalar::Log(b["x"].Get(0)));
}

}  // namespace
}  // namespace ptox::testing
