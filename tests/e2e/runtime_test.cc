// The task runtime seen through ptox::Run on target "cpu": determinism across thread counts,
// dependencies through memory, failure and recovery, NaN checks, traces, profiles and the CLI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "host_tensor.h"
#include "ptox/ptox.h"
#include "ptox/subprocess.h"

namespace ptox::testing {
namespace {

namespace fs = std::filesystem;

// Every test in this binary compiles into a cache inside the build tree, not ~/.cache/ptox.
class CacheInBuildTree : public ::testing::Environment {
 public:
  void SetUp() override { setenv("PTOX_CACHE_DIR", PTOX_E2E_CACHE_DIR, /*overwrite=*/0); }
};
[[maybe_unused]] ::testing::Environment* const kCacheEnv =
    ::testing::AddGlobalTestEnvironment(new CacheInBuildTree);

constexpr int kThreadCounts[] = {1, 2, 4};

Program MustParse(const std::string& text) {
  Result<Program> p = Program::Parse(text, "<runtime_test>");
  EXPECT_TRUE(p.ok()) << p.status().message();
  if (!p.ok()) std::abort();
  return *p;
}

// The arguments of one run: a host tensor per parameter, inputs seeded, outputs zeroed.
struct Args {
  std::vector<std::unique_ptr<HostTensor>> tensors;
  std::map<std::string, HostTensor*> by_name;

  std::vector<Arg> Views() const {
    std::vector<Arg> v;
    for (const auto& t : tensors) v.push_back(t->view());
    return v;
  }
  Args Clone() const {
    Args c;
    for (const auto& t : tensors) c.tensors.push_back(std::make_unique<HostTensor>(*t));
    for (const auto& [name, p] : by_name)
      for (size_t i = 0; i < tensors.size(); ++i)
        if (tensors[i].get() == p) c.by_name[name] = c.tensors[i].get();
    return c;
  }
};

// Allocates every parameter with `dims` binding the symbolic sizes; `fill` sets in / inout
// tensors (out tensors start at zero).
Args MakeArgs(const Program& prog, const std::map<std::string, int64_t>& dims,
              const std::function<void(const std::string&, HostTensor&)>& fill) {
  Args a;
  auto params = prog.Params();
  EXPECT_TRUE(params.ok()) << params.status().message();
  for (const ParamInfo& p : *params) {
    std::vector<int64_t> shape;
    for (const auto& d : p.dims) shape.push_back(d.sym.empty() ? d.size : dims.at(d.sym));
    a.tensors.push_back(std::make_unique<HostTensor>(p.dtype, shape));
    HostTensor& t = *a.tensors.back();
    for (int64_t i = 0; i < t.numel(); ++i) t.Set(i, 0.0f);
    if (p.dir != ParamDirection::kOut) fill(p.name, t);
    a.by_name[p.name] = &t;
  }
  return a;
}

std::function<void(const std::string&, HostTensor&)> Uniform(uint32_t seed, float lo, float hi) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng, lo, hi](const std::string&, HostTensor& t) { t.FillUniform(*rng, lo, hi); };
}
// Small integers: sums and products stay exact in f32 in any order.
std::function<void(const std::string&, HostTensor&)> SmallInts(uint32_t seed) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng](const std::string&, HostTensor& t) {
    std::uniform_int_distribution<int> d(-4, 4);
    for (int64_t i = 0; i < t.numel(); ++i) t.Set(i, static_cast<float>(d(*rng)));
  };
}

// Index of the first element whose bits differ, or -1.
int64_t FirstBitDifference(const HostTensor& a, const HostTensor& b) {
  for (int64_t i = 0; i < a.numel(); ++i) {
    float x = a.Get(i), y = b.Get(i);
    if (std::memcmp(&x, &y, sizeof x) != 0) return i;
  }
  return -1;
}

// Runs `prog` on the interpreter and on cpu with 1, 2 and 4 threads from the same inputs; every
// tensor (inputs, inout and outputs) must match the interpreter bit for bit.
void ExpectCpuMatchesInterpBitwise(const Program& prog, const Args& inputs) {
  Args ref = inputs.Clone();
  Status s = ptox::Run(prog, ref.Views(), {.target = "interp"});
  ASSERT_TRUE(s.ok()) << s.message();
  for (int threads : kThreadCounts) {
    for (int rep = 0; rep < 3; ++rep) {
      Args got = inputs.Clone();
      s = ptox::Run(prog, got.Views(), {.target = "cpu", .num_threads = threads});
      ASSERT_TRUE(s.ok()) << s.message();
      for (const auto& [name, t] : ref.by_name) {
        int64_t bad = FirstBitDifference(*got.by_name.at(name), *t);
        EXPECT_EQ(bad, -1) << "%" << name << "[" << bad << "] with " << threads
                           << " threads: " << (bad >= 0 ? got.by_name.at(name)->Get(bad) : 0)
                           << " vs interp " << (bad >= 0 ? t->Get(bad) : 0);
      }
    }
  }
}

// ---- Determinism: every example, bit-identical for any thread count --------------------------

// The sizes from an example's `// ptox-run: --dims N=100,M=7` line (empty when it has none).
std::map<std::string, int64_t> DimsOf(const fs::path& file) {
  std::ifstream in(file);
  std::map<std::string, int64_t> dims;
  std::string line;
  const std::string tag = "// ptox-run:";
  while (std::getline(in, line)) {
    if (line.rfind(tag, 0) != 0) continue;
    std::istringstream words(line.substr(tag.size()));
    std::string w;
    while (words >> w) {
      if (w.rfind("--dims", 0) != 0) continue;
      std::string list = w == "--dims" ? (words >> w, w) : w.substr(w.find('=') + 1);
      std::istringstream items(list);
      for (std::string item; std::getline(items, item, ',');) {
        size_t eq = item.find('=');
        EXPECT_NE(eq, std::string::npos) << file << ": bad --dims item " << item;
        dims[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
      }
    }
  }
  return dims;
}

TEST(RuntimeDeterminism, EveryExampleIsBitIdenticalForOneTwoAndFourThreads) {
  int examples = 0;
  for (const auto& e : fs::directory_iterator(PTOX_EXAMPLES_DIR)) {
    if (e.path().extension() != ".pto") continue;
    SCOPED_TRACE(e.path().filename().string());
    ++examples;
    Result<Program> prog = Program::FromFile(e.path().string());
    ASSERT_TRUE(prog.ok()) << prog.status().message();
    const Args inputs = MakeArgs(*prog, DimsOf(e.path()), Uniform(7, -3.0f, 3.0f));
    std::map<std::string, uint64_t> first;  // output hashes of the 1-thread run
    for (int threads : kThreadCounts) {
      Args got = inputs.Clone();
      Status s = ptox::Run(*prog, got.Views(), {.target = "cpu", .num_threads = threads});
      ASSERT_TRUE(s.ok()) << s.message();
      for (const auto& [name, t] : got.by_name) {
        auto [it, inserted] = first.emplace(name, t->Hash());
        if (!inserted) {
          EXPECT_EQ(t->Hash(), it->second) << "%" << name << ", " << threads << " threads";
        }
      }
    }
  }
  EXPECT_GE(examples, 12);
  EXPECT_EQ(DimsOf(fs::path(PTOX_EXAMPLES_DIR) / "matmul_dyn.pto"),
            (std::map<std::string, int64_t>{{"M", 70}, {"K", 100}, {"N", 90}}));
}

// ---- Dependencies through memory ---------------------------------------------------------------

// (a) x updated in place by two scopes per row tile (WAW / RAW), then neighbour rows read across
// tiles (RAW on two producers) into y, then a sequential in-place shift x[i] = x[i]/2 + x[i+1]
// whose tile i+8 must wait for tile i's read (WAR). Tiles of 8 x 1024: each iteration's work is
// above the size coarsen-tasks merges, so every tile is a task.
const char* kInPlace = R"(
func @inplace(%x: inout tensor<{N}x1024xf32>, %y: out tensor<{N}x1024xf32>) {
  %n = tensor.dim %x, 0
  for %i = 0 to %n step 8 parallel {
    incore {
      %t0 = tile.load %x[%i, 0] : tile<8x1024xf32>
      %u0 = tile.mul %t0, 2.0
      tile.store %u0, %x[%i, 0]
    }
    incore {
      %t1 = tile.load %x[%i, 0] : tile<8x1024xf32>
      %u1 = tile.add %t1, 1.0
      tile.store %u1, %x[%i, 0]
    }
  }
  for %i2 = 0 to %n step 8 parallel {
    %i2n = arith.add %i2, 1
    incore {
      %t2 = tile.load %x[%i2, 0] : tile<8x1024xf32>
      %u2 = tile.load %x[%i2n, 0] : tile<8x1024xf32>
      %s2 = tile.add %t2, %u2
      tile.store %s2, %y[%i2, 0]
    }
  }
  for %i3 = 0 to %n step 8 {
    %i3n = arith.add %i3, 1
    incore {
      %t3 = tile.load %x[%i3, 0] : tile<8x1024xf32>
      %u3 = tile.load %x[%i3n, 0] : tile<8x1024xf32>
      %h3 = tile.mul %t3, 0.5
      %s3 = tile.add %h3, %u3
      tile.store %s3, %x[%i3, 0]
    }
  }
}
)";

TEST(RuntimeDependencies, InPlaceUpdatesAndNeighbourRowsMatchTheInterpreter) {
  Program prog = MustParse(kInPlace);
  ExpectCpuMatchesInterpBitwise(prog, MakeArgs(prog, {{"N", 100}}, Uniform(11, -2.0f, 2.0f)));
}

// (b) Symbolic regions: a K loop inside the scope indexes a and b (its iv spans [0, K)), and
// %j = %i + 16 computed outside indexes c. Each iteration's second task writes the row tile the
// next iteration's first task reads (a chain through c).
const char* kSymbolic = R"(
func @symbolic(%a: in tensor<{M}x{K}xf32>, %b: in tensor<{K}x32xf32>, %c: inout tensor<{M}x32xf32>) {
  %m = tensor.dim %a, 0
  %kk = tensor.dim %a, 1
  %last = arith.sub %m, 16
  for %i = 0 to %last step 16 {
    incore {
      %c0 = tile.load %c[%i, 0] : tile<16x32xf32>
      %acc = for %k = 0 to %kk step 32 iter(%p = %c0) {
        %ta = tile.load %a[%i, %k] : tile<16x32xf32>
        %tb = tile.load %b[%k, 0] : tile<32x32xf32>
        %next = tile.matmul_acc %p, %ta, %tb
        yield %next
      }
      tile.store %acc, %c[%i, 0]
    }
    %j = arith.add %i, 16
    incore {
      %t = tile.load %c[%j, 0] : tile<16x32xf32>
      %u = tile.load %c[%i, 0] : tile<16x32xf32>
      %h = tile.mul %t, 0.5
      %s = tile.add %h, %u
      tile.store %s, %c[%j, 0]
    }
  }
}
)";

TEST(RuntimeDependencies, SymbolicRegionsFromInnerLoopsAndArithMatchTheInterpreter) {
  Program prog = MustParse(kSymbolic);
  // Small integers keep the matmul exact in any summation order, so bits must match.
  const Args inputs = MakeArgs(prog, {{"M", 128}, {"K", 80}}, SmallInts(3));
  ExpectCpuMatchesInterpBitwise(prog, inputs);

  // The regions are exact boxes, not whole tensors: the matmul task reads c's tile, a's 16 x K
  // rows and all of b; the second task reads two c tiles.
  std::vector<TaskTrace> trace;
  Args got = inputs.Clone();
  Status s = ptox::Run(prog, got.Views(), {.target = "cpu", .num_threads = 2, .trace = &trace});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(trace.size(), 14u);  // 7 iterations x 2 scopes
  for (const TaskTrace& t : trace) {
    bool matmul = t.id % 2 == 0;
    EXPECT_EQ(t.bytes_read, matmul ? (16 * 32 + 16 * 80 + 80 * 32) * 4 : 2 * 16 * 32 * 4) << t.id;
    EXPECT_EQ(t.bytes_written, 16 * 32 * 4) << t.id;
  }
}

// (c) A reduction across tasks through one inout accumulator tile: every task reads and writes
// acc (RAW + WAW chain), so the sums happen in program order for any thread count.
const char* kReduce = R"(
func @reduce(%x: in tensor<{N}x64xf32>, %acc: inout tensor<8x64xf32>) {
  %n = tensor.dim %x, 0
  for %i = 0 to %n step 8 {
    incore {
      %t = tile.load %x[%i, 0] : tile<8x64xf32>
      %a = tile.load %acc[0, 0] : tile<8x64xf32>
      %s = tile.add %a, %t
      tile.store %s, %acc[0, 0]
    }
  }
}
)";

TEST(RuntimeDependencies, ReductionThroughAnAccumulatorIsOrderedLikeTheInterpreter) {
  Program prog = MustParse(kReduce);
  const Args inputs = MakeArgs(prog, {{"N", 1000}}, Uniform(5, -1000.0f, 1000.0f));
  ExpectCpuMatchesInterpBitwise(prog, inputs);

  // Chained tasks never overlap in time, even with 4 workers.
  std::vector<TaskTrace> trace;
  Args got = inputs.Clone();
  ASSERT_TRUE(
      ptox::Run(prog, got.Views(), {.target = "cpu", .num_threads = 4, .trace = &trace}).ok());
  ASSERT_EQ(trace.size(), 125u);
  std::sort(trace.begin(), trace.end(), [](auto& a, auto& b) { return a.id < b.id; });
  for (size_t i = 1; i < trace.size(); ++i)
    EXPECT_GE(trace[i].start_us, trace[i - 1].end_us) << "task " << trace[i].id;
}

// (c) Carried tiles in their init's bytes (analysis/tile_plan): the inner loop's accumulator
// starts on the zero's bytes only when the zero is made in the same loop, so the second row of
// tiles starts from zero again; a zero also read after its loop keeps its value; an inner
// accumulator (in its own zero's bytes) yielded by an outer loop is copied into the outer one's.
const char* kCarried = R"(
func @carried(%x: in tensor<64x8xf32>, %y: out tensor<16x8xf32>, %z: out tensor<8x8xf32>,
              %w: out tensor<8x8xf32>) {
  incore {
    %outer = tile.full 0.0 : tile<8x8xf32>
    for %i = 0 to 16 step 8 {
      %acc = for %k = 0 to 64 step 8 iter(%p = %outer) {
        %t = tile.load %x[%k, 0] : tile<8x8xf32>
        %n = tile.add %p, %t
        yield %n
      }
      tile.store %acc, %y[%i, 0]
    }
    %zero = tile.full 0.0 : tile<8x8xf32>
    %sum = for %kk = 0 to 64 step 8 iter(%q = %zero) {
      %u = tile.load %x[%kk, 0] : tile<8x8xf32>
      %m = tile.add %q, %u
      yield %m
    }
    %back = tile.sub %sum, %zero
    tile.store %back, %z[0, 0]
    %start = tile.full 1.0 : tile<8x8xf32>
    %last = for %r = 0 to 3 step 1 iter(%o = %start) {
      %z2 = tile.full 0.0 : tile<8x8xf32>
      %a2 = for %k2 = 0 to 64 step 8 iter(%q2 = %z2) {
        %t2 = tile.load %x[%k2, 0] : tile<8x8xf32>
        %m2 = tile.add %q2, %t2
        yield %m2
      }
      yield %a2
    }
    tile.store %last, %w[0, 0]
  }
}
)";

TEST(RuntimeTiles, CarriedTilesStartFromTheirInitEveryTime) {
  Program prog = MustParse(kCarried);
  const Args inputs = MakeArgs(prog, {}, Uniform(13, -4.0f, 4.0f));
  ExpectCpuMatchesInterpBitwise(prog, inputs);
  Args got = inputs.Clone();
  ASSERT_TRUE(ptox::Run(prog, got.Views(), {.target = "cpu"}).ok());
  const HostTensor& y = *got.by_name["y"];
  for (int64_t j = 0; j < 64; ++j) EXPECT_EQ(y.Get(j), y.Get(64 + j)) << j;  // both rows of tiles
  for (int64_t j = 0; j < 64; ++j) EXPECT_EQ(got.by_name["z"]->Get(j), y.Get(j)) << j;
  for (int64_t j = 0; j < 64; ++j) EXPECT_EQ(got.by_name["w"]->Get(j), y.Get(j)) << j;
}

// ---- Failure ---------------------------------------------------------------------------------

// Task 2 loads at row 1000 of a 64-row tensor; every task chains through acc, so the 7 tasks
// after it are cancelled whatever the timing.
const char* kFailing = R"(
func @failing(%x: in tensor<64x16xf32>, %acc: inout tensor<16x16xf32>) {
  for %i = 0 to 10 step 1 {
    %is2 = arith.eq %i, 2
    %bad = arith.cast %is2 : index
    %big = arith.mul %bad, 1000
    %r = arith.rem %i, 4
    %r16 = arith.mul %r, 16
    %off = arith.add %r16, %big
    incore {
      %t = tile.load %x[%off, 0] : tile<16x16xf32>
      %a = tile.load %acc[0, 0] : tile<16x16xf32>
      %s = tile.add %a, %t
      tile.store %s, %acc[0, 0]
    }
  }
}
)";

TEST(RuntimeFailure, ThirdTaskFailsNamesItCancelsTheRestAndTheNextRunWorks) {
  Program failing = MustParse(kFailing);
  Program reduce = MustParse(kReduce);
  const Args fail_inputs = MakeArgs(failing, {}, Uniform(1, -1.0f, 1.0f));
  const Args ok_inputs = MakeArgs(reduce, {{"N", 200}}, Uniform(2, -1.0f, 1.0f));
  Args ref = ok_inputs.Clone();
  ASSERT_TRUE(ptox::Run(reduce, ref.Views(), {.target = "interp"}).ok());
  const std::regex expected(R"(task 2 \(failing\.incore0 \(<runtime_test>:10:5\)\) failed: )"
                            R"(.*tile\.load at <runtime_test>:11:7.*\(7 tasks cancelled\))");
  for (int iter = 0; iter < 200; ++iter) {
    const int threads = kThreadCounts[iter % 3];
    Args a = fail_inputs.Clone();
    Status s = ptox::Run(failing, a.Views(), {.target = "cpu", .num_threads = threads});
    ASSERT_EQ(s.code(), StatusCode::kRuntime) << s.message();
    ASSERT_TRUE(std::regex_search(s.message(), expected)) << s.message();
    Args b = ok_inputs.Clone();
    s = ptox::Run(reduce, b.Views(), {.target = "cpu", .num_threads = threads});
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(FirstBitDifference(*b.by_name["acc"], *ref.by_name["acc"]), -1)
        << "iteration " << iter;
  }
}

// ---- check_nan -------------------------------------------------------------------------------

const char* kLog = R"(
func @logs(%x: in tensor<16x16xf32>, %y: out tensor<16x16xf32>) {
  for %i = 0 to 16 step 4 parallel {
    incore {
      %t = tile.load %x[%i, 0] : tile<4x16xf32>
      %l = tile.log %t
      tile.store %l, %y[%i, 0]
    }
  }
}
)";

TEST(RuntimeCheckNan, ANaNOutputFailsNamingArgumentAndElementOnlyWhenAsked) {
  Program prog = MustParse(kLog);
  Args a = MakeArgs(prog, {}, Uniform(4, 0.5f, 4.0f));
  a.by_name["x"]->Set(9 * 16 + 5, -1.0f);  // log(-1) = NaN at y[9, 5]
  Status s = ptox::Run(prog, a.Views(), {.target = "cpu", .num_threads = 2, .check_nan = true});
  ASSERT_EQ(s.code(), StatusCode::kRuntime);
  EXPECT_NE(s.message().find("logs.incore0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("NaN written to %y (argument 1) at [9, 5]"), std::string::npos)
      << s.message();

  Args b = MakeArgs(prog, {}, Uniform(4, 0.5f, 4.0f));
  b.by_name["x"]->Set(9 * 16 + 5, -1.0f);
  s = ptox::Run(prog, b.Views(), {.target = "cpu", .num_threads = 2});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(std::isnan(b.by_name["y"]->Get(9 * 16 + 5)));
  EXPECT_FLOAT_EQ(b.by_name["y"]->Get(0), std::log(b.by_name["x"]->Get(0)));
}

// ---- Traces and profiles -------------------------------------------------------------------

// Two tasks over N = 100 rows: a full 64-row tile and a 36-row tail; w is a bf16 vector of
// H = 100 elements read as a 1x128 tile (clipped at the tensor's edge).
const char* kTraced = R"(
func @traced(%a: in tensor<{N}x128xf32>, %w: in tensor<{H}xbf16>, %c: out tensor<{N}x128xf32>) {
  %n = tensor.dim %a, 0
  for %i = 0 to %n step 64 parallel {
    incore {
      %ta = tile.load %a[%i, 0] : tile<64x128xf32>
      %tw = tile.load %w[0] : tile<1x128xbf16>
      %wf = tile.cast %tw : tile<1x128xf32>
      %tc = tile.col_expand_mul %ta, %wf
      tile.store %tc, %c[%i, 0]
    }
  }
}
)";

TEST(RuntimeTrace, RecordsHoldExactTrafficAndFormatAsChromeJsonAndProfile) {
  Program prog = MustParse(kTraced);
  for (int threads : kThreadCounts) {
    Args a = MakeArgs(prog, {{"N", 100}, {"H", 100}}, Uniform(9, -1.0f, 1.0f));
    std::vector<TaskTrace> trace;
    Status s =
        ptox::Run(prog, a.Views(), {.target = "cpu", .num_threads = threads, .trace = &trace});
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(trace.size(), 2u);
    std::sort(trace.begin(), trace.end(), [](auto& x, auto& y) { return x.id < y.id; });
    for (const TaskTrace& t : trace) {
      EXPECT_EQ(t.name, "traced.incore0 (<runtime_test>:5:5)");
      EXPECT_GE(t.worker, 0);
      EXPECT_LT(t.worker, threads);
      EXPECT_GE(t.start_us, 0);
      EXPECT_GE(t.end_us, t.start_us);
      EXPECT_EQ(t.flops, 64 * 128) << "col_expand_mul: one flop per tile element";
    }
    EXPECT_EQ(trace[0].bytes_read, 64 * 128 * 4 + 100 * 2);
    EXPECT_EQ(trace[0].bytes_written, 64 * 128 * 4);
    EXPECT_EQ(trace[1].bytes_read, 36 * 128 * 4 + 100 * 2);
    EXPECT_EQ(trace[1].bytes_written, 36 * 128 * 4);

    nlohmann::json j = nlohmann::json::parse(ChromeTraceJson(trace));
    int slices = 0;
    std::set<int> named;
    for (const auto& e : j.at("traceEvents")) {
      if (e.at("ph") == "X") {
        ++slices;
        EXPECT_EQ(e.at("name"), "traced.incore0 (<runtime_test>:5:5)");
        EXPECT_GE(e.at("dur").get<double>(), 0.0);
        int64_t id = e.at("args").at("task").get<int64_t>();
        EXPECT_EQ(e.at("args").at("bytes_written").get<int64_t>(), trace[id].bytes_written);
        EXPECT_EQ(e.at("args").at("bytes_read").get<int64_t>(), trace[id].bytes_read);
      } else if (e.at("ph") == "M" && e.at("name") == "thread_name") {
        named.insert(e.at("tid").get<int>());
      }
    }
    EXPECT_EQ(slices, 2);
    std::set<int> workers;
    for (const TaskTrace& t : trace) workers.insert(t.worker);
    EXPECT_EQ(named, workers) << "one named track per worker that ran a task";
  }
}

// The calls column of `kernel`'s row in a ProfileTable (-1 when there is no such row).
int64_t ProfileCalls(const std::string& table, const std::string& kernel) {
  std::istringstream lines(table);
  int64_t calls = -1;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kernel + " ", 0) != 0) continue;
    EXPECT_EQ(calls, -1) << "two rows for " << kernel;
    calls = std::stoll(line.substr(kernel.size()));
  }
  return calls;
}

TEST(RuntimeTrace, ProfileHasOneRowPerKernelWithItsCallCount) {
  Program prog = MustParse(kInPlace);
  Args a = MakeArgs(prog, {{"N", 100}}, Uniform(11, -2.0f, 2.0f));
  std::vector<TaskTrace> trace;
  ASSERT_TRUE(
      ptox::Run(prog, a.Views(), {.target = "cpu", .num_threads = 2, .trace = &trace}).ok());
  std::set<std::string> kernels;
  for (const TaskTrace& t : trace) kernels.insert(t.name);
  ASSERT_EQ(kernels.size(), 4u) << "four incore scopes";
  std::string table = ProfileTable(trace);
  for (const std::string& k : kernels) EXPECT_EQ(ProfileCalls(table, k), 13) << table;
  std::istringstream lines(table);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) rows += !line.empty();
  EXPECT_EQ(rows, 1 + 4) << table;  // a header and one row per kernel
}

// ---- The CLI -----------------------------------------------------------------------------------

TEST(RuntimeCli, RunWritesATraceAndPrintsTheProfile) {
  fs::path dir = fs::path(PTOX_E2E_CACHE_DIR).parent_path() / "runtime_cli_test";
  fs::create_directories(dir);
  fs::path trace = dir / "trace.json";
  fs::remove(trace);
  auto r = RunProcess(
      {PTOX_CLI, "run", std::string(PTOX_EXAMPLES_DIR) + "/hello_dyn.pto", "--target=cpu", "--dims",
       "N=300", "--trace=" + trace.string(), "--profile", "--threads=2"},
      120000);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->exit_code, 0) << r->err;
  EXPECT_NE(r->out.find("OK"), std::string::npos) << r->out;
  // hello_dyn: 300 rows in 64-row tiles = 5 tasks of one kernel.
  const std::string kernel =
      "tile_add_dyn.incore0 (" + std::string(PTOX_EXAMPLES_DIR) + "/hello_dyn.pto:7:5)";
  EXPECT_EQ(ProfileCalls(r->err, kernel), 5) << r->err;
  std::ifstream in(trace);
  ASSERT_TRUE(in.good());
  nlohmann::json j = nlohmann::json::parse(in);
  int slices = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++slices;
    EXPECT_LT(e.at("tid").get<int>(), 2);
  }
  EXPECT_EQ(slices, 5);
}

}  // namespace
}  // namespace ptox::testing
