// Run under `mpirun -np N` (ctest label dist, N = 2 and 4): each process is one rank and runs the
// program on the interpreter and on the CPU target over MPI (driver/mpi_comm.h). Every rank knows
// every rank's inputs (they come from the rank number), so each checks its result against the
// same program run as N simulated ranks in one process (ptox::RunRanks, the specification) and
// against a fold computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ptox/dist.h"
#include "ptox/ptox.h"
#include "tests/common/half.h"
#include "tests/common/tree_sum.h"

namespace ptox::testing {
namespace {

const char* kProgram = R"(
func @f(%x: in tensor<{N}x{M}xDT>, %s: out tensor<{N}x{M}xDT>, %m: out tensor<{N}x{M}xDT>,
        %rw: out tensor<1x2xf32>) {
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %s
  %b = tensor.allreduce %x {op = "max"}
  tensor.store %b, %m
  %r = dist.rank
  %w = dist.world_size
  %rf = arith.cast %r : f32
  %wf = arith.cast %w : f32
  %e = tensor.empty : tensor<1x1xf32>
  %er = tensor.add %e, %rf
  %ew = tensor.add %e, %wf
  %c = tensor.concat %er, %ew {axis = 1}
  tensor.store %c, %rw
}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Rank r's input: values whose f32 sum depends on the order, a NaN on rank 1 and -0.
std::vector<float> Input(int r, int64_t n) {
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = (r % 2 == 0 ? 1e8f : 1.0f) * static_cast<float>((i * 7 + r * 3) % 11 - 5) + 0.25f * r;
  if (n > 2 && r == 1) x[2] = NAN;
  if (n > 3) x[3] = -0.0f;
  return x;
}

// Element type storage: f32 values as f32, bf16 / f16 as 16-bit words of the rounded values.
struct Buf {
  DType dt;
  std::vector<uint32_t> w;  // one word per element (16-bit types use the low half)
  std::vector<uint16_t> h;
  explicit Buf(DType d, int64_t n) : dt(d), w(d == DType::kF32 ? n : 0), h(d == DType::kF32 ? 0 : n) {}
  void* data() { return dt == DType::kF32 ? static_cast<void*>(w.data()) : h.data(); }
};

void Fill(Buf& b, int r, const std::vector<float>& x) {
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &x[i], 4);
    if (b.dt == DType::kF32) b.w[i] = u;
    else if (b.dt == DType::kBF16) b.h[i] = static_cast<uint16_t>(u >> 16);  // truncated: exact
    else  // f16: about 1000 on even ranks, about 1 on odd ones, so the sum's order matters
      b.h[i] = static_cast<uint16_t>((r % 2 == 0 ? 0x63D0 : 0x3C00) + (i * 7 + r * 13) % 64);
  }
}

class MpiRanks : public ::testing::TestWithParam<std::tuple<DType, std::string>> {};

TEST_P(MpiRanks, AllreduceMatchesTheSimulatedRanksBitForBit) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1) << "run this test under mpirun -np N with N > 1";
  const auto [dt, target] = GetParam();
  const char* name = dt == DType::kF32 ? "f32" : dt == DType::kBF16 ? "bf16" : "f16";
  Result<Program> prog = Program::Parse(Replace(kProgram, "DT", name), "mpi.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {7, 33}, {0, 4}, {64, 65},
                                                               {600, 65}, {2047, 65}}) {
    SCOPED_TRACE(std::string(name) + " " + std::to_string(n) + "x" + std::to_string(m));
    std::vector<Buf> x, s, mx;
    std::vector<std::vector<float>> rw(me.world_size, std::vector<float>(2, -1.0f));
    std::vector<std::vector<float>> in;  // each rank's input
    for (int r = 0; r < me.world_size; ++r) {
      in.push_back(Input(r, n * m));
      x.emplace_back(dt, n * m);
      Fill(x.back(), r, in.back());
      s.emplace_back(dt, n * m);
      mx.emplace_back(dt, n * m);
    }
    auto args = [&](int r) {
      return std::vector<Arg>{Tensor::Contiguous(x[r].data(), dt, {n, m}),
                              Tensor::Contiguous(s[r].data(), dt, {n, m}),
                              Tensor::Contiguous(mx[r].data(), dt, {n, m}),
                              Tensor::Contiguous(rw[r].data(), DType::kF32, {1, 2})};
    };
    std::vector<std::vector<Arg>> all;
    for (int r = 0; r < me.world_size; ++r) all.push_back(args(r));
    Status st = RunRanks(*prog, all);  // the specification, every rank in this process
    ASSERT_TRUE(st.ok()) << st.message();
    Buf got_s(dt, n * m), got_m(dt, n * m);
    std::vector<float> got_rw(2, -1.0f);
    std::vector<Arg> mine = args(me.rank);
    mine[1] = Tensor::Contiguous(got_s.data(), dt, {n, m});
    mine[2] = Tensor::Contiguous(got_m.data(), dt, {n, m});
    mine[3] = Tensor::Contiguous(got_rw.data(), DType::kF32, {1, 2});
    st = ptox::Run(*prog, mine, {.target = target});  // this rank, over MPI
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(got_s.w, s[me.rank].w);
    EXPECT_EQ(got_s.h, s[me.rank].h);
    EXPECT_EQ(got_m.w, mx[me.rank].w);
    EXPECT_EQ(got_m.h, mx[me.rank].h);
    EXPECT_EQ(got_rw, (std::vector<float>{float(me.rank), float(me.world_size)}));
    EXPECT_EQ(got_rw, rw[me.rank]);
    if (dt == DType::kF32) {  // and against the tree computed here
      for (int64_t i = 0; i < n * m; ++i) {
        const float sum = test::TreeSum(0, me.world_size, [&](int r) { return in[r][i]; });
        uint32_t want;
        std::memcpy(&want, &sum, 4);
        EXPECT_EQ(got_s.w[i], want) << "element " << i;
      }
    }
  }
}

// allgather, reduce_scatter (sum, max) and broadcast from the last rank: each rank's results
// over MPI against the simulated ranks'.
TEST_P(MpiRanks, OtherCollectivesMatchTheSimulatedRanksBitForBit) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1);
  const auto [dt, target] = GetParam();
  const char* name = dt == DType::kF32 ? "f32" : dt == DType::kBF16 ? "bf16" : "f16";
  const int w = me.world_size;
  Result<Program> prog = Program::Parse(Replace(Replace(R"(
func @f(%x: in tensor<{N}x{M}xDT>, %big: in tensor<{G}x{M}xDT>, %g: out tensor<{G}x{M}xDT>,
        %s: out tensor<{N}x{M}xDT>, %m: out tensor<{N}x{M}xDT>, %b: inout tensor<{N}x{M}xDT>) {
  dist.allgather %g, %x
  dist.reduce_scatter %s, %big {op = "sum"}
  dist.reduce_scatter %m, %big {op = "max"}
  dist.broadcast %b {root = ROOT}
}
)", "DT", name), "ROOT", std::to_string(w - 1)), "others.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {0, 4}, {64, 65}, {150, 65}}) {
    SCOPED_TRACE(std::string(name) + " " + std::to_string(n) + "x" + std::to_string(m));
    const int64_t e = n * m;
    // Per rank: x, big, g, s, m, b (the simulated run's), and b's input.
    std::vector<std::vector<Buf>> bufs(w);
    for (int r = 0; r < w; ++r) {
      for (int64_t size : {e, w * e, w * e, e, e, e}) bufs[r].emplace_back(dt, size);
      Fill(bufs[r][0], r, Input(r, e));
      Fill(bufs[r][1], r, Input(r + 7, w * e));
      Fill(bufs[r][5], r, Input(r + 3, e));
    }
    auto args = [&](std::vector<Buf>& b) {
      std::vector<Arg> a;
      for (size_t k = 0; k < b.size(); ++k)
        a.push_back(Tensor::Contiguous(b[k].data(), dt, {k == 1 || k == 2 ? w * n : n, m}));
      return a;
    };
    std::vector<Buf> mine = bufs[me.rank];  // copies: this rank's inputs for the MPI run
    std::vector<std::vector<Arg>> all;
    for (int r = 0; r < w; ++r) all.push_back(args(bufs[r]));
    Status st = RunRanks(*prog, all);
    ASSERT_TRUE(st.ok()) << st.message();
    st = ptox::Run(*prog, args(mine), {.target = target});
    ASSERT_TRUE(st.ok()) << st.message();
    for (size_t k = 2; k < 6; ++k) {
      EXPECT_EQ(mine[k].w, bufs[me.rank][k].w) << "output " << k;
      EXPECT_EQ(mine[k].h, bufs[me.rank][k].h) << "output " << k;
    }
    EXPECT_EQ(mine[5].w, bufs[w - 1][5].w);  // broadcast: the last rank's input everywhere
    EXPECT_EQ(mine[5].h, bufs[w - 1][5].h);
  }
}

// One-sided access: each rank puts a 3 x 33 block into the next rank's window at (0, 33 rank) and
// gets rows 3..5 of the previous rank's window into %g (a strided view on the CPU target's side
// too: every other column of a wider buffer), over a few epochs: the windows and the gets match
// the simulated ranks bit for bit.
TEST_P(MpiRanks, PutsAndGetsMatchTheSimulatedRanksBitForBit) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1);
  const auto [dt, target] = GetParam();
  const char* name = dt == DType::kF32 ? "f32" : dt == DType::kBF16 ? "bf16" : "f16";
  const int64_t w = me.world_size, cols = 33 * w;
  Result<Program> prog = Program::Parse(Replace(R"(
func @f(%x: in tensor<3x33xDT>, %win: inout tensor<6x{C}xDT>, %g: out tensor<3x{C}xDT>) {
  %r = dist.rank
  %w = dist.world_size
  %n0 = arith.add %r, 1
  %next = arith.rem %n0, %w
  %p0 = arith.add %r, %w
  %p1 = arith.sub %p0, 1
  %prev = arith.rem %p1, %w
  %at = arith.mul %r, 33
  for %epoch = 0 to 3 step 1 {
    dist.put %win, %x, %next, 0, %at
    dist.get %g, %win, %prev, 3, 0
    dist.fence
  }
}
)", "DT", name), "rma.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  // Per rank: x, the window, and g (every other column of a 2C-wide buffer).
  std::vector<std::vector<Buf>> bufs(w);
  for (int r = 0; r < w; ++r) {
    bufs[r].emplace_back(dt, 3 * 33), bufs[r].emplace_back(dt, 6 * cols);
    bufs[r].emplace_back(dt, 3 * 2 * cols);
    Fill(bufs[r][0], r, Input(r, 3 * 33));
    Fill(bufs[r][1], r, Input(r + 5, 6 * cols));
    Fill(bufs[r][2], r, Input(r + 9, 3 * 2 * cols));
  }
  auto args = [&](std::vector<Buf>& b) {
    Tensor g = Tensor::Contiguous(b[2].data(), dt, {3, cols});
    g.strides = {2 * cols, 2};
    return std::vector<Arg>{Tensor::Contiguous(b[0].data(), dt, {3, 33}),
                            Tensor::Contiguous(b[1].data(), dt, {6, cols}), g};
  };
  std::vector<Buf> mine = bufs[me.rank];
  // What the get must give, computed here: rows 3..5 of the previous rank's window (no put
  // reaches them) in the even columns of g's buffer, the odd ones untouched.
  const int prev = static_cast<int>((me.rank + w - 1) % w);
  Buf want = bufs[me.rank][2];
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t to = i * 2 * cols + 2 * j, from = (3 + i) * cols + j;
      if (dt == DType::kF32) want.w[to] = bufs[prev][1].w[from];
      else want.h[to] = bufs[prev][1].h[from];
    }
  std::vector<std::vector<Arg>> all;
  for (int r = 0; r < w; ++r) all.push_back(args(bufs[r]));
  Status st = RunRanks(*prog, all);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(bufs[me.rank][2].w, want.w) << "the simulated ranks' get";
  EXPECT_EQ(bufs[me.rank][2].h, want.h) << "the simulated ranks' get";
  st = ptox::Run(*prog, args(mine), {.target = target});
  ASSERT_TRUE(st.ok()) << st.message();
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(mine[k].w, bufs[me.rank][k].w) << "tensor " << k;
    EXPECT_EQ(mine[k].h, bufs[me.rank][k].h) << "tensor " << k;
  }
}

// dist.allreduce in place on an inout parameter passed as a strided view (every other column of
// a wider buffer): the CPU target reduces through a contiguous copy and leaves the other columns
// alone; the interpreter reduces in place. Both give the simulated ranks' bits.
TEST(MpiRanksInPlace, StridedInoutParameter) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1);
  Result<Program> prog = Program::Parse(R"(
func @f(%y: inout tensor<5x7xf32>) {
  dist.allreduce %y {op = "sum"}
}
)", "strided.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  auto input = [](int r) {
    std::vector<float> b(5 * 14);
    for (size_t i = 0; i < b.size(); ++i) b[i] = (r % 2 ? 1.0f : 3e7f) * float(i % 13) + float(r);
    return b;
  };
  auto view = [](std::vector<float>& b) {
    Tensor t = Tensor::Contiguous(b.data(), DType::kF32, {5, 7});
    t.strides = {14, 2};
    return Arg(t);
  };
  std::vector<std::vector<float>> sim;
  std::vector<std::vector<Arg>> all;
  for (int r = 0; r < me.world_size; ++r) sim.push_back(input(r));
  for (int r = 0; r < me.world_size; ++r) all.push_back({view(sim[r])});
  Status st = RunRanks(*prog, all);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const char* target : {"interp", "cpu"}) {
    std::vector<float> mine = input(me.rank);
    st = ptox::Run(*prog, {view(mine)}, {.target = target});
    ASSERT_TRUE(st.ok()) << target << ": " << st.message();
    EXPECT_EQ(mine, sim[me.rank]) << target;
  }
  const std::vector<float> untouched = input(me.rank);
  EXPECT_EQ(sim[me.rank][1], untouched[1]);  // an odd column is not part of the view
}

// allgather into a strided view (every other column of a wider buffer) from a strided x, and
// reduce_scatter of a strided x: through contiguous copies on the CPU target, in place on the
// interpreter; both give the simulated ranks' bits and leave the other columns alone.
TEST(MpiRanksInPlace, StridedAllgatherAndReduceScatter) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1);
  const int64_t w = me.world_size;
  Result<Program> prog = Program::Parse(R"(
func @f(%x: in tensor<{N}x3xf32>, %g: out tensor<{G}x3xf32>, %h: out tensor<{H}x3xf32>) {
  dist.allgather %g, %x
  dist.reduce_scatter %h, %x {op = "sum"}
}
)", "strided.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  const int64_t n = 2 * w;  // x's rows: h gets 2 of them
  auto view = [](std::vector<float>& b, int64_t rows) {
    Tensor t = Tensor::Contiguous(b.data(), DType::kF32, {rows, 3});
    t.strides = {6, 2};
    return Arg(t);
  };
  auto inputs = [&](int r) {
    std::vector<std::vector<float>> v = {std::vector<float>(n * 6), std::vector<float>(w * n * 6),
                                         std::vector<float>(2 * 6)};
    for (auto& b : v)
      for (size_t i = 0; i < b.size(); ++i) b[i] = (r % 2 ? 1.0f : 3e7f) * float(i % 13) + r;
    return v;
  };
  std::vector<std::vector<std::vector<float>>> sim;
  std::vector<std::vector<Arg>> all;
  for (int r = 0; r < w; ++r) sim.push_back(inputs(r));
  for (int r = 0; r < w; ++r)
    all.push_back({view(sim[r][0], n), view(sim[r][1], w * n), view(sim[r][2], 2)});
  Status st = RunRanks(*prog, all);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const char* target : {"interp", "cpu"}) {
    std::vector<std::vector<float>> mine = inputs(me.rank);
    st = ptox::Run(*prog, {view(mine[0], n), view(mine[1], w * n), view(mine[2], 2)},
                   {.target = target});
    ASSERT_TRUE(st.ok()) << target << ": " << st.message();
    EXPECT_EQ(mine, sim[me.rank]) << target;
  }
  EXPECT_EQ(sim[me.rank][1][1], inputs(me.rank)[1][1]);  // an odd column is not in the view
}

// An allgather of megabytes a rank (dist::World::AllGather): on one machine through shared memory
// in pieces of 4 MiB (4 ranks: both sizes; 2 ranks: 16 MiB), otherwise (2 ranks: 8 MiB; and
// with PTOX_DIST_SHM=0) MPI's own non-blocking allgather after the descriptions. Every rank's
// values land in its block, on the interpreter and on the CPU target, the last piece a few
// elements.
class MpiAllgatherLarge : public ::testing::TestWithParam<int64_t> {};
INSTANTIATE_TEST_SUITE_P(MiB, MpiAllgatherLarge, ::testing::Values(8, 16));

TEST_P(MpiAllgatherLarge, ManyMegabytesARank) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1);
  const int64_t w = me.world_size, n = (GetParam() << 20) / 4 + 5;
  Result<Program> prog = Program::Parse(R"(
func @f(%x: in tensor<{N}xf32>, %g: out tensor<{G}xf32>) {
  dist.allgather %g, %x
}
)", "large.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  auto value = [](int64_t r, int64_t i) { return static_cast<float>(r * 1000003 + i % 65521); };
  std::vector<float> x(n), g(w * n);
  for (int64_t i = 0; i < n; ++i) x[i] = value(me.rank, i);
  for (const char* target : {"interp", "cpu"}) {
    std::fill(g.begin(), g.end(), -1.0f);
    Status st = ptox::Run(*prog,
                          {Tensor::Contiguous(x.data(), DType::kF32, {n}),
                           Tensor::Contiguous(g.data(), DType::kF32, {w * n})},
                          {.target = target});
    ASSERT_TRUE(st.ok()) << target << ": " << st.message();
    int64_t wrong = 0;
    for (int64_t r = 0; r < w; ++r)
      for (int64_t i = 0; i < n; ++i) wrong += g[r * n + i] != value(r, i);
    EXPECT_EQ(wrong, 0) << target;
  }
}

// An allreduce on one machine moves its values through shared memory in pieces of at most
// dist::NodeSegment::kSlotBytes (4 MiB; dist::World::AllReduce): f32 in three pieces and f16 in
// two, the last a few elements whose chunks differ in size (with PTOX_DIST_SHM=0 these sizes go
// by messages). The CPU target's result against the tree computed here (f16: every op rounded,
// so the order shows).
TEST(MpiRanksLarge, AllreduceInSeveralPiecesMatchesTheTree) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1);
  const int w = me.world_size;
  for (const DType dt : {DType::kF32, DType::kF16}) {
    const bool f32 = dt == DType::kF32;
    const int64_t n = (int64_t{2} << 20) + 4099;  // f32: 8 MiB and 16 KiB; f16: 4 MiB and 8 KiB
    SCOPED_TRACE(f32 ? "f32" : "f16");
    Result<Program> prog = Program::Parse(Replace(R"(
func @f(%y: inout tensor<{N}xDT>) {
  dist.allreduce %y {op = "sum"}
}
)",
                                                  "DT", f32 ? "f32" : "f16"),
                                          "pieces.pto");
    ASSERT_TRUE(prog.ok()) << prog.status().message();
    std::vector<std::vector<float>> in;
    std::vector<Buf> x;
    for (int r = 0; r < w; ++r) {
      in.push_back(Input(r, n));
      x.emplace_back(dt, n);
      Fill(x.back(), r, in.back());
    }
    Buf y = x[me.rank];
    Status st = ptox::Run(*prog, {Tensor::Contiguous(y.data(), dt, {n})}, {.target = "cpu"});
    ASSERT_TRUE(st.ok()) << st.message();
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      bool same;
      if (f32) {
        const float sum = test::TreeSum(0, w, [&](int r) { return in[r][i]; });
        uint32_t want;
        std::memcpy(&want, &sum, 4);
        same = y.w[i] == want;
      } else {
        const test::Half sum = test::TreeFold(
            0, w,
            [&](int r) {
              test::Half h;
              std::memcpy(&h, &x[r].h[i], 2);
              return h;
            },
            [](test::Half a, test::Half b) {
              return static_cast<test::Half>(static_cast<float>(a) + static_cast<float>(b));
            });
        uint16_t want;
        std::memcpy(&want, &sum, 2);
        same = y.h[i] == want;
      }
      if (!same && wrong++ == 0) first = i;
    }
    EXPECT_EQ(wrong, 0) << "first at element " << first << " of " << n;
  }
}

// A reduce_scatter on one machine goes through shared memory too, in pieces of every chunk that
// fit a slot (4 MiB: 2^19 f32 a chunk on 2 ranks, 2^18 on 4): 2^20 + 3 elements a chunk make 3 or
// 5 pieces, the last 3 elements. The CPU target's chunk against the tree computed here.
TEST(MpiRanksLarge, ReduceScatterInSeveralPiecesMatchesTheTree) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1);
  const int w = me.world_size;
  const int64_t n = (int64_t{1} << 20) + 3;
  Result<Program> prog = Program::Parse(R"(
func @f(%x: in tensor<{G}xf32>, %h: out tensor<{N}xf32>) {
  dist.reduce_scatter %h, %x {op = "sum"}
}
)",
                                        "pieces.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  std::vector<std::vector<float>> in;
  for (int r = 0; r < w; ++r) in.push_back(Input(r, w * n));
  std::vector<float> x = in[me.rank], h(n, -1.0f);
  Status st = ptox::Run(*prog,
                        {Tensor::Contiguous(x.data(), DType::kF32, {w * n}),
                         Tensor::Contiguous(h.data(), DType::kF32, {n})},
                        {.target = "cpu"});
  ASSERT_TRUE(st.ok()) << st.message();
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    const float sum = test::TreeSum(0, w, [&](int r) { return in[r][me.rank * n + i]; });
    if (std::memcmp(&sum, &h[i], 4) != 0 && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0) << "first at element " << first << " of " << n;
  EXPECT_EQ(std::memcmp(x.data(), in[me.rank].data(), x.size() * 4), 0);  // x is left alone
}

// The allreduce of x and the chain over y do not depend on each other: with 2 threads the
// collective task runs on one while the chain's tasks run on the other, and the trace shows
// them side by side. Scheduling on a shared VM is not ours to dictate (under load the worker may
// not get a core before a short chain ends), so the chain is long and 5 runs may try (every rank
// makes all 5: the ranks' collectives must pair up).
TEST(MpiOverlap, ACollectiveRunsBesideIndependentCompute) {
  const RankInfo me = ThisRank();
  ASSERT_GT(me.world_size, 1);
  Result<Program> prog = Program::Parse(R"(
func @overlap(%x: in tensor<512x1024xf32>, %y: in tensor<8192x1024xf32>,
              %s: out tensor<512x1024xf32>, %z: out tensor<8192x1024xf32>) {
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %s
  %e = tensor.exp %y
  %t = tensor.tanh %e
  tensor.store %t, %z
}
)", "overlap.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  std::vector<float> x(512 * 1024, 1.0f), y(8192 * 1024, 0.5f), s(x.size()), z(y.size());
  int overlapping = 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::vector<TaskTrace> trace;
    Status st = ptox::Run(*prog,
                          {Tensor::Contiguous(x.data(), DType::kF32, {512, 1024}),
                           Tensor::Contiguous(y.data(), DType::kF32, {8192, 1024}),
                           Tensor::Contiguous(s.data(), DType::kF32, {512, 1024}),
                           Tensor::Contiguous(z.data(), DType::kF32, {8192, 1024})},
                          {.target = "cpu", .num_threads = 2, .trace = &trace});
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(s[0], float(me.world_size));
    const auto c = std::find_if(trace.begin(), trace.end(), [](const TaskTrace& t) {
      return t.name.rfind("dist.allreduce", 0) == 0;
    });
    ASSERT_NE(c, trace.end());
    for (const TaskTrace& t : trace)
      overlapping += t.worker != c->worker && t.start_us < c->end_us && c->start_us < t.end_us;
  }
  EXPECT_GT(overlapping, 0) << "no task of the chain ran beside the collective in 5 runs";
}

INSTANTIATE_TEST_SUITE_P(
    DtypesAndTargets, MpiRanks,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                       ::testing::Values("interp", "cpu")),
    [](const ::testing::TestParamInfo<std::tuple<DType, std::string>>& p) {
      return std::string(DTypeName(std::get<0>(p.param))) + "_" + std::get<1>(p.param);
    });

}  // namespace
}  // namespace ptox::testing
