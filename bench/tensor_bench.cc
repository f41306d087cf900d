// Tensor-level programs (softmax, rmsnorm, layernorm, 8-op elementwise chains) compiled with and
// without fuse-elementwise, against the same-run triad and PyTorch CPU eager. See bench/README.md.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "ptox/ptox.h"

namespace {

namespace fs = std::filesystem;
using ptox::bench::Clock;
using ptox::bench::Seconds;
using ptox::bench::Stats;

using Json = nlohmann::json;

constexpr int64_t kMiB = 1 << 20;
// --malloc=heap: glibc serves every allocation from its heap and never returns it, so buffers
// allocated per run (torch outputs, unfused intermediates) are reused instead of being mmap'ed
// and page-faulted in again on every run (glibc mmaps any block over 32 MiB by default).
constexpr char kHeapTunables[] = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184";
constexpr int kCheckRows = 8;  // rows checked against the interpreter (it is slow at 4096 rows)

// --cold: bytes read before every timed run (ptox's and torch's alike), so each starts with
// caches that hold none of its tensors: twice the L3, at least 512 MiB. Read, not written: dirty
// lines would have to be written back during the timed run. 0: warm runs, each finding the caches
// as the same program's previous run left them.
int64_t g_evict_bytes = 0;

void EvictCaches() {
  if (g_evict_bytes == 0) return;
  static const std::vector<uint64_t> junk(g_evict_bytes / sizeof(uint64_t), 1);
  uint64_t sum = 0;
  for (uint64_t v : junk) sum += v;
  asm volatile("" : : "r"(sum));  // keep the loop
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// ---- Ceiling: STREAM triad a = b + s * c on n threads, arrays far larger than the L3 -----------

// Cloned for AVX-512 / AVX2 so the ceiling is not held back by the build's baseline ISA.
__attribute__((noinline, target_clones("avx512f", "avx2", "default"))) void Triad(
    float* __restrict a, const float* __restrict b, const float* __restrict c, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

// GB/s stats of the triad over 3 x 256 MiB (12 bytes per element, no write-allocate counted),
// split into `threads` contiguous chunks.
Stats MeasureTriad(int threads, int reps) {
  const int64_t n = 256 * kMiB / sizeof(float);
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  auto run = [&] {
    std::vector<std::thread> pool;
    const int64_t chunk = (n + threads - 1) / threads;
    for (int t = 1; t < threads; ++t) {
      const int64_t lo = t * chunk, len = std::min(n, lo + chunk) - lo;
      pool.emplace_back(
          [&, lo, len] { Triad(a.data() + lo, b.data() + lo, c.data() + lo, 3.0f, len); });
    }
    Triad(a.data(), b.data(), c.data(), 3.0f, std::min(n, chunk));
    for (std::thread& th : pool) th.join();
  };
  Stats s = ptox::bench::TimeIt(run, reps);
  const double bytes = 3.0 * n * sizeof(float);
  return {bytes / s.median / 1e9, bytes / s.max / 1e9, bytes / s.min / 1e9};
}

// ---- The programs -------------------------------------------------------------------------------

// {N} rows bound at run time, COLS (the reduced last dim) static so tiles can hold whole rows.
const char* kSoftmax = R"(
func @softmax(%x: in tensor<{N}xCOLSxDT>, %y: out tensor<{N}xCOLSxDT>) {
  %s = tensor.softmax %x {axis = -1}
  tensor.store %s, %y
}
)";

const char* kRmsnorm = R"(
func @rmsnorm(%x: in tensor<{N}xCOLSxDT>, %w: in tensor<COLSxDT>, %y: out tensor<{N}xCOLSxDT>) {
  %r = tensor.rmsnorm %x, %w {eps = 1e-6}
  tensor.store %r, %y
}
)";

const char* kLayernorm = R"(
func @layernorm(%x: in tensor<{N}xCOLSxDT>, %w: in tensor<COLSxDT>, %b: in tensor<COLSxDT>,
                %y: out tensor<{N}xCOLSxDT>) {
  %r = tensor.layernorm %x, %w, %b {eps = 1e-5}
  tensor.store %r, %y
}
)";

// 8 elementwise ops over 3 inputs; torch_baseline.py runs the same 8 ops. Unfused, every op is a
// kernel: 13 tensor reads + 8 writes against the minimum of 3 reads + 1 write. "chain" is linear
// (each op takes the previous result); "chain_dag" computes a * 0.5 on a side branch that meets the
// main chain at %t5, as an expression like relu(a * b + c) - a / 2 would.
const char* kChain = R"(
func @chain(%a: in tensor<{N}xCOLSxDT>, %b: in tensor<{N}xCOLSxDT>, %c: in tensor<{N}xCOLSxDT>,
            %y: out tensor<{N}xCOLSxDT>) {
  %t1 = tensor.mul %a, %b
  %t2 = tensor.add %t1, %c
  %t3 = tensor.max %t2, 0.0
  %t4 = tensor.mul %t3, 0.5
  %t5 = tensor.sub %t4, %a
  %t6 = tensor.mul %t5, %c
  %t7 = tensor.add %t6, %b
  %t8 = tensor.min %t7, 4.0
  tensor.store %t8, %y
}
)";

const char* kChainDag = R"(
func @chain_dag(%a: in tensor<{N}xCOLSxDT>, %b: in tensor<{N}xCOLSxDT>, %c: in tensor<{N}xCOLSxDT>,
                %y: out tensor<{N}xCOLSxDT>) {
  %t1 = tensor.mul %a, %b
  %t2 = tensor.add %t1, %c
  %t3 = tensor.max %t2, 0.0
  %t4 = tensor.mul %a, 0.5
  %t5 = tensor.sub %t3, %t4
  %t6 = tensor.mul %t5, %c
  %t7 = tensor.add %t6, %b
  %t8 = tensor.min %t7, 4.0
  tensor.store %t8, %y
}
)";

struct Case {
  std::string op;  // softmax | rmsnorm | layernorm | chain | chain_dag
  ptox::DType dt;
  std::string dname;
};

std::string ProgramText(const Case& c, int64_t cols) {
  const char* t = c.op == "softmax"     ? kSoftmax
                  : c.op == "rmsnorm"   ? kRmsnorm
                  : c.op == "layernorm" ? kLayernorm
                  : c.op == "chain"     ? kChain
                                        : kChainDag;
  return Replace(Replace(t, "DT", c.dname), "COLS", std::to_string(cols));
}

// ---- Buffers ------------------------------------------------------------------------------------

// `elems` elements of dt, filled with values in [-2, 2) from `seed` (bf16: truncated f32 bits).
// 64-byte aligned, as torch's CPU allocator aligns its tensors, so both get rows of the same
// alignment (a std::vector's 16-byte aligned rows cost ptox's cold row kernels 2-8 % on a Xeon
// VM, a 64-byte load in two crossing a line; docs/passes/fuse-tiles.md measures streamed stores
// on such rows).
struct Buffer {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char[], Free> data;
  ptox::DType dt;
  Buffer(int64_t elems, ptox::DType dt, uint32_t seed) : dt(dt) {
    const bool half = dt == ptox::DType::kBF16;
    const int64_t bytes = elems * (half ? 2 : 4);
    data.reset(
        static_cast<char*>(std::aligned_alloc(64, std::max<int64_t>(64, (bytes + 63) / 64 * 64))));
    if (!data) throw std::bad_alloc();
    uint32_t x = seed;
    for (int64_t i = 0; i < elems; ++i) {
      x = x * 1664525u + 1013904223u;
      float f = static_cast<float>(x >> 8) * (4.0f / 16777216.0f) - 2.0f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      if (half)
        reinterpret_cast<uint16_t*>(data.get())[i] = static_cast<uint16_t>(u >> 16);
      else
        reinterpret_cast<float*>(data.get())[i] = f;
    }
  }
  double Get(int64_t i) const {
    if (dt != ptox::DType::kBF16) return reinterpret_cast<const float*>(data.get())[i];
    uint32_t u = static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(data.get())[i]) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  ptox::Tensor T(std::vector<int64_t> shape) {
    return ptox::Tensor::Contiguous(data.get(), dt, std::move(shape));
  }
};

// The arguments of a program's entry function: one buffer per parameter, outputs last (every
// program here has one output, its last parameter). `rows` binds the symbolic row dim.
struct Args {
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<bool> is_out;
  std::vector<ptox::Arg> Make(Buffer* out, int64_t rows_override = -1) {
    std::vector<ptox::Arg> a;
    for (size_t i = 0; i < bufs.size(); ++i) {
      std::vector<int64_t> shape = shapes[i];
      if (rows_override >= 0 && shape.size() == 2) shape[0] = rows_override;
      a.push_back(is_out[i] ? out->T(shape) : bufs[i]->T(shape));
    }
    return a;
  }
};

Args MakeArgs(const std::vector<ptox::ParamInfo>& params, int64_t rows, ptox::DType dt) {
  Args args;
  uint32_t seed = 12345;
  for (const ptox::ParamInfo& p : params) {
    std::vector<int64_t> shape;
    int64_t elems = 1;
    for (const ptox::ParamInfo::Dim& d : p.dims) {
      shape.push_back(d.sym.empty() ? d.size : rows);
      elems *= shape.back();
    }
    const bool out = p.dir != ptox::ParamDirection::kIn;
    args.bufs.push_back(out ? nullptr : std::make_unique<Buffer>(elems, dt, seed += 7919));
    args.shapes.push_back(shape);
    args.is_out.push_back(out);
  }
  return args;
}

int64_t OutputElems(const Args& a) {
  int64_t e = 1;
  for (int64_t d : a.shapes.back()) e *= d;
  return e;
}

// Max |got - want| and whether every element is within tol * (|want| + max |want|) (NaN: both).
struct Diff {
  double max_abs = 0;
  int64_t bad = 0, first_bad = -1;
};
Diff Compare(const Buffer& got, const Buffer& want, int64_t n, double tol) {
  double max_want = 0;
  for (int64_t i = 0; i < n; ++i) max_want = std::max(max_want, std::fabs(want.Get(i)));
  Diff d;
  for (int64_t i = 0; i < n; ++i) {
    const double g = got.Get(i), w = want.Get(i);
    const bool ok =
        std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= tol * (std::fabs(w) + max_want);
    if (!std::isnan(w)) d.max_abs = std::max(d.max_abs, std::fabs(g - w));
    if (!ok && d.bad++ == 0) d.first_bad = i;
  }
  return d;
}

// ---- Measuring one case -------------------------------------------------------------------------

struct Traffic {
  int64_t bytes = 0;
  int tasks = 0;
  std::set<std::string> kernels;  // task names without the source position
};

struct PerThreads {
  int threads = 0;
  Stats fused, unfused;  // seconds
  // Minor page faults per run (RUSAGE_SELF, all threads): the cost of buffers allocated per run.
  double fused_faults = 0, unfused_faults = 0, torch_faults = 0;
  double triad_gbs = 0;
  bool torch_ok = false;
  Stats torch;
  // fused vs torch, one ratio of medians per round (--rounds): the spread says how far one
  // round's ratio can be trusted on this machine.
  std::vector<double> round_ratios;
};

int64_t MinorFaults() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

struct Row {
  Case c{"", ptox::DType::kF32, ""};
  std::string error;  // non-empty: the row was aborted (correctness guard or a failed run)
  double min_bytes = 0;
  Traffic fused_traffic, unfused_traffic;
  double bound = 0, tol = 0, max_diff_unfused = 0, max_diff_interp = 0;
  std::vector<PerThreads> per;
};

bool RunOnce(const ptox::Program& prog, const std::vector<ptox::Arg>& args, int threads, bool fuse,
             std::vector<ptox::TaskTrace>* trace, std::string* error) {
  ptox::RunOptions o{.target = "cpu", .num_threads = threads, .trace = trace, .fuse = fuse};
  ptox::Status s = ptox::Run(prog, args, o);
  if (!s.ok()) *error = std::string(fuse ? "fused" : "unfused") + " run: " + s.message();
  return s.ok();
}

Traffic CountTraffic(const std::vector<ptox::TaskTrace>& trace) {
  Traffic t;
  for (const ptox::TaskTrace& task : trace) {
    t.bytes += task.bytes_read + task.bytes_written;
    t.kernels.insert(task.name.substr(0, task.name.find(' ')));
    ++t.tasks;
  }
  return t;
}

// ---- PyTorch baseline ---------------------------------------------------------------------------

// bench/torch_baseline.py --serve, started once: MeasureCase asks it for each case and thread
// count right after ptox's fused runs of the same, so that the two are measured seconds apart
// (this VM's memory bandwidth drifts over seconds to minutes; before, torch ran every case after
// ptox had run all of them, tens of seconds later).
class TorchServer {
 public:
  TorchServer(const std::string& python, const std::string& script, const std::string& tmp,
              int64_t rows, int64_t cols) {
    if (!fs::exists(script)) {
      note_ = "unavailable: " + script + " not found";
      return;
    }
    // A server that dies makes a write fail (Time then reports it), not end this process.
    std::signal(SIGPIPE, SIG_IGN);
    int in[2], out[2];
    if (pipe(in) != 0) {
      note_ = "unavailable: pipe failed";
      return;
    }
    if (pipe(out) != 0) {
      close(in[0]);
      close(in[1]);
      note_ = "unavailable: pipe failed";
      return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    const std::string log = tmp + "/torch.log";
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int fd : {in[0], in[1], out[0], out[1]}) posix_spawn_file_actions_addclose(&fa, fd);
    const std::string shape = "--shape=" + std::to_string(rows) + "x" + std::to_string(cols);
    const std::string evict = "--evict-bytes=" + std::to_string(g_evict_bytes);
    std::vector<std::string> argv_s = {python, script, "--serve", shape, evict};
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fprintf(stderr, "torch baseline: %s %s --serve %s %s (log %s)\n", python.c_str(),
                 script.c_str(), shape.c_str(), evict.c_str(), log.c_str());
    const int rc = posix_spawn(&pid_, python.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
    if (rc != 0) {
      pid_ = -1;
      note_ = "unavailable: cannot start " + python + ": " + std::strerror(rc);
      return;
    }
    std::optional<Json> hello = Read();
    if (!hello) {
      note_ = "unavailable: torch_baseline.py --serve failed (see " + log + ")";
    } else if (!hello->value("available", false)) {
      note_ = "unavailable: " + hello->value("reason", std::string("?"));
    } else {
      note_ = "torch " + hello->value("torch", std::string("?"));
      ok_ = true;
    }
  }
  ~TorchServer() {
    if (to_) std::fclose(to_);  // end of stdin: the server exits
    if (from_) std::fclose(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }

  const std::string& note() const { return note_; }

  // torch's times for case `c` on `p.threads` threads into p; a failure ends the baseline.
  void Time(const Case& c, int reps, PerThreads* p) {
    if (!ok_) return;
    std::fprintf(to_, "%s:%s %d %d\n", c.op.c_str(), c.dname.c_str(), p->threads, reps);
    std::fflush(to_);
    std::optional<Json> t = Read();
    if (!t || t->contains("error")) {
      ok_ = false;
      note_ = "unavailable: torch_baseline.py stopped: " +
              (t ? t->value("error", std::string()) : std::string("no answer"));
      std::fprintf(stderr, "%s\n", note_.c_str());
      return;
    }
    p->torch_ok = true;
    p->torch = {(*t)["median_s"].get<double>(), (*t)["min_s"].get<double>(),
                (*t)["max_s"].get<double>()};
    p->torch_faults = t->value("minflt_per_run", 0.0);
  }

 private:
  std::optional<Json> Read() {
    char* line = nullptr;
    size_t cap = 0;
    const ssize_t n = from_ ? getline(&line, &cap, from_) : -1;
    std::optional<Json> j;
    if (n > 0) {
      try {
        j = Json::parse(std::string(line, n));
      } catch (const std::exception&) {
      }
    }
    std::free(line);
    return j;
  }

  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  bool ok_ = false;
  std::string note_;
};

Row MeasureCase(const Case& c, int64_t rows, int64_t cols, const std::vector<int>& threads,
                const std::vector<double>& triad, int reps, TorchServer* torch) {
  Row r;
  r.c = c;
  auto prog = ptox::Program::Parse(ProgramText(c, cols), c.op + "_" + c.dname);
  if (!prog.ok()) return r.error = "parse: " + prog.status().message(), r;
  auto params = prog->Params();
  if (!params.ok()) return r.error = params.status().message(), r;
  Args args = MakeArgs(*params, rows, c.dt);
  for (size_t i = 0; i < args.bufs.size(); ++i) {
    int64_t e = 1;
    for (int64_t d : args.shapes[i]) e *= d;
    r.min_bytes += static_cast<double>(e) * ptox::DTypeBytes(c.dt);  // inputs once, output once
  }
  const int64_t out_elems = OutputElems(args);
  Buffer yf(out_elems, c.dt, 1), yu(out_elems, c.dt, 2);
  std::vector<ptox::Arg> fused_args = args.Make(&yf), unfused_args = args.Make(&yu);

  // Correctness guard (also compiles both variants and records their traffic): fused vs unfused
  // on the whole tensor, fused vs the interpreter on the first rows.
  auto bound = ptox::ReorderBound(*prog, {}, fused_args);
  if (!bound.ok()) return r.error = bound.status().message(), r;
  r.bound = *bound;  // includes a bf16 output's ulp: a reordered sum may round the other way
  r.tol = *bound;
  std::vector<ptox::TaskTrace> tf, tu;
  if (!RunOnce(*prog, fused_args, threads[0], true, &tf, &r.error)) return r;
  if (!RunOnce(*prog, unfused_args, threads[0], false, &tu, &r.error)) return r;
  r.fused_traffic = CountTraffic(tf);
  r.unfused_traffic = CountTraffic(tu);
  Diff d = Compare(yf, yu, out_elems, 2 * *bound);
  r.max_diff_unfused = d.max_abs;
  if (d.bad) {
    r.error = "fused and unfused outputs differ: " + std::to_string(d.bad) +
              " elements beyond tolerance, first at " + std::to_string(d.first_bad) + " (" +
              std::to_string(yf.Get(d.first_bad)) + " vs " + std::to_string(yu.Get(d.first_bad)) +
              ")";
    return r;
  }
  const int64_t check_rows = std::min<int64_t>(kCheckRows, rows);
  Buffer yi(check_rows * cols, c.dt, 3);
  ptox::Status s = ptox::Run(*prog, args.Make(&yi, check_rows), {.target = "interp"});
  if (!s.ok()) return r.error = "interp run: " + s.message(), r;
  d = Compare(yf, yi, check_rows * cols, r.tol);
  r.max_diff_interp = d.max_abs;
  if (d.bad) {
    r.error =
        "fused output differs from the interpreter in the first rows: " + std::to_string(d.bad) +
        " elements, first at " + std::to_string(d.first_bad);
    return r;
  }

  // Timing: as torch's (bench/torch_baseline.py), each variant's repetitions run back to back,
  // so each run finds the caches as the same program's previous run left them. (Alternating
  // fused and unfused runs let the unfused one's intermediates, four times the tensor, evict the
  // fused run's input from the L3 first: the fused timings then read 1.5x slower than warm ones
  // and than torch's, which were always warm.) Per thread count: fused, torch, unfused.
  for (size_t ti = 0; ti < threads.size(); ++ti) {
    PerThreads p;
    p.threads = threads[ti];
    p.triad_gbs = triad[ti];
    std::vector<double> f, u;
    int64_t ff = 0, uf = 0;
    for (bool fused : {true, false}) {
      const std::vector<ptox::Arg>& args = fused ? fused_args : unfused_args;
      if (!RunOnce(*prog, args, p.threads, fused, nullptr, &r.error)) return r;  // warm-up
      for (int i = 0; i < reps; ++i) {
        EvictCaches();
        const int64_t f0 = MinorFaults();
        auto a = Clock::now();
        if (!RunOnce(*prog, args, p.threads, fused, nullptr, &r.error)) return r;
        (fused ? f : u).push_back(Seconds(a, Clock::now()));
        (fused ? ff : uf) += MinorFaults() - f0;
      }
      if (fused && torch) torch->Time(c, reps, &p);
    }
    p.fused_faults = static_cast<double>(ff) / reps;
    p.unfused_faults = static_cast<double>(uf) / reps;
    p.fused = ptox::bench::Summarize(f);
    p.unfused = ptox::bench::Summarize(u);
    r.per.push_back(p);
  }
  return r;
}

// ---- Rounds -------------------------------------------------------------------------------------

double Median(const std::vector<double>& v) { return ptox::bench::Summarize(v).median; }

// One row per case from `rounds` independent measurements (each case's fused runs, torch's, then
// the unfused runs, per thread count): medians of the rounds' medians, the extremes of their
// extremes, and each round's fused / torch ratio. The first aborted round's error wins.
std::vector<Row> MergeRounds(const std::vector<std::vector<Row>>& rounds) {
  std::vector<Row> out = rounds.front();
  for (size_t c = 0; c < out.size(); ++c) {
    for (const std::vector<Row>& round : rounds)
      if (out[c].error.empty() && !round[c].error.empty()) out[c] = round[c];
    if (!out[c].error.empty()) continue;
    for (size_t t = 0; t < out[c].per.size(); ++t) {
      PerThreads& p = out[c].per[t];
      auto merge = [&](Stats PerThreads::*field) {
        std::vector<double> med;
        Stats s = p.*field;
        for (const std::vector<Row>& round : rounds) {
          const Stats& r = round[c].per[t].*field;
          med.push_back(r.median);
          s.min = std::min(s.min, r.min);
          s.max = std::max(s.max, r.max);
        }
        s.median = Median(med);
        p.*field = s;
      };
      merge(&PerThreads::fused);
      merge(&PerThreads::unfused);
      for (const std::vector<Row>& round : rounds) {
        const PerThreads& r = round[c].per[t];
        p.torch_ok = p.torch_ok && r.torch_ok;
        if (r.torch_ok) p.round_ratios.push_back(r.torch.median / r.fused.median);
      }
      if (p.torch_ok) merge(&PerThreads::torch);
    }
  }
  return out;
}

// ---- Report -------------------------------------------------------------------------------------

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void Report(const std::vector<Row>& rows, int64_t nrows, int64_t cols, int reps, int rounds,
            const std::vector<int>& threads, const std::vector<double>& triad,
            const std::vector<Stats>& triad_stats, const std::string& torch_note,
            const std::string& malloc_mode, const std::string& json_path, FILE* md) {
  const std::string caches = g_evict_bytes ? "cold (" + std::to_string(g_evict_bytes >> 20) +
                                                 " MiB read before each timed run)"
                                           : "warm (runs back to back)";
  std::fprintf(md,
               "Shape %lldx%lld, %d repetitions after one warm-up, %d round%s (per case and thread "
               "count: ptox fused, then torch, then ptox unfused; times are medians of the rounds' "
               "medians, \"fused vs torch\" the median of the rounds' ratios [their range]); %s; "
               "malloc: %s; caches: %s.\n\n",
               static_cast<long long>(nrows), static_cast<long long>(cols), reps, rounds,
               rounds == 1 ? "" : "s", torch_note.c_str(), malloc_mode.c_str(), caches.c_str());
  for (size_t i = 0; i < threads.size(); ++i)
    std::fprintf(md, "- triad ceiling, %d thread%s: %.2f GB/s (min %.2f, max %.2f)\n", threads[i],
                 threads[i] == 1 ? "" : "s", triad[i], triad_stats[i].min, triad_stats[i].max);
  std::fprintf(md,
               "\n| case | thr | fused ms [min, max] | GB/s | %% triad | unfused ms | fused vs "
               "unfused | torch ms | fused vs torch | bytes moved fused / unfused (x min) | "
               "kernels fused / unfused | page faults / run fused / unfused / torch |\n");
  std::fprintf(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  Json j = {{"shape", {nrows, cols}}, {"reps", reps},
            {"rounds", rounds},       {"torch", torch_note},
            {"malloc", malloc_mode},  {"triad", Json::array()},
            {"rows", Json::array()},  {"evict_bytes", g_evict_bytes}};
  j["manifest"] = Json::parse(ptox::GetBuildManifest().ToJson());  // the build measured
  for (size_t i = 0; i < threads.size(); ++i)
    j["triad"].push_back({{"threads", threads[i]},
                          {"gbs_median", triad[i]},
                          {"gbs_min", triad_stats[i].min},
                          {"gbs_max", triad_stats[i].max}});
  for (const Row& r : rows) {
    const std::string name = r.c.op + " " + r.c.dname;
    Json jr = {{"op", r.c.op},
               {"dtype", r.c.dname},
               {"min_bytes", r.min_bytes},
               {"error", r.error},
               {"fused_bytes", r.fused_traffic.bytes},
               {"unfused_bytes", r.unfused_traffic.bytes},
               {"fused_tasks", r.fused_traffic.tasks},
               {"unfused_tasks", r.unfused_traffic.tasks},
               {"fused_kernels", r.fused_traffic.kernels.size()},
               {"unfused_kernels", r.unfused_traffic.kernels.size()},
               {"reorder_bound", r.bound},
               {"max_abs_diff_fused_unfused", r.max_diff_unfused},
               {"max_abs_diff_fused_interp_first_rows", r.max_diff_interp},
               {"per_threads", Json::array()}};
    if (!r.error.empty()) {
      std::fprintf(md, "| %s | | ABORTED: %s | | | | | | | | | |\n", name.c_str(), r.error.c_str());
    }
    const std::string bytes_col = Fmt("%.2f", r.fused_traffic.bytes / r.min_bytes) + " / " +
                                  Fmt("%.2f", r.unfused_traffic.bytes / r.min_bytes);
    const std::string kern_col = std::to_string(r.fused_traffic.kernels.size()) + " / " +
                                 std::to_string(r.unfused_traffic.kernels.size());
    for (const PerThreads& p : r.per) {
      const double gbs = r.min_bytes / p.fused.median / 1e9;
      const double speedup = p.unfused.median / p.fused.median;
      const double vs_torch = p.torch_ok ? Median(p.round_ratios) : 0;
      const auto [lo, hi] = std::minmax_element(p.round_ratios.begin(), p.round_ratios.end());
      const std::string vs_torch_col =
          !p.torch_ok ? std::string("n/a")
          : p.round_ratios.size() == 1
              ? Fmt("%.2fx", vs_torch)
              : Fmt("%.2fx", vs_torch) + " [" + Fmt("%.2f", *lo) + ", " + Fmt("%.2f", *hi) + "]";
      const std::string faults = Fmt("%.0f", p.fused_faults) + " / " +
                                 Fmt("%.0f", p.unfused_faults) + " / " +
                                 (p.torch_ok ? Fmt("%.0f", p.torch_faults) : std::string("n/a"));
      std::fprintf(md,
                   "| %s | %d | %.2f [%.2f, %.2f] | %.2f | %.0f%% | %.2f | %.2fx | %s | %s | %s | "
                   "%s | %s |\n",
                   name.c_str(), p.threads, p.fused.median * 1e3, p.fused.min * 1e3,
                   p.fused.max * 1e3, gbs, 100 * gbs / p.triad_gbs, p.unfused.median * 1e3, speedup,
                   p.torch_ok ? Fmt("%.2f", p.torch.median * 1e3).c_str() : "n/a",
                   vs_torch_col.c_str(), bytes_col.c_str(), kern_col.c_str(), faults.c_str());
      auto stats = [](const Stats& s) {
        return Json{{"median_s", s.median}, {"min_s", s.min}, {"max_s", s.max}};
      };
      Json jp = {{"threads", p.threads},
                 {"triad_gbs", p.triad_gbs},
                 {"fused", stats(p.fused)},
                 {"unfused", stats(p.unfused)},
                 {"fused_gbs", gbs},
                 {"unfused_gbs", r.min_bytes / p.unfused.median / 1e9},
                 {"pct_of_triad", 100 * gbs / p.triad_gbs},
                 {"fused_vs_unfused", speedup},
                 {"fused_minor_faults_per_run", p.fused_faults},
                 {"unfused_minor_faults_per_run", p.unfused_faults}};
      if (p.torch_ok) {
        jp["torch"] = stats(p.torch);
        jp["torch_gbs"] = r.min_bytes / p.torch.median / 1e9;
        jp["fused_vs_torch"] = vs_torch;
        jp["fused_vs_torch_rounds"] = p.round_ratios;
        jp["torch_minor_faults_per_run"] = p.torch_faults;
      }
      jr["per_threads"].push_back(jp);
    }
    j["rows"].push_back(jr);
  }
  std::fprintf(
      md,
      "\nGB/s and %% triad count the minimum bytes (inputs read once, output written "
      "once); bytes moved are the sums of the trace's bytes_read + bytes_written; speedups "
      "are ratios of medians (> 1: fused is faster).\n\n");
  if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  // torch from the project's venv (scripts/setup.sh --bench installs PyPI's current one there).
  const fs::path root = fs::path(__FILE__).parent_path().parent_path();
  std::string json_path = "tensor_bench.json", md_path, only,
              python = fs::exists(root / ".venv/bin/python") ? (root / ".venv/bin/python").string()
                                                             : "/usr/bin/python3";
  std::string script = (root / "bench" / "torch_baseline.py").string();
  int64_t rows = 4096, cols = 4096;
  int reps = 15, rounds = 1;
  bool torch = true, heap = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--json=", 0) == 0)
      json_path = a.substr(7);
    else if (a == "--malloc=heap")
      heap = true;
    else if (a == "--malloc=default")
      heap = false;
    else if (a.rfind("--md=", 0) == 0)
      md_path = a.substr(5);
    else if (a.rfind("--only=", 0) == 0)
      only = a.substr(7);
    else if (a.rfind("--reps=", 0) == 0)
      reps = std::max(1, std::atoi(a.c_str() + 7));
    else if (a.rfind("--rounds=", 0) == 0)
      rounds = std::max(1, std::atoi(a.c_str() + 9));
    else if (a.rfind("--python=", 0) == 0)
      python = a.substr(9);
    else if (a.rfind("--torch-script=", 0) == 0)
      script = a.substr(15);
    else if (a == "--no-torch")
      torch = false;
    else if (a == "--cold")
      g_evict_bytes = std::max<int64_t>(int64_t{512} << 20, 2 * sysconf(_SC_LEVEL3_CACHE_SIZE));
    else if (a.rfind("--shape=", 0) == 0 && a.find('x') != std::string::npos) {
      rows = std::atoll(a.c_str() + 8);
      cols = std::atoll(a.c_str() + a.find('x') + 1);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--json=FILE] [--md=FILE] [--shape=RxC] [--reps=N] [--rounds=R] "
                   "[--only=softmax,rmsnorm,layernorm,chain,chain_dag] [--no-torch] [--python=BIN] "
                   "[--torch-script=PATH] [--malloc=default|heap] [--cold]\n",
                   argv[0]);
      return 2;
    }
  }
  if (rows <= 0 || cols <= 0) {
    std::fprintf(stderr, "--shape: both dims must be positive\n");
    return 2;
  }
  // glibc reads its tunables at startup: re-execute with them set (inherited by the torch child).
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (heap && (!tunables || std::string(tunables) != kHeapTunables)) {
    setenv("GLIBC_TUNABLES", kHeapTunables, 1);
    execv("/proc/self/exe", argv);
    std::perror("execv /proc/self/exe");
    return 1;
  }
  const std::string malloc_mode =
      heap ? std::string("heap (GLIBC_TUNABLES=") + kHeapTunables + ")" : "glibc default";
  char tmpl[] = "/tmp/ptox_tensor_bench_XXXXXX";
  const std::string tmp = mkdtemp(tmpl);
  setenv("PTOX_CACHE_DIR", (tmp + "/cache").c_str(), 1);  // private: cold compiles, no races

  std::vector<int> threads = {ptox::DefaultThreads()};  // what a run gets by default
  if (threads[0] != 1) threads.push_back(1);
  std::vector<Case> cases;
  for (const char* op : {"softmax", "rmsnorm", "layernorm"})
    for (auto [dt, dn] :
         {std::pair{ptox::DType::kF32, "f32"}, std::pair{ptox::DType::kBF16, "bf16"}})
      cases.push_back({op, dt, dn});
  cases.push_back({"chain", ptox::DType::kF32, "f32"});
  cases.push_back({"chain_dag", ptox::DType::kF32, "f32"});
  if (!only.empty())
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [&](const Case& c) {
                                 return ("," + only + ",").find("," + c.op + ",") ==
                                        std::string::npos;
                               }),
                cases.end());

  std::vector<double> triad;
  std::vector<Stats> triad_stats;
  for (int t : threads) {
    triad_stats.push_back(MeasureTriad(t, reps));
    triad.push_back(triad_stats.back().median);
    std::fprintf(stderr, "triad %d thread(s): %.2f GB/s\n", t, triad.back());
  }
  std::vector<std::vector<Row>> per_round;
  std::optional<TorchServer> server;
  if (torch) server.emplace(python, script, tmp, rows, cols);
  for (int round = 0; round < rounds; ++round) {
    std::vector<Row>& results = per_round.emplace_back();
    for (const Case& c : cases) {
      auto a = Clock::now();
      results.push_back(
          MeasureCase(c, rows, cols, threads, triad, reps, server ? &*server : nullptr));
      std::fprintf(stderr, "round %d, %s %s: %s (%.1f s)\n", round + 1, c.op.c_str(),
                   c.dname.c_str(),
                   results.back().error.empty() ? "ok" : results.back().error.c_str(),
                   Seconds(a, Clock::now()));
    }
  }
  std::string torch_note = server ? server->note() : "torch: not run (--no-torch)";
  server.reset();
  const std::vector<Row> results = MergeRounds(per_round);
  if (torch_note.rfind("unavailable", 0) == 0) torch_note = "torch " + torch_note;
  FILE* md = md_path.empty() ? stdout : std::fopen(md_path.c_str(), "w");
  Report(results, rows, cols, reps, rounds, threads, triad, triad_stats, torch_note, malloc_mode,
         json_path, md);
  if (md != stdout) std::fclose(md);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  bool failed = false;
  for (const Row& r : results) failed |= !r.error.empty();
  return failed ? 1 : 0;
}
