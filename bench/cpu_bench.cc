// CPU backend benchmark: single-thread memory-bound kernels as a share of the same-run triad
// bandwidth, and compile latency (cold miss, cache hit from process start). See bench/README.md.
#include "bench/bench_util.h"
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ptox/bandwidth.h"
#include "ptox/ptox.h"

namespace {

namespace fs = std::filesystem;
using ptox::bench::Clock;
using ptox::bench::Seconds;
using ptox::bench::Stats;
using ptox::bench::Summarize;
extern "C" char** environ;

constexpr int kReps = 15;  // >= 10 measured repetitions after one warm-up, per DESIGN.md
constexpr int64_t kMiB = 1 << 20;

Stats TimeIt(const std::function<void()>& fn, int reps = kReps) {
  return ptox::bench::TimeIt(fn, reps);
}

struct Row {
  std::string name, target, unit;
  double bytes = 0;  // bytes moved per run (memory-bound rows)
  Stats s;           // seconds
};

// ---- Ceiling: STREAM triad a = b + s * c on one thread, arrays far larger than the L3 --------

Row MeasureTriad() {
  const double bytes = 3.0 * 256 * kMiB;
  const ptox::Bandwidth gbs = ptox::TriadGBs(1, 256 * kMiB, kReps);
  Row r{"triad a=b+s*c (3 x 256 MiB)", "host -O3", "GB/s", bytes, {}};
  r.s = {bytes / gbs.median / 1e9, bytes / gbs.max / 1e9, bytes / gbs.min / 1e9};
  return r;
}

// ---- ptox kernels -------------------------------------------------------------------------------

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// The elementwise chain of examples/elementwise_chain_dyn.pto with DT and the tile shape as
// parameters. 16x512 tiles keep the ~9 live tiles of one scope inside the 1 MiB L2.
const char* kChain = R"(
func @chain(%a: in tensor<{N}x{M}xDT>, %b: in tensor<{N}x{M}xDT>, %c: in tensor<{N}x{M}xDT>, %y: out tensor<{N}x{M}xDT>) {
  %n = tensor.dim %a, 0
  %m = tensor.dim %a, 1
  for %i = 0 to %n step TR parallel {
    for %j = 0 to %m step TC parallel {
      incore {
        %ta = tile.load %a[%i, %j] : tile<TRxTCxDT>
        %tb = tile.load %b[%i, %j] : tile<TRxTCxDT>
        %tc = tile.load %c[%i, %j] : tile<TRxTCxDT>
        %ab = tile.mul %ta, %tb
        %abc = tile.add %ab, %tc
        %r = tile.max %abc, 0.0
        %h = tile.mul %ta, 0.5
        %out = tile.sub %r, %h
        tile.store %out, %y[%i, %j]
      }
    }
  }
}
)";

// Row softmax (examples/softmax_dyn.pto) with whole rows of 4096 in TRx4096 tiles.
const char* kSoftmax = R"(
func @softmax(%x: in tensor<{N}x4096xDT>, %y: out tensor<{N}x4096xDT>) {
  %n = tensor.dim %x, 0
  for %i = 0 to %n step TR parallel {
    incore {
      %t = tile.load %x[%i, 0] {pad = -inf} : tile<TRx4096xDT>
      %m = tile.row_max %t
      %s = tile.row_expand_sub %t, %m
      %e = tile.exp %s
      %z = tile.row_sum %e
      %out = tile.row_expand_div %e, %z
      tile.store %out, %y[%i, 0]
    }
  }
}
)";

// RMSNorm (examples/rmsnorm_dyn.pto) over rows of 4096.
const char* kRmsnorm = R"(
func @rmsnorm(%x: in tensor<{N}x4096xDT>, %w: in tensor<4096xDT>, %y: out tensor<{N}x4096xDT>) {
  %n = tensor.dim %x, 0
  for %i = 0 to %n step TR parallel {
    incore {
      %t = tile.load %x[%i, 0] : tile<TRx4096xDT>
      %tw = tile.load %w[0] : tile<1x4096xDT>
      %sq = tile.mul %t, %t
      %ss = tile.row_sum %sq
      %ms = tile.mul %ss, 0.000244140625
      %me = tile.add %ms, 1e-06
      %r = tile.rsqrt %me
      %nrm = tile.row_expand_mul %t, %r
      %out = tile.col_expand_mul %nrm, %tw
      tile.store %out, %y[%i, 0]
    }
  }
}
)";

ptox::Program MustParse(const std::string& text, const std::string& name) {
  auto p = ptox::Program::Parse(text, name);
  if (!p.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), p.status().message().c_str());
    std::exit(1);
  }
  return *p;
}

// A buffer of `elems` elements of dtype dt, filled with values in [-2, 2) (bf16 bit patterns for
// bf16), so no kernel sees NaN or overflows.
struct Buffer {
  std::vector<char> bytes;
  Buffer(int64_t elems, ptox::DType dt) {
    const bool half = dt == ptox::DType::kBF16;
    bytes.resize(elems * (half ? 2 : 4));
    uint32_t x = 12345;
    for (int64_t i = 0; i < elems; ++i) {
      x = x * 1664525u + 1013904223u;
      float f = static_cast<float>(x >> 8) * (4.0f / 16777216.0f) - 2.0f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      if (half) reinterpret_cast<uint16_t*>(bytes.data())[i] = static_cast<uint16_t>(u >> 16);
      else reinterpret_cast<float*>(bytes.data())[i] = f;
    }
  }
  ptox::Tensor T(ptox::DType dt, std::vector<int64_t> shape) {
    return ptox::Tensor::Contiguous(bytes.data(), dt, std::move(shape));
  }
};

// Times ptox::Run of `prog` on `args` for `target` (compiled in the warm-up run).
Row MeasureKernel(const std::string& name, const ptox::Program& prog,
                  const std::vector<ptox::Arg>& args, const std::string& target, double bytes) {
  Row r{name, target, "GB/s", bytes, {}};
  r.s = TimeIt([&] {
    ptox::Status s = ptox::Run(prog, args, {.target = target, .num_threads = 1});
    if (!s.ok()) {
      std::fprintf(stderr, "%s on %s: %s\n", name.c_str(), target.c_str(), s.message().c_str());
      std::exit(1);
    }
  });
  return r;
}

void MeasureChain(ptox::DType dt, const char* dname, std::vector<Row>* rows) {
  const int64_t esize = dt == ptox::DType::kBF16 ? 2 : 4;
  const int64_t n = 4096, m = 128 * kMiB / esize / n;  // 4 x 128 MiB: past the 260 MB L3
  // Whole rows (contiguous streams the prefetcher follows), 32 of them per task so the task
  // runtime's per-task cost (~3 us with 4 regions) is amortized; the fused loop materializes
  // nothing, so the tile size costs no memory. PTOX_BENCH_CHAIN_TILE=RxC overrides.
  std::string tr = "32", tc = "8192";
  if (const char* env = std::getenv("PTOX_BENCH_CHAIN_TILE")) {
    std::string t = env;
    tr = t.substr(0, t.find('x')), tc = t.substr(t.find('x') + 1);
  }
  std::string text = Replace(Replace(Replace(kChain, "DT", dname), "TR", tr), "TC", tc);
  ptox::Program prog = MustParse(text, std::string("chain_") + dname);
  Buffer a(n * m, dt), b(n * m, dt), c(n * m, dt), y(n * m, dt);
  std::vector<ptox::Arg> args = {a.T(dt, {n, m}), b.T(dt, {n, m}), c.T(dt, {n, m}),
                                 y.T(dt, {n, m})};
  for (const char* target : {"cpu", "cpu-avx2", "cpu-scalar"}) {
    rows->push_back(MeasureKernel(std::string("chain ") + dname + " 4 x 128 MiB, " + tr + "x" + tc + " tiles",
                                  prog, args, target, 4.0 * n * m * esize));
  }
}

void MeasureRowKernels(ptox::DType dt, const char* dname, std::vector<Row>* rows) {
  const int64_t esize = dt == ptox::DType::kBF16 ? 2 : 4;
  const int64_t n = 256 * kMiB / esize / 4096;  // 2 x 256 MiB: past the 260 MB L3
  Buffer x(n * 4096, dt), w(4096, dt), y(n * 4096, dt);
  // 16 whole rows per task (see MeasureChain); the materialized tiles are 256 KiB.
  std::string tr = "16";
  if (const char* env = std::getenv("PTOX_BENCH_ROW_TILE_ROWS")) tr = env;
  ptox::Program sm = MustParse(Replace(Replace(kSoftmax, "DT", dname), "TR", tr), "softmax");
  const std::string shape = std::string(dname) + " 2 x 256 MiB, " + tr + "x4096 tiles";
  const double bytes = 2.0 * n * 4096 * esize;  // x read once, y written once
  rows->push_back(MeasureKernel("softmax " + shape, sm, {x.T(dt, {n, 4096}), y.T(dt, {n, 4096})},
                                "cpu", bytes));
  ptox::Program rn = MustParse(Replace(Replace(kRmsnorm, "DT", dname), "TR", tr), "rmsnorm");
  rows->push_back(MeasureKernel("rmsnorm " + shape, rn,
                                {x.T(dt, {n, 4096}), w.T(dt, {4096}), y.T(dt, {n, 4096})}, "cpu",
                                bytes));
}

// ---- Compile latency ----------------------------------------------------------------------------

const char* kHello = R"(// Hello world: c = a + b on one 128x128 f32 tile (examples/hello.pto).
func @tile_add(%a: in tensor<128x128xf32>, %b: in tensor<128x128xf32>, %c: out tensor<128x128xf32>) {
  incore {
    %ta = tile.load %a[0, 0] : tile<128x128xf32>
    %tb = tile.load %b[0, 0] : tile<128x128xf32>
    %tc = tile.add %ta, %tb
    tile.store %tc, %c[0, 0]
  }
}
)";

// Wall time of one child process `argv` with PTOX_CACHE_DIR=cache_dir; stdout / stderr dropped.
double SpawnSeconds(const std::vector<std::string>& argv, const std::string& cache_dir) {
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  setenv("PTOX_CACHE_DIR", cache_dir.c_str(), 1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  auto a = Clock::now();
  pid_t pid;
  int status = 0;
  if (posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ) != 0 ||
      waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "child %s failed\n", argv[0].c_str());
    std::exit(1);
  }
  double t = Seconds(a, Clock::now());
  posix_spawn_file_actions_destroy(&fa);
  return t;
}

void MeasureCompile(const std::string& ptox_bin, const std::string& self, const std::string& tmp,
                    std::vector<Row>* rows) {
  const std::string hello = tmp + "/hello.pto";
  std::ofstream(hello) << kHello;
  std::vector<double> cold, hit;
  const std::vector<std::string> run = {ptox_bin, "run", hello, "--target=cpu"};
  for (int i = 0; i < 11; ++i) {
    const std::string dir = tmp + "/cold" + std::to_string(i);  // a fresh, empty cache dir
    fs::create_directories(dir);
    cold.push_back(SpawnSeconds(run, dir));
  }
  const std::string warm = tmp + "/cold0";
  SpawnSeconds(run, warm);  // warm-up (page cache)
  for (int i = 0; i < kReps; ++i) hit.push_back(SpawnSeconds(run, warm));
  for (int i = 0; i < kReps; ++i)  // the in-process time, printed by a child to a file
    SpawnSeconds({self, "--hit-child=" + hello}, warm);
  std::vector<double> inside;
  for (int i = 0; i < kReps; ++i) {
    std::ifstream in(tmp + "/hit_child_" + std::to_string(i));
    double v = 0;
    in >> v;
    inside.push_back(v);
  }
  rows->push_back({"cold compile: ptox run hello.pto, empty cache", "cpu", "ms", 0,
                   Summarize(cold)});
  rows->push_back({"cache hit: ptox run hello.pto, process start to exit", "cpu", "ms", 0,
                   Summarize(hit)});
  rows->push_back({"cache hit: FromFile + first Run, in process", "cpu", "ms", 0,
                   Summarize(inside)});
}

// Child mode: times Program::FromFile + the first Run (cache hit on disk) and appends the seconds
// to the next free hit_child_<i> file next to the program.
int HitChild(const std::string& file) {
  auto a = Clock::now();
  auto prog = ptox::Program::FromFile(file);
  if (!prog.ok()) return 1;
  std::vector<float> x(128 * 128, 1.0f), y(128 * 128, 2.0f), z(128 * 128);
  auto T = [](std::vector<float>& v) {
    return ptox::Tensor::Contiguous(v.data(), ptox::DType::kF32, {128, 128});
  };
  if (!ptox::Run(*prog, {T(x), T(y), T(z)}, {.target = "cpu"}).ok()) return 1;
  double t = Seconds(a, Clock::now());
  std::string dir = fs::path(file).parent_path();
  for (int i = 0;; ++i) {
    std::string out = dir + "/hit_child_" + std::to_string(i);
    if (fs::exists(out)) continue;
    std::ofstream(out) << t;
    return 0;
  }
}

// ---- Report -------------------------------------------------------------------------------------

void Report(const std::vector<Row>& rows, double triad_gbs, const std::string& json_path,
            FILE* md) {
  std::fprintf(md, "| benchmark | target | median | min | max | unit | %% of triad |\n");
  std::fprintf(md, "|---|---|---:|---:|---:|---|---:|\n");
  std::string json = "{\n" + ptox::bench::ManifestMember() + "  \"triad_gbs\": " +
                     std::to_string(triad_gbs) + ",\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const bool bw = r.unit == "GB/s";
    // GB/s: the best (min) time gives the max rate, so min / max swap.
    double med = bw ? r.bytes / r.s.median / 1e9 : r.s.median * 1e3;
    double lo = bw ? r.bytes / r.s.max / 1e9 : r.s.min * 1e3;
    double hi = bw ? r.bytes / r.s.min / 1e9 : r.s.max * 1e3;
    std::string pct = bw ? std::to_string(static_cast<int>(100.0 * med / triad_gbs + 0.5)) + "%"
                         : "";
    std::fprintf(md, "| %s | %s | %.2f | %.2f | %.2f | %s | %s |\n", r.name.c_str(),
                 r.target.c_str(), med, lo, hi, r.unit.c_str(), pct.c_str());
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "    {\"name\": \"%s\", \"target\": \"%s\", \"unit\": \"%s\", \"median\": %.4f, "
                  "\"min\": %.4f, \"max\": %.4f, \"bytes\": %.0f, \"reps\": %d%s}%s\n",
                  r.name.c_str(), r.target.c_str(), r.unit.c_str(), med, lo, hi, r.bytes, kReps,
                  bw ? (", \"pct_of_triad\": " + std::to_string(100.0 * med / triad_gbs)).c_str()
                     : "",
                  i + 1 < rows.size() ? "," : "");
    json += buf;
  }
  json += "  ]\n}\n";
  if (!json_path.empty()) std::ofstream(json_path) << json;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "cpu_bench.json", md_path, ptox_bin, only;
  const std::string self = fs::read_symlink("/proc/self/exe");
  ptox_bin = (fs::path(self).parent_path().parent_path() / "ptox").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--hit-child=", 0) == 0) return HitChild(a.substr(12));
    if (a.rfind("--json=", 0) == 0) json_path = a.substr(7);
    else if (a.rfind("--md=", 0) == 0) md_path = a.substr(5);
    else if (a.rfind("--ptox=", 0) == 0) ptox_bin = a.substr(7);
    else if (a.rfind("--only=", 0) == 0) only = a.substr(7);  // kernels | compile
    else {
      std::fprintf(stderr,
                   "usage: %s [--json=FILE] [--md=FILE] [--ptox=BIN] [--only=kernels|compile]\n",
                   argv[0]);
      return 2;
    }
  }
  char tmpl[] = "/tmp/ptox_bench_XXXXXX";
  const std::string tmp = mkdtemp(tmpl);
  setenv("PTOX_CACHE_DIR", (tmp + "/cache").c_str(), 1);
  std::vector<Row> rows;
  rows.push_back(MeasureTriad());
  const double triad_gbs = rows[0].bytes / rows[0].s.median / 1e9;
  if (only != "compile") {
    MeasureChain(ptox::DType::kF32, "f32", &rows);
    MeasureChain(ptox::DType::kBF16, "bf16", &rows);
    MeasureRowKernels(ptox::DType::kF32, "f32", &rows);
    MeasureRowKernels(ptox::DType::kBF16, "bf16", &rows);
  }
  if (only != "kernels") MeasureCompile(ptox_bin, self, tmp, &rows);
  FILE* md = md_path.empty() ? stdout : std::fopen(md_path.c_str(), "w");
  Report(rows, triad_gbs, json_path, md);
  if (md != stdout) std::fclose(md);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return 0;
}
