// `ptox bench [FILE] [--matmul MxKxN,...] [--dtype f32|bf16|f16] [--target T] [--threads 1,2]
// [--reps N] [--no-fuse] [--json PATH]` (+ --function / --seed / --inputs / --dims / --scalars /
// --const):
// times ptox::Run of a program, or of generated tensor-level matmuls, and prints per thread count
// the median / min / max wall time, GFLOP/s and GB/s from the task trace, and the share of the
// peak of the target's ISA on this host measured in the same invocation (the FMA loop; bf16
// matmuls on AVX512_BF16: the dot-product loop) (DESIGN.md, Benchmarks); then `OK`.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "ptox/ptox.h"
#include "ptox/fma_peak.h"
#include "tools/ptox/run_args.h"

namespace ptox::cli {
namespace {

struct BenchArgs {
  std::string file;
  std::vector<std::string> matmul;  // "MxKxN" items
  std::string dtype = "f32";
  std::string target = "cpu";
  std::vector<int> threads;  // empty: {0}, i.e. PTOX_NUM_THREADS or one per core
  int reps = 10;
  bool no_fuse = false;
  std::string json_path;
  InputOptions in;  // --function, --seed, --inputs, --dims, --scalars
};

// One program to time, with what the report says about it.
struct Case {
  Program prog;
  std::optional<double> flops;       // --matmul mode: 2 M N K (the trace counts padded tiles)
  std::string program;               // "@matmul"
  std::string label;                 // "@matmul 64x32x48 f32", "@matmul_dyn M=70,K=100,N=90"
  std::optional<std::string> file;   // FILE mode
  std::optional<std::string> shape;  // --matmul mode: "MxKxN"
  std::optional<std::string> dtype;  // --matmul mode
};

// One (program, thread count) measurement. Work figures come from the task trace: unknown
// (nullopt) on the interpreter, which records none.
struct Record {
  const Case* c;
  std::string target;
  int threads;
  int reps;
  double median_ms, min_ms, max_ms;
  // Flops per run: 2 M N K for --matmul; otherwise the tasks' own estimates, which count partial
  // tiles in full. Bytes: read + written by the tasks.
  std::optional<double> flops;
  std::optional<int64_t> bytes;
  // CPU targets only: the ceiling measured in the same invocation (CeilingFor).
  std::optional<double> fma_peak_gflops;
  std::string fma_isa;    // its loop: "avx512", "avx2", "scalar" or "avx512bf16" (bf16 dot)
  std::string peak_name;  // "f32 FMA" or "bf16 dot-product"

  std::optional<double> Gflops() const {
    if (!flops || *flops == 0) return std::nullopt;
    return *flops / median_ms / 1e6;
  }
  std::optional<double> GBps() const {
    if (!bytes || *bytes == 0) return std::nullopt;
    return static_cast<double>(*bytes) / median_ms / 1e6;
  }
  std::optional<double> PeakFraction() const {
    std::optional<double> g = Gflops();
    if (!g || !fma_peak_gflops || *fma_peak_gflops <= 0) return std::nullopt;
    return *g / *fma_peak_gflops;
  }
};

Status Invalid(const std::string& message) { return Status(StatusCode::kInvalid, message); }

bool IsCpuTarget(const std::string& target) {
  return target == "cpu" || target.rfind("cpu-", 0) == 0;
}

// What a record's rate is a share of: the FMA loop of the ISA the target compiles for (the best
// the host runs for "cpu"), except that bf16 matmuls on an AVX-512 target of a host with
// AVX512_BF16 run on dot products (kernels/cpu/matmul_bf16.h): their ceiling is that loop.
struct Ceiling {
  FmaKernel loop;    // isa == nullptr: the host cannot run the target's ISA
  const char* name;  // "f32 FMA" or "bf16 dot-product"
};
Ceiling CeilingFor(const std::string& target, const Case& c) {
  const FmaKernel k = target == "cpu-avx2"     ? FmaKernelFor("avx2")
                      : target == "cpu-scalar" ? FmaKernelFor("scalar")
                      : target == "cpu-avx512" ? FmaKernelFor("avx512")
                                               : BestFmaKernel();
  if (k.isa != nullptr && std::string_view(k.isa) == "avx512" && c.dtype == "bf16")
    if (const FmaKernel dot = Bf16DotKernel(); dot.isa != nullptr) return {dot, "bf16 dot-product"};
  return {k, "f32 FMA"};
}

// "MxKxN" -> {M, K, N}; every size a whole number >= 0.
Result<std::vector<int64_t>> ParseMatmulShape(const std::string& item) {
  std::vector<int64_t> dims;
  for (size_t start = 0; start <= item.size();) {
    size_t x = std::min(item.find('x', start), item.size());
    std::optional<int64_t> n = ParseInt(item.substr(start, x - start));
    dims.push_back(n && *n >= 0 ? *n : -1);
    start = x + 1;
  }
  if (dims.size() != 3 || std::count(dims.begin(), dims.end(), -1) > 0)
    return Invalid(fmt::format(
        "error: --matmul: expected MxKxN with whole sizes >= 0 (e.g. 1024x1024x1024), got '{}'",
        item));
  return dims;
}

// C = A B at tensor level: ptox's passes pick the tiles.
std::string MatmulSource(const std::vector<int64_t>& mkn, const std::string& dtype) {
  return fmt::format(
      "func @matmul(%a: in tensor<{0}x{1}x{3}>, %b: in tensor<{1}x{2}x{3}>, "
      "%c: out tensor<{0}x{2}xf32>) {{\n"
      "  %p = tensor.matmul %a, %b\n"
      "  tensor.store %p, %c\n"
      "}}\n",
      mkn[0], mkn[1], mkn[2], dtype);
}

// Checks the flags and builds the programs to time.
Result<std::vector<Case>> MakeCases(BenchArgs& args) {
  if (args.file.empty() && args.matmul.empty())
    return Invalid(
        "error: nothing to benchmark: give a .pto FILE or --matmul MxKxN[,MxKxN...] (see ptox "
        "bench --help)");
  if (!args.file.empty() && !args.matmul.empty())
    return Invalid("error: give a .pto FILE or --matmul, not both");
  if (args.reps < 1)
    return Invalid(fmt::format("error: --reps must be at least 1, got {}", args.reps));
  for (int t : args.threads)
    if (t < 0 || t > kMaxThreads)
      return Invalid(fmt::format(
          "error: --threads: a thread count must be >= 0 and at most {} (0: PTOX_NUM_THREADS or "
          "one per core), got {}",
          kMaxThreads, t));
  if (args.dtype != "f32" && args.dtype != "bf16" && args.dtype != "f16")
    return Invalid(fmt::format("error: --dtype: expected f32, bf16 or f16, got '{}'", args.dtype));
  if (!args.in.function.empty() && args.in.function[0] == '@') args.in.function.erase(0, 1);
  std::vector<Case> cases;
  if (!args.file.empty()) {
    Result<Program> prog = Program::FromFile(args.file);
    if (!prog.ok()) return prog.status();
    Result<std::vector<ParamInfo>> params = prog->Params(args.in.function);  // it exists
    if (!params.ok()) return params.status();
    std::string name =
        "@" + (args.in.function.empty() ? prog->FunctionNames().back() : args.in.function);
    std::string label = name;
    for (size_t i = 0; i < args.in.dims.size(); ++i)
      label += (i == 0 ? " " : ",") + args.in.dims[i];
    cases.push_back({std::move(prog).value(), std::nullopt, name, label, args.file, {}, {}});
    return cases;
  }
  for (const std::string& item : args.matmul) {
    Result<std::vector<int64_t>> mkn = ParseMatmulShape(item);
    if (!mkn.ok()) return mkn.status();
    std::string shape = fmt::format("{}x{}x{}", (*mkn)[0], (*mkn)[1], (*mkn)[2]);
    Result<Program> prog =
        Program::Parse(MatmulSource(*mkn, args.dtype), "<--matmul " + item + ">");
    if (!prog.ok()) return prog.status();
    double flops = 2.0 * static_cast<double>((*mkn)[0]) * static_cast<double>((*mkn)[1]) *
                   static_cast<double>((*mkn)[2]);
    cases.push_back({std::move(prog).value(), flops, "@matmul",
                     fmt::format("@matmul {} {}", shape, args.dtype), std::nullopt, shape,
                     args.dtype});
  }
  return cases;
}

// Times `reps` runs after one warm-up (which also compiles), then one traced run for the work.
Result<Record> Measure(const Case& c, const BenchArgs& args, PreparedRun& run, int threads) {
  RunOptions options{.target = args.target,
                     .function = args.in.function,
                     .num_threads = threads,
                     .fuse = !args.no_fuse,
                     .constants = args.in.constants};
  Status s = Run(c.prog, run.args, options);
  if (!s.ok()) return s;
  std::vector<double> ms;
  for (int i = 0; i < args.reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    s = Run(c.prog, run.args, options);
    auto end = std::chrono::steady_clock::now();
    if (!s.ok()) return s;
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  Record r{&c, args.target, threads, args.reps, median, ms.front(), ms.back(), {}, {}, {}, "", ""};
  if (args.target != "interp") {
    std::vector<TaskTrace> trace;
    options.trace = &trace;
    s = Run(c.prog, run.args, options);
    if (!s.ok()) return s;
    int64_t flops = 0, bytes = 0;
    for (const TaskTrace& t : trace) {
      flops += t.flops;
      bytes += t.bytes_read + t.bytes_written;
    }
    r.flops = c.flops ? *c.flops : static_cast<double>(flops);
    r.bytes = bytes;
  }
  return r;
}

std::string Rate(double x) {
  return x >= 100 ? fmt::format("{:.1f}", x) : fmt::format("{:#.3g}", x);
}

std::string Ms(double ms) {
  return ms >= 1 ? fmt::format("{:.2f}", ms) : fmt::format("{:.4f}", ms);
}

// `@matmul 64x32x48 f32 on cpu, 2 threads: median 1.20 ms (min 1.10, max 1.30; 10 runs) ...`
std::string Line(const Record& r) {
  std::string line =
      fmt::format("{} on {}, {} thread{}: median {} ms (min {}, max {}; {} run{})", r.c->label,
                  r.target, r.threads, r.threads == 1 ? "" : "s", Ms(r.median_ms), Ms(r.min_ms),
                  Ms(r.max_ms), r.reps, r.reps == 1 ? "" : "s");
  if (!r.flops) return line + ", no GFLOP/s: the interpreter records no task trace";
  std::vector<std::string> rates;
  if (std::optional<double> g = r.Gflops()) {
    std::string rate = Rate(*g) + " GFLOP/s";
    if (std::optional<double> f = r.PeakFraction())
      rate += fmt::format(" = {:.0f}% of the {} peak ({} GFLOP/s, {})", 100 * *f,
                          r.peak_name,
                          Rate(*r.fma_peak_gflops), r.fma_isa);
    rates.push_back(rate);
  }
  if (std::optional<double> b = r.GBps()) rates.push_back(Rate(*b) + " GB/s moved by tasks");
  if (rates.empty()) return line + ", the tasks report no work";
  line += " ";
  for (size_t i = 0; i < rates.size(); ++i) line += (i ? ", " : "") + rates[i];
  return line;
}

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// {"manifest": the build measured (ptox/manifest.h), "records": one per program and thread count}.
nlohmann::json ToJson(const std::vector<Record>& records,
                      const std::vector<std::string>& constants) {
  nlohmann::json out = {{"manifest", nlohmann::json::parse(GetBuildManifest().ToJson())},
                        {"records", nlohmann::json::array()}};
  for (const Record& r : records) {
    nlohmann::json j = {
        {"program", r.c->program},
        {"shape", OrNull(r.c->shape)},
        {"dtype", OrNull(r.c->dtype)},
        {"target", r.target},
        {"threads", r.threads},
        {"reps", r.reps},
        {"median_ms", r.median_ms},
        {"min_ms", r.min_ms},
        {"max_ms", r.max_ms},
        {"flops", OrNull(r.flops)},
        {"gflops", OrNull(r.Gflops())},
        {"bytes", OrNull(r.bytes)},
        {"gb_per_s", OrNull(r.GBps())},
        {"fma_peak_gflops", OrNull(r.fma_peak_gflops)},
        {"fma_isa", r.fma_isa.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.fma_isa)},
        {"peak", r.peak_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.peak_name)},
        {"peak_fraction", OrNull(r.PeakFraction())},
        {"constants", constants}};
    if (r.c->file) j["file"] = *r.c->file;
    out["records"].push_back(std::move(j));
  }
  return out;
}

int BenchCommand(BenchArgs args) {
  Result<std::vector<Case>> cases = MakeCases(args);
  if (!cases.ok()) return Fail(cases.status());
  std::ofstream json;  // opened first: an unwritable path fails before minutes of benchmarking
  if (!args.json_path.empty()) {
    json.open(args.json_path);
    if (!json) return Fail(Invalid("error: --json: cannot write '" + args.json_path + "'"));
  }
  // 0 (the default) runs on the process-wide executor: report how many threads that is.
  std::vector<int> thread_counts = args.threads.empty() ? std::vector<int>{0} : args.threads;
  if (args.target == "interp") thread_counts = {1};  // the interpreter runs on the caller
  std::map<std::pair<std::string, int>, double> peaks;  // per loop and thread count, once
  std::vector<Record> records;
  for (const Case& c : *cases) {
    if (Status s = CheckTarget(c.prog, args.target); !s.ok()) return Fail(s);
    Result<PreparedRun> run = PrepareRun(c.prog, args.in);
    if (!run.ok()) return Fail(run.status());
    for (int requested : thread_counts) {
      const int threads = requested > 0 ? requested : DefaultThreads();
      Result<Record> r = Measure(c, args, *run, requested);
      if (!r.ok()) return Fail(r.status());
      r->threads = threads;
      if (IsCpuTarget(args.target)) {
        const Ceiling peak = CeilingFor(args.target, c);
        if (const FmaKernel& k = peak.loop; k.isa != nullptr) {
          auto it = peaks.find({k.isa, threads});
          if (it == peaks.end())
            it = peaks.emplace(std::pair{k.isa, threads}, MeasurePeakGflops(k, threads)).first;
          r->fma_peak_gflops = it->second;
          r->fma_isa = k.isa;
          r->peak_name = peak.name;
        }
      }
      std::printf("%s\n", Line(*r).c_str());
      std::fflush(stdout);
      records.push_back(std::move(r).value());
    }
  }
  if (json.is_open()) {
    json << ToJson(records, args.in.constants).dump(2) << "\n";
    json.close();
    if (!json) return Fail(Invalid("error: --json: cannot write '" + args.json_path + "'"));
  }
  std::printf("OK\n");
  return 0;
}

}  // namespace

Handler RegisterBench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time a program (or generated matmuls) with ptox::Run; print GFLOP/s, GB/s and the share "
      "of the FMA peak");
  sub->add_option("file", args->file, "a .pto file (or give --matmul)");
  sub->add_option("--matmul", args->matmul,
                  "time C = A B for each shape MxKxN instead of a FILE, e.g. 1024x1024x1024")
      ->delimiter(',');
  sub->add_option("--dtype", args->dtype, "--matmul input dtype: f32, bf16 or f16 (C is f32)")
      ->capture_default_str();
  sub->add_option("--target", args->target, "where to run (see `ptox doctor`)")
      ->capture_default_str();
  sub->add_option("--threads", args->threads,
                  "worker thread counts to time, e.g. 1,2 (default: PTOX_NUM_THREADS or one per "
                  "core)")
      ->delimiter(',');
  sub->add_option("--reps", args->reps, "timed runs per thread count, after one warm-up run")
      ->capture_default_str();
  sub->add_flag("--no-fuse", args->no_fuse,
                "compiled targets: one kernel per tensor op (skip fuse-elementwise)");
  sub->add_option("--json", args->json_path, "also write the build manifest and the results as JSON to PATH");
  AddInputOptions(*sub, args->in);
  return [args] { return BenchCommand(*args); };
}

}  // namespace ptox::cli
