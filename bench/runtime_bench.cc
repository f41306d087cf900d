// Task runtime benchmark: FMA peak (the ceiling, same run), a compute-bound tiled matmul through
// ptox::Run on 1 and 2 worker threads (GFLOP/s, % of peak, scaling), per-task overhead.
#include "bench/bench_util.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ptox/ptox.h"
#include "runtime/task_graph.h"
#include "ptox/fma_peak.h"

namespace {

using ptox::bench::Clock;
using ptox::bench::Seconds;
using ptox::bench::Stats;
using ptox::bench::Summarize;

constexpr int kReps = 15;  // measured repetitions after one warm-up (DESIGN.md: >= 10)

Stats TimeIt(const std::function<void()>& fn, int reps = kReps) {
  return ptox::bench::TimeIt(fn, reps);
}

// One result row; `value` is in `unit`, larger-is-better for rates, smaller for times.
struct Row {
  std::string name, unit;
  Stats s;
  std::string note;  // e.g. "% of peak", ratios
};

// ---- Ceiling: register-blocked FMA loops (include/ptox/fma_peak.h) -----------------------------

// GFLOP/s of `threads` threads each running the FMA loop at once.
Row MeasureFma(const ptox::FmaKernel& k, int threads) {
  const int64_t iters = ptox::FmaIterations(k);
  double flops = 0;
  Stats s = TimeIt([&] { flops = ptox::RunFmaOnThreads(k, threads, iters); });
  return {"FMA peak f32 (" + std::string(k.isa) + "), " + std::to_string(threads) + " thread" +
              (threads > 1 ? "s" : ""),
          "GFLOP/s",
          {flops / s.median / 1e9, flops / s.max / 1e9, flops / s.min / 1e9},
          "100%"};
}

// ---- Compute-bound tiled matmul through ptox::Run ---------------------------------------------

// NxNxN f32 (N = 1024: 256 tasks), one task per 64x64 output tile, each with a K loop of 64-wide
// slices; "NN" is replaced by N.
const char* kMatmul = R"(
func @matmul(%a: in tensor<NNxNNxf32>, %b: in tensor<NNxNNxf32>, %c: out tensor<NNxNNxf32>) {
  for %i = 0 to NN step 64 parallel {
    for %j = 0 to NN step 64 parallel {
      incore {
        %zero = tile.full 0.0 : tile<64x64xf32>
        %acc = for %k = 0 to NN step 64 iter(%p = %zero) {
          %ta = tile.load %a[%i, %k] : tile<64x64xf32>
          %tb = tile.load %b[%k, %j] : tile<64x64xf32>
          %next = tile.matmul_acc %p, %ta, %tb
          yield %next
        }
        tile.store %acc, %c[%i, %j]
      }
    }
  }
}
)";

ptox::Program MustParse(const char* text, const char* name) {
  auto p = ptox::Program::Parse(text, name);
  if (!p.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, p.status().message().c_str());
    std::exit(1);
  }
  return *p;
}

void MustRun(const ptox::Program& prog, const std::vector<ptox::Arg>& args,
             const ptox::RunOptions& options) {
  ptox::Status s = ptox::Run(prog, args, options);
  if (!s.ok()) {
    std::fprintf(stderr, "run failed: %s\n", s.message().c_str());
    std::exit(1);
  }
}

// One traced matmul run: wall time, the graph's span (graph start to the last task's end: the
// runtime's share of the wall; the rest is the per-Run lowering for the cache key, argument
// checks and launch), task times and the sum of task times.
struct MatmulRun {
  double wall_us = 0, span_us = 0, busy_us = 0;
  std::vector<double> task_us;
};
MatmulRun RunMatmulOnce(const ptox::Program& prog, const std::vector<ptox::Arg>& args,
                        int threads) {
  std::vector<ptox::TaskTrace> trace;
  auto start = Clock::now();
  MustRun(prog, args, {.target = "cpu", .num_threads = threads, .trace = &trace});
  MatmulRun r;
  r.wall_us = Seconds(start, Clock::now()) * 1e6;
  for (const ptox::TaskTrace& t : trace) {
    r.task_us.push_back(t.end_us - t.start_us);
    r.busy_us += t.end_us - t.start_us;
    r.span_us = std::max(r.span_us, t.end_us);
  }
  return r;
}

std::string Threads(int n) { return std::to_string(n) + (n > 1 ? " threads" : " thread"); }

// Matmul GFLOP/s with 1 and 2 threads (the runs alternate so load changes hit both alike), the
// 2/1 scaling end to end and inside the graph, and where the time goes.
std::vector<Row> MeasureMatmul(const std::vector<Row>& peaks, int64_t n) {
  std::string text = kMatmul;
  for (size_t p = text.find("NN"); p != std::string::npos; p = text.find("NN", p))
    text.replace(p, 2, std::to_string(n));
  ptox::Program prog = MustParse(text.c_str(), "matmul");
  const std::string size = std::to_string(n) + "^3";
  std::vector<float> a(n * n), b(n * n), c(n * n);
  for (int64_t i = 0; i < n * n; ++i) a[i] = 0.001f * (i % 997), b[i] = 0.002f * (i % 991);
  std::vector<ptox::Arg> args = {ptox::Tensor::Contiguous(a.data(), ptox::DType::kF32, {n, n}),
                                 ptox::Tensor::Contiguous(b.data(), ptox::DType::kF32, {n, n}),
                                 ptox::Tensor::Contiguous(c.data(), ptox::DType::kF32, {n, n})};
  const double gflop = 2.0 * n * n * n / 1e9;
  std::vector<double> wall[2], span[2], task[2], busy[2];
  for (int rep = -1; rep < kReps; ++rep) {
    for (int k = 0; k < 2; ++k) {
      MatmulRun r = RunMatmulOnce(prog, args, k + 1);
      if (rep < 0) continue;  // warm-up
      wall[k].push_back(r.wall_us), span[k].push_back(r.span_us);
      busy[k].push_back(100 * r.busy_us / ((k + 1) * r.span_us));
      task[k].insert(task[k].end(), r.task_us.begin(), r.task_us.end());
    }
  }
  std::vector<Row> rows;
  Stats w[2] = {Summarize(wall[0]), Summarize(wall[1])};
  Stats sp[2] = {Summarize(span[0]), Summarize(span[1])};
  for (int k = 0; k < 2; ++k) {
    const double g = gflop / (w[k].median * 1e-6);
    char note[64];
    std::snprintf(note, sizeof note, "%.0f%% of %s peak", 100 * g / peaks[k].s.median,
                  Threads(k + 1).c_str());
    rows.push_back({"matmul " + size + " f32, 64x64 tiles, K step 64 (cpu), " + Threads(k + 1),
                    "GFLOP/s",
                    {g, gflop / (w[k].max * 1e-6), gflop / (w[k].min * 1e-6)},
                    note});
  }
  char note[96];
  std::snprintf(note, sizeof note, "target >= 1.80; FMA peak scales %.2fx",
                peaks[1].s.median / peaks[0].s.median);
  rows.push_back({"matmul " + size + " scaling 2 threads / 1 thread, end to end",
                  "x",
                  {w[0].median / w[1].median, w[0].min / w[1].max, w[0].max / w[1].min},
                  note});
  rows.push_back({"matmul " + size + " scaling 2 threads / 1 thread, inside the graph",
                  "x",
                  {sp[0].median / sp[1].median, sp[0].min / sp[1].max, sp[0].max / sp[1].min},
                  "graph start to last task end"});
  for (int k = 0; k < 2; ++k) {
    char busy_note[96];
    std::snprintf(busy_note, sizeof busy_note,
                  "workers busy %.0f%% of the graph span; wall - span = %.0f us",
                  Summarize(busy[k]).median, w[k].median - sp[k].median);
    rows.push_back(
        {"matmul " + size + " task time, " + Threads(k + 1), "us", Summarize(task[k]), busy_note});
  }
  return rows;
}

// ---- Per-task overhead -------------------------------------------------------------------------

constexpr int64_t kTinyTasks = 100'000;

// One 1x1 store per task into distinct elements: the cost is submission, dependency inference,
// scheduling and the kernel call.
const char* kTiny = R"(
func @tiny(%y: out tensor<{N}xf32>) {
  %n = tensor.dim %y, 0
  for %i = 0 to %n step 1 parallel {
    incore {
      %t = tile.full 1.0 : tile<1x1xf32>
      tile.store %t, %y[%i]
    }
  }
}
)";

Row MeasureTinyRun(int threads) {
  ptox::Program prog = MustParse(kTiny, "tiny");
  std::vector<float> y(kTinyTasks);
  std::vector<ptox::Arg> args = {
      ptox::Tensor::Contiguous(y.data(), ptox::DType::kF32, {kTinyTasks})};
  Stats s = TimeIt([&] { MustRun(prog, args, {.target = "cpu", .num_threads = threads}); });
  const double us = 1e6 / kTinyTasks;
  return {"per task, ptox::Run: 100k 1x1 stores, " + std::to_string(threads) + " thread" +
              (threads > 1 ? "s" : ""),
          "us/task",
          {s.median * us, s.min * us, s.max * us},
          "target <= 2"};
}

// The fixed cost of one ptox::Run (compile-cache lookup, argument checks, launch, one 1x1 task).
Row MeasureRunFixedCost() {
  ptox::Program prog = MustParse(kTiny, "tiny");
  float y = 0;
  std::vector<ptox::Arg> args = {ptox::Tensor::Contiguous(&y, ptox::DType::kF32, {1})};
  Stats s = TimeIt([&] { MustRun(prog, args, {.target = "cpu", .num_threads = 1}); });
  return {
      "fixed cost of one ptox::Run (1 task)", "us", {s.median * 1e6, s.min * 1e6, s.max * 1e6}, ""};
}

// The raw runtime: Submit of an empty std::function task (no accesses, or one distinct 1-element
// write each) + scheduling + running it, through Graph::Wait.
Row MeasureRawGraph(int threads, bool with_access) {
  ptox::runtime::Executor executor(threads);
  Stats s = TimeIt([&] {
    ptox::runtime::Graph graph(executor);
    for (int64_t i = 0; i < kTinyTasks; ++i) {
      ptox::runtime::Task task;
      task.run = [] { return std::string(); };
      task.name = "empty";
      if (with_access) {
        ptox::runtime::Access a;
        a.write = true;
        a.element_bytes = 4;
        a.box.rank = 1;
        a.box.lo[0] = i, a.box.hi[0] = i + 1;
        task.accesses.push_back(a);
      }
      graph.Submit(std::move(task));
    }
    if (!graph.Wait().ok()) std::exit(1);
  });
  const double us = 1e6 / kTinyTasks;
  return {std::string("per task, runtime::Graph: empty task") +
              (with_access ? " + 1 write region" : "") + ", " + std::to_string(threads) +
              " thread" + (threads > 1 ? "s" : ""),
          "us/task",
          {s.median * us, s.min * us, s.max * us},
          "target <= 2"};
}

// ---- Report ------------------------------------------------------------------------------------

void Report(const std::vector<Row>& rows, const std::string& json_path, FILE* md) {
  std::fprintf(md, "| benchmark | median | min | max | unit | note |\n");
  std::fprintf(md, "|---|---:|---:|---:|---|---|\n");
  std::string json = "{\n" + ptox::bench::ManifestMember() + "  \"reps\": " +
                     std::to_string(kReps) + ",\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(md, "| %s | %.3f | %.3f | %.3f | %s | %s |\n", r.name.c_str(), r.s.median, r.s.min,
                 r.s.max, r.unit.c_str(), r.note.c_str());
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "    {\"name\": \"%s\", \"unit\": \"%s\", \"median\": %.6g, \"min\": %.6g, "
                  "\"max\": %.6g, \"note\": \"%s\"}%s\n",
                  r.name.c_str(), r.unit.c_str(), r.s.median, r.s.min, r.s.max, r.note.c_str(),
                  i + 1 < rows.size() ? "," : "");
    json += buf;
  }
  json += "  ]\n}\n";
  if (!json_path.empty()) std::ofstream(json_path) << json;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "runtime_bench.json", md_path, only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--json=", 0) == 0)
      json_path = a.substr(7);
    else if (a.rfind("--md=", 0) == 0)
      md_path = a.substr(5);
    else if (a.rfind("--only=", 0) == 0)
      only = a.substr(7);
    else {
      std::fprintf(stderr, "usage: %s [--json=FILE] [--md=FILE] [--only=matmul|overhead]\n",
                   argv[0]);
      return 2;
    }
  }
  std::vector<Row> rows;
  if (only.empty() || only == "matmul") {
    ptox::FmaKernel k = ptox::BestFmaKernel();
    std::vector<Row> peaks = {MeasureFma(k, 1), MeasureFma(k, 2)};
    rows.insert(rows.end(), peaks.begin(), peaks.end());
    for (int64_t n : {1024, 2048}) {
      std::vector<Row> mm = MeasureMatmul(peaks, n);
      rows.insert(rows.end(), mm.begin(), mm.end());
    }
  }
  if (only.empty() || only == "overhead") {
    rows.push_back(MeasureRunFixedCost());
    for (int threads : {1, 2}) rows.push_back(MeasureTinyRun(threads));
    for (bool access : {false, true})
      for (int threads : {1, 2}) rows.push_back(MeasureRawGraph(threads, access));
  }
  FILE* md = md_path.empty() ? stdout : std::fopen(md_path.c_str(), "w");
  Report(rows, json_path, md);
  if (md != stdout) std::fclose(md);
  return 0;
}
