// Distributed runs simulated on the interpreter (ptox::RunRanks, docs/distributed.md): dist.rank /
// dist.world_size, tensor.allreduce sum and max, allgather, reduce_scatter and broadcast against
// results computed here (sums in docs/ops.md's tree over the ranks), a failing rank, mismatched
// collectives, sizes that do not fit the world and a rank that skips a collective — errors, never a
// hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ptox/ptox.h"
#include "tests/common/tree_sum.h"

namespace ptox::testing {
namespace {

Program MustParse(const std::string& text) {
  Result<Program> p = Program::Parse(text, "dist.pto");
  EXPECT_TRUE(p.ok()) << p.status().message();
  if (!p.ok()) std::abort();
  return *p;
}

const char* kAllreduce = R"(
func @f(%x: in tensor<{N}x{M}xf32>, %s: out tensor<{N}x{M}xf32>, %m: out tensor<{N}x{M}xf32>) {
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %s
  %b = tensor.allreduce %x {op = "max"}
  tensor.store %b, %m
}
)";

struct Rank {
  std::vector<float> x, s, m;
};

std::vector<Arg> ArgsOf(Rank& k, int64_t n, int64_t m) {
  return {Tensor::Contiguous(k.x.data(), DType::kF32, {n, m}),
          Tensor::Contiguous(k.s.data(), DType::kF32, {n, m}),
          Tensor::Contiguous(k.m.data(), DType::kF32, {n, m})};
}

// Each rank's (x, y) arguments of a program over 1-D f32 tensors, x[r] and y[r] of rank r's size.
std::vector<std::vector<Arg>> XyPerRank(std::vector<std::vector<float>>& x,
                                        std::vector<std::vector<float>>& y) {
  std::vector<std::vector<Arg>> args;
  for (size_t r = 0; r < x.size(); ++r)
    args.push_back({Tensor::Contiguous(x[r].data(), DType::kF32, {int64_t(x[r].size())}),
                    Tensor::Contiguous(y[r].data(), DType::kF32, {int64_t(y[r].size())})});
  return args;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(DistInterp, AllreduceSumIsTheTreeAndMaxKeepsTheFirstNaN) {
  const Program prog = MustParse(kAllreduce);
  for (int ranks : {1, 2, 3, 4, 6}) {
    for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {7, 33}, {0, 4}}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks, " + std::to_string(n) + "x" + std::to_string(m));
      std::vector<Rank> rk(ranks);
      for (int r = 0; r < ranks; ++r) {
        rk[r].x.resize(n * m);
        rk[r].s.assign(n * m, -1.0f);
        rk[r].m.assign(n * m, -1.0f);
        // Values whose f32 sum depends on the order: 1e8 + 1 + ... loses the small terms.
        for (int64_t i = 0; i < n * m; ++i)
          rk[r].x[i] = (r % 2 == 0 ? 1e8f : 1.0f) * static_cast<float>((i * 7 + r * 3) % 11 - 5);
        if (n * m > 2) rk[r].x[2] = r == 1 ? NAN : rk[r].x[2];
        if (n * m > 3) rk[r].x[3] = -0.0f;
      }
      std::vector<std::vector<Arg>> args;
      for (Rank& k : rk) args.push_back(ArgsOf(k, n, m));
      Status st = RunRanks(prog, args);
      ASSERT_TRUE(st.ok()) << st.message();
      int differs = 0;  // elements where the tree and a rank-order sum differ
      for (int64_t i = 0; i < n * m; ++i) {
        float mx = rk[0].x[i], in_order = rk[0].x[i];
        for (int r = 1; r < ranks; ++r) {
          const float y = rk[r].x[i];
          in_order = in_order + y;
          mx = std::isnan(mx) ? mx : std::isnan(y) ? y : (y > mx ? y : mx);
        }
        const float sum = test::TreeSum(0, ranks, [&](int r) { return rk[r].x[i]; });
        differs += Bits(sum) != Bits(in_order);
        for (int r = 0; r < ranks; ++r) {
          EXPECT_EQ(Bits(rk[r].s[i]), Bits(sum)) << "sum, rank " << r << ", element " << i;
          EXPECT_EQ(std::isnan(rk[r].m[i]), std::isnan(mx)) << "max, rank " << r << ", " << i;
          if (!std::isnan(mx)) {
            EXPECT_EQ(rk[r].m[i], mx) << "max, rank " << r << ", " << i;
          }
        }
      }
      if (ranks == 4 && n * m > 5) {  // the inputs tell the order apart
        EXPECT_GT(differs, 0);
      }
    }
  }
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// allgather (f32 and i32), reduce_scatter (sum, max) and broadcast from the last rank, against
// results computed here; `big` has world_size times x's rows.
const char* kOthers = R"(
func @f(%x: in tensor<{N}x{M}xf32>, %xi: in tensor<{N}x{M}xi32>, %big: in tensor<{G}x{M}xf32>,
        %g: out tensor<{G}x{M}xf32>, %gi: out tensor<{G}x{M}xi32>, %s: out tensor<{N}x{M}xf32>,
        %m: out tensor<{N}x{M}xf32>, %b: inout tensor<{N}x{M}xf32>) {
  dist.allgather %g, %x
  dist.allgather %gi, %xi
  dist.reduce_scatter %s, %big {op = "sum"}
  dist.reduce_scatter %m, %big {op = "max"}
  dist.broadcast %b {root = ROOT}
}
)";

TEST(DistInterp, AllgatherReduceScatterAndBroadcast) {
  for (int ranks : {1, 2, 3, 4}) {
    const Program prog = MustParse(Replace(kOthers, "ROOT", std::to_string(ranks - 1)));
    for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {2, 33}, {0, 4}}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks, " + std::to_string(n) + "x" +
                   std::to_string(m));
      const int64_t e = n * m, ge = ranks * e;
      struct R {
        std::vector<float> x, big, g, s, m, b;
        std::vector<int32_t> xi, gi;
      };
      std::vector<R> rk(ranks);
      for (int r = 0; r < ranks; ++r) {
        R& k = rk[r];
        for (int64_t i = 0; i < e; ++i) {
          k.x.push_back(float(r * 1000 + i));
          k.xi.push_back(-r * 1000 - int32_t(i));
          k.b.push_back(float(r) + 0.5f * float(i));
        }
        for (int64_t i = 0; i < ge; ++i)  // an order-dependent f32 sum, a NaN, -0
          k.big.push_back((r % 2 == 0 ? 1e8f : 1.0f) * float((i * 7 + r * 3) % 11 - 5));
        if (ge > 2 && r == 1) k.big[2] = NAN;
        if (ge > 3) k.big[3] = -0.0f;
        k.g.assign(ge, -1.0f), k.gi.assign(ge, -1), k.s.assign(e, -1.0f), k.m.assign(e, -1.0f);
      }
      std::vector<std::vector<Arg>> args;
      for (R& k : rk)
        args.push_back({Tensor::Contiguous(k.x.data(), DType::kF32, {n, m}),
                        Tensor::Contiguous(k.xi.data(), DType::kI32, {n, m}),
                        Tensor::Contiguous(k.big.data(), DType::kF32, {ranks * n, m}),
                        Tensor::Contiguous(k.g.data(), DType::kF32, {ranks * n, m}),
                        Tensor::Contiguous(k.gi.data(), DType::kI32, {ranks * n, m}),
                        Tensor::Contiguous(k.s.data(), DType::kF32, {n, m}),
                        Tensor::Contiguous(k.m.data(), DType::kF32, {n, m}),
                        Tensor::Contiguous(k.b.data(), DType::kF32, {n, m})});
      const std::vector<float> root_b = rk[ranks - 1].b;
      Status st = RunRanks(prog, args);
      ASSERT_TRUE(st.ok()) << st.message();
      for (int r = 0; r < ranks; ++r) {
        for (int q = 0; q < ranks; ++q) {
          for (int64_t i = 0; i < e; ++i) {
            ASSERT_EQ(rk[r].g[q * e + i], rk[q].x[i]) << "allgather f32 on rank " << r;
            ASSERT_EQ(rk[r].gi[q * e + i], rk[q].xi[i]) << "allgather i32 on rank " << r;
          }
        }
        for (int64_t i = 0; i < e; ++i) {
          const int64_t at = r * e + i;
          float mx = rk[0].big[at];
          for (int q = 1; q < ranks; ++q) {
            const float y = rk[q].big[at];
            mx = std::isnan(mx) ? mx : std::isnan(y) ? y : (y > mx ? y : mx);
          }
          const float sum = test::TreeSum(0, ranks, [&](int q) { return rk[q].big[at]; });
          EXPECT_EQ(Bits(rk[r].s[i]), Bits(sum)) << "reduce_scatter sum, rank " << r << ", " << i;
          EXPECT_EQ(Bits(rk[r].m[i]), Bits(mx)) << "reduce_scatter max, rank " << r << ", " << i;
        }
        EXPECT_EQ(rk[r].b, root_b) << "broadcast to rank " << r;
      }
    }
  }
}

// Sizes that do not fit the world and a root outside it: errors naming the op, on every rank.
TEST(DistInterp, CollectiveSizesAndRootsAreChecked) {
  const Program gather = MustParse(R"(
func @f(%x: in tensor<{N}xf32>, %g: out tensor<{G}xf32>) {
  dist.allgather %g, %x
}
)");
  std::vector<std::vector<float>> x(2, std::vector<float>(3)), g(2, std::vector<float>(5));
  Status st = RunRanks(gather, XyPerRank(x, g));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("dist.allgather (dist.pto:3): out has 5 rows, not 2 ranks x 3"),
            std::string::npos)
      << st.message();
  const Program scatter = MustParse(R"(
func @f(%x: in tensor<{G}xf32>, %h: out tensor<{N}xf32>) {
  dist.reduce_scatter %h, %x {op = "sum"}
}
)");
  std::vector<std::vector<float>> big(3, std::vector<float>(7)), h(3, std::vector<float>(2));
  st = RunRanks(scatter, XyPerRank(big, h));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("x has 7 rows, not 3 ranks x 2"), std::string::npos)
      << st.message();
  const Program bcast = MustParse(R"(
func @f(%x: in tensor<4xf32>, %y: inout tensor<4xf32>) {
  dist.broadcast %y {root = 2}
}
)");
  std::vector<std::vector<float>> a(2, std::vector<float>(4)), b = a;
  st = RunRanks(bcast, XyPerRank(a, b));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("root 2 is not a rank of a world of 2"), std::string::npos)
      << st.message();
  for (const char* target : {"interp", "cpu"}) {  // alone: root 2 of a world of 1
    st = ptox::Run(bcast, XyPerRank(a, b)[0], {.target = target});
    EXPECT_NE(st.message().find("root 2 is not a rank of a world of 1"), std::string::npos)
        << target << ": " << st.message();
  }
}

// One-sided access: every rank puts its rank + 1 into row 0, column `rank` of the next rank's
// window, and gets row 1 of the previous rank's window into %g, in one epoch (no element is both
// put and got). The windows start at -1 but for a rank's own column (100 + rank, set before the
// run); the gets see row 1 as it was before the epoch.
const char* kRing = R"(
func @f(%win: inout tensor<2x{W}xf32>, %g: out tensor<1x{W}xf32>) {
  %r = dist.rank
  %w = dist.world_size
  %n0 = arith.add %r, 1
  %next = arith.rem %n0, %w
  %p0 = arith.add %r, %w
  %p1 = arith.sub %p0, 1
  %prev = arith.rem %p1, %w
  %rf = arith.cast %r : f32
  %v = arith.add %rf, 1.0
  %e = tensor.empty : tensor<1x1xf32>
  %mine = tensor.add %e, %v
  dist.put %win, %mine, %next, 0, %r
  dist.get %g, %win, %prev, 1, 0
  dist.fence
}
)";

TEST(DistInterp, PutsAndGetsTakeEffectAtTheFence) {
  const Program prog = MustParse(kRing);
  for (int ranks : {1, 2, 3, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    std::vector<std::vector<float>> win(ranks, std::vector<float>(2 * ranks, -1.0f)),
        g(ranks, std::vector<float>(ranks, 0.0f));
    for (int r = 0; r < ranks; ++r) win[r][r] = win[r][ranks + r] = 100.0f + r;  // own column
    std::vector<std::vector<Arg>> args;
    for (int r = 0; r < ranks; ++r)
      args.push_back({Tensor::Contiguous(win[r].data(), DType::kF32, {2, ranks}),
                      Tensor::Contiguous(g[r].data(), DType::kF32, {1, ranks})});
    Status st = RunRanks(prog, args);
    ASSERT_TRUE(st.ok()) << st.message();
    for (int r = 0; r < ranks; ++r) {
      const int prev = (r + ranks - 1) % ranks;
      for (int c = 0; c < ranks; ++c) {
        // Row 0: column prev got prev + 1 (prev's put); the own column stays unless it is prev.
        const float row0 = c == prev ? float(prev + 1) : c == r ? 100.0f + r : -1.0f;
        EXPECT_EQ(win[r][c], row0) << "rank " << r << ", column " << c;
        EXPECT_EQ(win[r][ranks + c], c == r ? 100.0f + r : -1.0f) << "rank " << r << ", " << c;
        EXPECT_EQ(g[r][c], c == prev ? 100.0f + prev : -1.0f) << "rank " << r << ", " << c;
      }
    }
  }
}

// Two ranks put into one element in an epoch, a put and a get of one element, no fence after a
// put, a rank outside the world, a box past the window: errors naming the op.
TEST(DistInterp, OneSidedErrors) {
  auto run = [](const std::string& body, int ranks) {
    const Program prog = MustParse(
        "func @f(%win: inout tensor<4xf32>, %g: out tensor<2xf32>) {\n"
        "  %r = dist.rank\n" + body + "}\n");
    std::vector<std::vector<float>> win(ranks, std::vector<float>(4)),
        g(ranks, std::vector<float>(2));
    std::vector<std::vector<Arg>> args;
    for (int r = 0; r < ranks; ++r)
      args.push_back({Tensor::Contiguous(win[r].data(), DType::kF32, {4}),
                      Tensor::Contiguous(g[r].data(), DType::kF32, {2})});
    return RunRanks(prog, args);
  };
  Status st =
      run("  %e = tensor.empty : tensor<2xf32>\n  dist.put %win, %e, 0, 1\n  dist.fence\n", 2);
  EXPECT_NE(st.message().find("ranks 0 and 1 put into element [1] of rank 0's window in one epoch"),
            std::string::npos)
      << st.message();
  st = run("  %e = tensor.empty : tensor<2xf32>\n  dist.put %win, %e, 0, 0\n"
           "  dist.get %g, %win, 0, 1\n  dist.fence\n", 1);
  EXPECT_NE(st.message().find("puts into element [1] of rank 0's window and rank 0 gets it"),
            std::string::npos)
      << st.message();
  st = run("  %e = tensor.empty : tensor<2xf32>\n  dist.put %win, %e, 0, %r\n", 2);
  EXPECT_NE(st.message().find("has no dist.fence after it"), std::string::npos) << st.message();
  st = run("  dist.get %g, %win, 2, 0\n  dist.fence\n", 2);
  EXPECT_NE(st.message().find("rank 2 is not a rank of a world of 2"), std::string::npos)
      << st.message();
  st = run("  dist.get %g, %win, 0, 3\n  dist.fence\n", 2);
  EXPECT_NE(st.message().find("does not fit the window's shape 4"), std::string::npos)
      << st.message();
}

TEST(DistInterp, RankAndWorldSize) {
  const Program prog = MustParse(R"(
func @f(%y: out tensor<1x2xf32>) {
  %r = dist.rank
  %w = dist.world_size
  %rf = arith.cast %r : f32
  %wf = arith.cast %w : f32
  %e = tensor.empty : tensor<1x1xf32>
  %a = tensor.add %e, %rf
  %b = tensor.add %e, %wf
  %c = tensor.concat %a, %b {axis = 1}
  tensor.store %c, %y
}
)");
  std::vector<std::vector<float>> y(3, std::vector<float>(2, -1.0f));
  std::vector<std::vector<Arg>> args;
  for (auto& v : y) args.push_back({Tensor::Contiguous(v.data(), DType::kF32, {1, 2})});
  Status st = RunRanks(prog, args);
  ASSERT_TRUE(st.ok()) << st.message();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(y[r], (std::vector<float>{float(r), 3.0f}));
  // Run without ranks: rank 0 of 1, and an allreduce is its input.
  std::vector<float> one(2, -1.0f);
  st = ptox::Run(prog, {Tensor::Contiguous(one.data(), DType::kF32, {1, 2})});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(one, (std::vector<float>{0.0f, 1.0f}));
}

// Every rank passes x of its own size to the allreduce: rank 1's differs.
TEST(DistInterp, MismatchedShapesFailEveryRankWithoutHanging) {
  const Program prog = MustParse(R"(
func @f(%x: in tensor<{N}xf32>, %y: out tensor<{N}xf32>) {
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %y
}
)");
  std::vector<std::vector<float>> x = {{1, 2, 3}, {1, 2}, {1, 2, 3}}, y = x;
  const std::vector<std::vector<Arg>> args = XyPerRank(x, y);
  const auto start = std::chrono::steady_clock::now();
  Status st = RunRanks(prog, args);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("collective mismatch: rank 0 passed f32 3 to tensor.allreduce"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("rank 1 f32 2"), std::string::npos) << st.message();
}

// Rank 1 fails (an assert) before the allreduce the others wait in: the run fails with rank 1's
// own message, at once.
TEST(DistInterp, AFailingRankEndsTheOthers) {
  const Program prog = MustParse(R"(
func @f(%x: in tensor<4xf32>, %y: out tensor<4xf32>) {
  %r = dist.rank
  %ok = arith.ne %r, 1
  arith.assert %ok {msg = "rank one gives up"}
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %y
}
)");
  std::vector<std::vector<float>> x(3, std::vector<float>(4, 1.0f)), y = x;
  const std::vector<std::vector<Arg>> args = XyPerRank(x, y);
  const auto start = std::chrono::steady_clock::now();
  Status st = RunRanks(prog, args);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("rank 1: ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("rank one gives up"), std::string::npos) << st.message();
}

// Rank 0 skips the allreduce (its if arm has none): the other rank fails, naming it, well before
// the 100 ms timeout would.
TEST(DistInterp, ARankThatSkipsACollective) {
  const Program prog = MustParse(R"(
func @f(%x: in tensor<4xf32>, %y: out tensor<4xf32>) {
  %r = dist.rank
  %skip = arith.eq %r, 0
  if %skip {
  } else {
    %a = tensor.allreduce %x {op = "max"}
    tensor.store %a, %y
  }
}
)");
  std::vector<std::vector<float>> x(2, std::vector<float>(4, 1.0f)), y = x;
  Status st = RunRanks(prog, XyPerRank(x, y), {}, 100);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("finished without reaching tensor.allreduce"), std::string::npos)
      << st.message();
}

// Alone, a compiled target's allreduce is its input and dist.rank 0 of 1, as on the interpreter;
// RunRanks simulates ranks on the interpreter only; bad arguments name their rank.
TEST(DistInterp, CompiledTargetsAloneAndBadArguments) {
  const Program prog = MustParse(R"(
func @f(%x: in tensor<4xf32>, %y: out tensor<4xf32>) {
  %r = dist.rank
  %w = dist.world_size
  %rf = arith.cast %r : f32
  %wf = arith.cast %w : f32
  %a = tensor.allreduce %x {op = "sum"}
  %b = tensor.mul %a, %wf
  %c = tensor.add %b, %rf
  tensor.store %c, %y
}
)");
  std::vector<float> x = {1.5f, -2.0f, NAN, -0.0f}, y(4, 7.0f);
  std::vector<Arg> a = {Tensor::Contiguous(x.data(), DType::kF32, {4}),
                        Tensor::Contiguous(y.data(), DType::kF32, {4})};
  Status st = ptox::Run(prog, a, {.target = "cpu"});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 0.0f);  // -0 * 1 + 0 = +0
  st = RunRanks(prog, {a, a}, {.target = "cpu"});
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.message();
  st = RunRanks(prog, {});
  EXPECT_EQ(st.code(), StatusCode::kInvalid) << st.message();
  // Alone, allgather and reduce_scatter copy x, a broadcast from rank 0 keeps its buffer.
  const Program others = MustParse(Replace(kOthers, "ROOT", "0"));
  std::vector<float> x6 = {1, 2, NAN, -0.0f, 5, 6}, g6(6), s6(6), m6(6), b6 = {7, 8, 9, 1, 2, 3};
  std::vector<int32_t> xi6 = {1, -2, 3, -4, 5, -6}, gi6(6);
  for (const char* target : {"interp", "cpu"}) {
    std::fill(g6.begin(), g6.end(), 0.0f), std::fill(s6.begin(), s6.end(), 0.0f);
    std::fill(m6.begin(), m6.end(), 0.0f), std::fill(gi6.begin(), gi6.end(), 0);
    auto t = [](auto& v, DType dt) { return Tensor::Contiguous(v.data(), dt, {2, 3}); };
    st = ptox::Run(others,
                   {t(x6, DType::kF32), t(xi6, DType::kI32), t(x6, DType::kF32),
                    t(g6, DType::kF32), t(gi6, DType::kI32), t(s6, DType::kF32),
                    t(m6, DType::kF32), t(b6, DType::kF32)},
                   {.target = target});
    ASSERT_TRUE(st.ok()) << target << ": " << st.message();
    for (const std::vector<float>* v : {&g6, &s6, &m6}) {
      for (int i = 0; i < 6; ++i) EXPECT_EQ(Bits((*v)[i]), Bits(x6[i])) << target << " " << i;
    }
    EXPECT_EQ(gi6, xi6) << target;
    EXPECT_EQ(b6, (std::vector<float>{7, 8, 9, 1, 2, 3})) << target;
  }
  std::vector<float> short_x(3);
  st = RunRanks(prog, {a, {Tensor::Contiguous(short_x.data(), DType::kF32, {3}), a[1]}});
  EXPECT_EQ(st.code(), StatusCode::kInvalid) << st.message();
  EXPECT_EQ(st.message().find("rank 1: "), 0u) << st.message();
}

}  // namespace
}  // namespace ptox::testing
