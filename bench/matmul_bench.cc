// Matmul benchmark: ptox tile programs vs oneDNN, OpenBLAS and Eigen at 1 and 2 threads, as
// GFLOP/s and a share of the same-run FMA peak (GEMV: GB/s vs the read bandwidth). See
// bench/README.md.
#include "bench/bench_util.h"
#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "passes/convert_tensor_to_tile.h"
#include "ptox/ptox.h"
#include "ptox/bandwidth.h"
#include "ptox/fma_peak.h"
#include "targets/target.h"

extern "C" char* openblas_get_corename(void);
extern "C" void openblas_set_num_threads(int);

namespace {

using ptox::bench::Clock;
using ptox::bench::Seconds;
using ptox::bench::Stats;
using ptox::bench::Summarize;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

int g_reps = 10;  // the fewest measured repetitions (DESIGN.md: >= 10)

// Every measurement starts after a pause: the libraries' worker threads busy-wait for a while
// after each call (OpenBLAS's up to ~30 ms, libgomp's for oneDNN and Eigen), and a row timed
// right after another library's would share the cores with them (512^3 on 2 threads measured
// ptox at 174 or 343 GFLOP/s depending on what ran before it).
// Then warm-up runs for >= 20 ms, and g_reps timed runs, more for short calls (>= 0.1 s in all):
// ten 0.1 ms runs right after the pause measured the second vCPU still waking up (256^3 on 2
// threads: ptox 200-220 GFLOP/s in 10 runs, 280-370 in 50).
Stats TimeIt(const std::function<void()>& fn) {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = Clock::now();
  int warm = 0;
  do fn(), ++warm;
  while (Clock::now() - start < std::chrono::milliseconds(20));
  const double each = std::chrono::duration<double>(Clock::now() - start).count() / warm;
  const int reps = std::max(g_reps, static_cast<int>(std::min(1000.0, 0.1 / each)));
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
  }
  return Summarize(std::move(t));
}

// One measurement: `work` is flops (GFLOP/s rows) or bytes (GB/s rows) per run.
struct Row {
  std::string group, shape, impl, unit;
  int threads = 1;
  double work = 0;
  Stats s;
  double Rate() const { return work / s.median / 1e9; }
};
std::vector<Row> g_rows;

void Record(Row r) {
  std::fprintf(stderr, "  %-10s %-28s %-9s t=%d  %8.2f %s  (spread %.0f%%)\n", r.group.c_str(),
               r.shape.c_str(), r.impl.c_str(), r.threads, r.Rate(), r.unit.c_str(),
               100.0 * (r.s.max - r.s.min) / r.s.median);
  g_rows.push_back(std::move(r));
}

// ---- Ceilings -----------------------------------------------------------------------------------

// The f32 FMA peak ("fma-loop": the ceiling of f32 rows) and, where the host has AVX512_BF16,
// the bf16 dot-product peak ("bf16-dot-loop": the ceiling of the bf16 SwiGLU rows).
void MeasureFmaPeak(int threads) {
  const std::pair<ptox::FmaKernel, bool> kernels[] = {{ptox::BestFmaKernel(), false},
                                                      {ptox::Bf16DotKernel(), true}};
  for (const auto& [k, dot] : kernels) {
    if (k.isa == nullptr) continue;
    const int64_t n = ptox::FmaIterations(k);
    Row r{"ceiling",
          std::string(dot ? "bf16 dot peak (" : "FMA peak (") + std::to_string(ptox::kFmaChains) +
              " chains, " + k.isa + ")",
          dot ? "bf16-dot-loop" : "fma-loop",
          "GFLOP/s",
          threads,
          2.0 * k.lanes * ptox::kFmaChains * n * threads,
          {}};
    r.s = TimeIt([&] { ptox::RunFmaOnThreads(k, threads, n); });
    Record(r);
  }
}

// A row of a bandwidth ceiling: seconds per `bytes` from the GB/s the library measured.
void RecordBandwidth(const std::string& what, const std::string& impl, int threads, double bytes,
                     const ptox::Bandwidth& gbs) {
  Row r{"ceiling", what, impl, "GB/s", threads, bytes, {}};
  r.s = {bytes / gbs.median / 1e9, bytes / gbs.max / 1e9, bytes / gbs.min / 1e9};
  Record(r);
}

// The triad ("triad": 3 x 256 MiB, far past the L3) and the read bandwidth ("read": the ceiling
// of GEMV rows, which read their weights and write almost nothing; the triad's 12 bytes per
// element leave out the write-allocate read of `a` and so undercount what the memory moved).
void MeasureTriad(int threads) {
  RecordBandwidth("triad 3 x 256 MiB", "triad", threads, 3.0 * (256 << 20),
                  ptox::TriadGBs(threads, int64_t{256} << 20, g_reps));
}

void MeasureRead(int threads) {
  RecordBandwidth("read 768 MiB", "read", threads, 768.0 * (1 << 20),
                  ptox::ReadGBs(threads, int64_t{768} << 20, g_reps));
}

// ---- ptox programs ------------------------------------------------------------------------------

std::string Sub(std::string s, const std::map<std::string, std::string>& vars) {
  for (const auto& [from, to] : vars)
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  return s;
}

// C = A * B with TMxTN output tiles and a K loop of TK-wide slices (examples/matmul_dyn.pto).
// EPI selects the epilogue: a plain store, or bias + silu + residual, cast to bf16. B_* are B's
// shape, N's dim, tile load and the matmul's attribute: kRowMajorB, or kTransposedB (B stored
// as B^T, N x K: weights as PyTorch's nn.Linear stores them).
const char* kMatmul = R"(
func @mm(%a: in tensor<{M}x{K}xf32>, %b: in tensor<B_SHAPE>, ARGS) {
  %m = tensor.dim %a, 0
  %kk = tensor.dim %a, 1
  %n = tensor.dim %b, B_DIM
  for %i = 0 to %m step TM parallel {
    for %j = 0 to %n step TN parallel {
      incore {
        %zero = tile.full 0.0 : tile<TMxTNxf32>
        %acc = for %k = 0 to %kk step TK iter(%p = %zero) {
          %ta = tile.load %a[%i, %k] : tile<TMxTKxf32>
          %tb = B_LOAD
          %nx = tile.matmul_acc %p, %ta, %tbB_TRANS
          yield %nx
        }
EPI      }
    }
  }
}
)";
const std::map<std::string, std::string> kRowMajorB = {
    {"B_SHAPE", "{K}x{N}xf32"},
    {"B_DIM", "1"},
    {"B_LOAD", "tile.load %b[%k, %j] : tile<TKxTNxf32>"},
    {"B_TRANS", ""}};
const std::map<std::string, std::string> kTransposedB = {
    {"B_SHAPE", "{N}x{K}xf32"},
    {"B_DIM", "0"},
    {"B_LOAD", "tile.load %b[%j, %k] : tile<TNxTKxf32>"},
    {"B_TRANS", " {transpose_b = true}"}};
const char* kPlainArgs = "%c: out tensor<{M}x{N}xf32>";
const char* kPlainEpi = "        tile.store %acc, %c[%i, %j]\n";
const char* kFusedArgs =
    "%bias: in tensor<1x{N}xf32>, %res: in tensor<{M}x{N}xf32>, %c: out tensor<{M}x{N}xbf16>";
const char* kFusedEpi = R"(        %tbias = tile.load %bias[0, %j] : tile<1xTNxf32>
        %y = tile.col_expand_add %acc, %tbias
        %s = tile.silu %y
        %tr = tile.load %res[%i, %j] : tile<TMxTNxf32>
        %z = tile.add %s, %tr
        %o = tile.cast %z : tile<TMxTNxbf16>
        tile.store %o, %c[%i, %j]
)";

ptox::Program Parse(const std::string& text) {
  auto p = ptox::Program::Parse(text, "<matmul_bench>");
  if (!p.ok()) {
    std::fprintf(stderr, "parse error: %s\n%s\n", p.status().message().c_str(), text.c_str());
    std::exit(1);
  }
  return *p;
}

void RunPtox(const ptox::Program& p, const std::vector<ptox::Arg>& args, int threads,
             const std::vector<std::string>& constants = {}) {
  ptox::Status s =
      ptox::Run(p, args, {.target = "cpu", .num_threads = threads, .constants = constants});
  if (!s.ok()) {
    std::fprintf(stderr, "ptox run failed: %s\n", s.message().c_str());
    std::exit(1);
  }
}

// The tiles convert-tensor-to-tile picks for a tensor-level M x K x N matmul on the CPU target
// (passes::convert::MatmulTiling): operands are read in place (views) and the kernel blocks for
// the caches itself, so tiles only set the task grain.
// PTOX_BENCH_TILES=TMxTNxTK overrides them (for exploring the blocking).
std::map<std::string, std::string> Tiles(int64_t m, int64_t k, int64_t n) {
  int64_t tk = 0;
  const ptox::passes::convert::Tiling t = ptox::passes::convert::MatmulTiling(
      ptox::targets::GetTarget("cpu").caps(), m, n, k, &tk);
  int64_t tm = t.rows, tn = t.cols;
  if (const char* e = std::getenv("PTOX_BENCH_TILES")) {
    long a = 0, b = 0, c = 0;
    if (std::sscanf(e, "%ldx%ldx%ld", &a, &b, &c) == 3)
      tm = std::min<int64_t>(m, a), tn = std::min<int64_t>(n, b), tk = std::min<int64_t>(k, c);
  }
  return {{"TM", std::to_string(tm)}, {"TN", std::to_string(tn)}, {"TK", std::to_string(tk)}};
}

// ---- Baselines ----------------------------------------------------------------------------------

void SetThreads(int threads) {
  omp_set_num_threads(threads);  // oneDNN (Debian builds it with the GNU OpenMP runtime), Eigen
  Eigen::setNbThreads(threads);
  openblas_set_num_threads(threads);
}

// Largest relative difference of x from ref over all elements, scaled by max |ref|.
double MaxRelDiff(const std::vector<float>& x, const std::vector<float>& ref) {
  double scale = 1e-30, d = 0;
  for (float r : ref) scale = std::max(scale, static_cast<double>(std::fabs(r)));
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::fabs(double(x[i]) - ref[i]));
  return d / scale;
}

// f32 C = A * B (row-major, M x K times K x N; `bt`: B stored as B^T, N x K) through ptox and
// the three libraries.
void BenchGemm(const std::string& group, int64_t m, int64_t k, int64_t n, int threads,
               bool bt = false) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n), c(m * n), ref(m * n);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  const std::string shape = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
  const bool gemv = m == 1;
  const double work = gemv ? 4.0 * k * n : 2.0 * m * n * k;
  const std::string unit = gemv ? "GB/s" : "GFLOP/s";
  SetThreads(threads);
  auto rec = [&](const std::string& impl, const std::function<void()>& fn) {
    Record({group, shape, impl, unit, threads, work, TimeIt(fn)});
  };
  const int64_t ldb = bt ? k : n;
  rec("onednn", [&] {
    dnnl_sgemm('N', bt ? 'T' : 'N', m, n, k, 1.0f, a.data(), k, b.data(), ldb, 0.0f, ref.data(),
               n);
  });
  rec("openblas", [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, bt ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                a.data(), k, b.data(), ldb, 0.0f, c.data(), n);
  });
  Eigen::Map<const RowMat> ea(a.data(), m, k), eb(b.data(), k, n), ebt(b.data(), n, k);
  Eigen::Map<RowMat> ec(c.data(), m, n);
  rec("eigen", [&] {
    if (bt)
      ec.noalias() = ea * ebt.transpose();
    else
      ec.noalias() = ea * eb;
  });
  auto vars = Tiles(m, k, n);
  vars["ARGS"] = kPlainArgs;
  vars["EPI"] = kPlainEpi;
  vars.insert((bt ? kTransposedB : kRowMajorB).begin(), (bt ? kTransposedB : kRowMajorB).end());
  ptox::Program p = Parse(Sub(kMatmul, vars));
  std::vector<ptox::Arg> args = {
      ptox::Tensor::Contiguous(a.data(), ptox::DType::kF32, {m, k}),
      ptox::Tensor::Contiguous(b.data(), ptox::DType::kF32, bt ? std::vector<int64_t>{n, k}
                                                               : std::vector<int64_t>{k, n}),
      ptox::Tensor::Contiguous(c.data(), ptox::DType::kF32, {m, n})};
  std::fill(c.begin(), c.end(), 0.0f);
  rec("ptox", [&] { RunPtox(p, args, threads); });
  const double diff = MaxRelDiff(c, ref);
  if (diff > 1e-4) {
    std::fprintf(stderr, "ptox result differs from oneDNN by %g (relative)\n", diff);
    std::exit(1);
  }
}

// Matmul followed by bias + silu + residual + cast to bf16 (fused by codegen into one loop over
// the materialized tile), against the plain matmul: the epilogue's cost.
void BenchEpilogue(int64_t s, int threads) {
  std::vector<float> a(s * s, 0.5f), b(s * s, 0.25f), bias(s, 1.0f), res(s * s, 2.0f);
  std::vector<float> c(s * s);
  std::vector<uint16_t> cb(s * s);
  const std::string shape = std::to_string(s) + "^3";
  for (bool fused : {false, true}) {
    auto vars = Tiles(s, s, s);
    vars["ARGS"] = fused ? kFusedArgs : kPlainArgs;
    vars["EPI"] = fused ? kFusedEpi : kPlainEpi;
    vars.insert(kRowMajorB.begin(), kRowMajorB.end());
    ptox::Program p = Parse(Sub(kMatmul, vars));
    std::vector<ptox::Arg> args = {ptox::Tensor::Contiguous(a.data(), ptox::DType::kF32, {s, s}),
                                   ptox::Tensor::Contiguous(b.data(), ptox::DType::kF32, {s, s})};
    if (fused) {
      args.push_back(ptox::Tensor::Contiguous(bias.data(), ptox::DType::kF32, {1, s}));
      args.push_back(ptox::Tensor::Contiguous(res.data(), ptox::DType::kF32, {s, s}));
      args.push_back(ptox::Tensor::Contiguous(cb.data(), ptox::DType::kBF16, {s, s}));
    } else {
      args.push_back(ptox::Tensor::Contiguous(c.data(), ptox::DType::kF32, {s, s}));
    }
    Record({"epilogue", shape, fused ? "ptox+epi" : "ptox", "GFLOP/s", threads, 2.0 * s * s * s,
            TimeIt([&] { RunPtox(p, args, threads); })});
  }
}

// ---- bf16 SwiGLU MLP: y = (silu(x Wg) * (x Wu)) Wd ----------------------------------------------

// Phase 1 computes gate and up in one task per h tile (one x tile load feeds both matmuls) with
// silu * mul and the bf16 cast fused into the store; phase 2 is a bf16-in, f32-accumulate matmul.
const char* kSwiglu = R"(
func @swiglu(%x: in tensor<{M}x{D}xbf16>, %wg: in tensor<{D}x{F}xbf16>,
             %wu: in tensor<{D}x{F}xbf16>, %wd: in tensor<{F}x{D}xbf16>,
             %h: out tensor<{M}x{F}xbf16>, %y: out tensor<{M}x{D}xbf16>) {
  %m = tensor.dim %x, 0
  %d = tensor.dim %x, 1
  %f = tensor.dim %wg, 1
  for %i = 0 to %m step GM parallel {
    for %j = 0 to %f step GN parallel {
      incore {
        %zero = tile.full 0.0 : tile<GMxGNxf32>
        %g, %u = for %k = 0 to %d step GK iter(%pg = %zero, %pu = %zero) {
          %tx = tile.load %x[%i, %k] : tile<GMxGKxbf16>
          %tg = tile.load %wg[%k, %j] : tile<GKxGNxbf16>
          %tu = tile.load %wu[%k, %j] : tile<GKxGNxbf16>
          %ng = tile.matmul_acc %pg, %tx, %tg
          %nu = tile.matmul_acc %pu, %tx, %tu
          yield %ng, %nu
        }
        %sg = tile.silu %g
        %hh = tile.mul %sg, %u
        %hb = tile.cast %hh : tile<GMxGNxbf16>
        tile.store %hb, %h[%i, %j]
      }
    }
  }
  for %i2 = 0 to %m step DM parallel {
    for %j2 = 0 to %d step DN parallel {
      incore {
        %zero2 = tile.full 0.0 : tile<DMxDNxf32>
        %acc = for %k2 = 0 to %f step DK iter(%p = %zero2) {
          %th = tile.load %h[%i2, %k2] : tile<DMxDKxbf16>
          %tw = tile.load %wd[%k2, %j2] : tile<DKxDNxbf16>
          %nx = tile.matmul_acc %p, %th, %tw
          yield %nx
        }
        %yb = tile.cast %acc : tile<DMxDNxbf16>
        tile.store %yb, %y[%i2, %j2]
      }
    }
  }
}
)";

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
float FromBf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The same MLP as three oneDNN bf16 matmul primitives, as a oneDNN user would write it: silu
// fused into the gate matmul as an eltwise_swish post-op and the product into the up matmul as a
// binary_mul post-op; weights reordered once, outside the timing, into oneDNN's preferred
// (blocked) layout ("onednn"), or left row-major as ptox reads them ("onednn-plain").
struct OnednnSwiglu {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::memory x, g, h, y, wg, wu, wd;
  dnnl::matmul gate, up, down;

  dnnl::memory Weights(const dnnl::matmul::primitive_desc& pd, std::vector<uint16_t>& w,
                       int64_t r, int64_t c) {
    dnnl::memory plain({{r, c}, dt::bf16, tag::ab}, eng, w.data());
    if (pd.weights_desc() == plain.get_desc()) return plain;
    dnnl::memory packed(pd.weights_desc(), eng);
    dnnl::reorder(plain, packed).execute(strm, plain, packed);
    strm.wait();
    return packed;
  }
  OnednnSwiglu(int64_t m, int64_t d, int64_t f, std::vector<uint16_t>& xv,
               std::vector<uint16_t>& wgv, std::vector<uint16_t>& wuv, std::vector<uint16_t>& wdv,
               std::vector<uint16_t>& yv, bool prepacked) {
    dnnl::memory::desc xd({m, d}, dt::bf16, tag::ab), hd({m, f}, dt::bf16, tag::ab);
    dnnl::memory::desc yd({m, d}, dt::bf16, tag::ab);
    const tag wt = prepacked ? tag::any : tag::ab;
    dnnl::memory::desc w1({d, f}, dt::bf16, wt), w2({f, d}, dt::bf16, wt);
    dnnl::post_ops swish, mul;
    swish.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
    mul.append_binary(dnnl::algorithm::binary_mul, hd);
    dnnl::primitive_attr a_swish, a_mul;
    a_swish.set_post_ops(swish);
    a_mul.set_post_ops(mul);
    dnnl::matmul::primitive_desc pg({xd, w1, hd}, a_swish, eng), pu({xd, w1, hd}, a_mul, eng);
    dnnl::matmul::primitive_desc pd({hd, w2, yd}, eng);
    gate = dnnl::matmul(pg), up = dnnl::matmul(pu), down = dnnl::matmul(pd);
    x = dnnl::memory(xd, eng, xv.data());
    y = dnnl::memory(yd, eng, yv.data());
    g = dnnl::memory(hd, eng);
    h = dnnl::memory(hd, eng);
    wg = Weights(pg, wgv, d, f), wu = Weights(pu, wuv, d, f), wd = Weights(pd, wdv, f, d);
  }
  void Run() {
    gate.execute(strm, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, wg}, {DNNL_ARG_DST, g}});
    up.execute(strm, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, wu}, {DNNL_ARG_DST, h},
                      {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, g}});
    down.execute(strm, {{DNNL_ARG_SRC, h}, {DNNL_ARG_WEIGHTS, wd}, {DNNL_ARG_DST, y}});
    strm.wait();
  }
};

void BenchSwiglu(int64_t m, int64_t d, int64_t f, int threads) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto fill = [&](int64_t n, float scale) {
    std::vector<uint16_t> v(n);
    for (uint16_t& e : v) e = ToBf16(dist(rng) * scale);
    return v;
  };
  std::vector<uint16_t> x = fill(m * d, 1.0f), wg = fill(d * f, 0.05f), wu = fill(d * f, 0.05f);
  std::vector<uint16_t> wd = fill(f * d, 0.05f), h(m * f), y(m * d), yref(m * d);
  const std::string shape = "M" + std::to_string(m) + " D" + std::to_string(d) + " F" +
                            std::to_string(f);
  const double flops = 6.0 * m * d * f;
  SetThreads(threads);
  for (bool prepacked : {true, false}) {
    OnednnSwiglu dnn(m, d, f, x, wg, wu, wd, yref, prepacked);
    Record({"swiglu", shape, prepacked ? "onednn" : "onednn-plain", "GFLOP/s", threads, flops,
            TimeIt([&] { dnn.Run(); })});
  }
  // Each phase takes the tiles Tiles() gives its matmul (gate / up: M x D x F; down: M x F x D).
  std::map<std::string, std::string> vars;
  for (const auto& [phase, mkn] : {std::pair<std::string, std::array<int64_t, 3>>{"G", {m, d, f}},
                                   {"D", {m, f, d}}})
    for (const auto& [name, size] : Tiles(mkn[0], mkn[1], mkn[2]))
      vars[phase + name.substr(1)] = size;
  ptox::Program p = Parse(Sub(kSwiglu, vars));
  auto t = [](std::vector<uint16_t>& v, int64_t r, int64_t c) {
    return ptox::Tensor::Contiguous(v.data(), ptox::DType::kBF16, {r, c});
  };
  std::vector<ptox::Arg> args = {t(x, m, d), t(wg, d, f), t(wu, d, f), t(wd, f, d), t(h, m, f),
                                 t(y, m, d)};
  // "ptox-const": the weights marked constant, so their packed blocks are kept across runs (as
  // oneDNN's reordered weights are); the warm-up run packs them.
  for (bool keep : {false, true}) {
    std::fill(y.begin(), y.end(), uint16_t{0});
    const std::vector<std::string> constants =
        keep ? std::vector<std::string>{"wg", "wu", "wd"} : std::vector<std::string>{};
    Record({"swiglu", shape, keep ? "ptox-const" : "ptox", "GFLOP/s", threads, flops,
            TimeIt([&] { RunPtox(p, args, threads, constants); })});
    std::vector<float> a(m * d), b(m * d);
    for (int64_t i = 0; i < m * d; ++i) a[i] = FromBf16(y[i]), b[i] = FromBf16(yref[i]);
    const double diff = MaxRelDiff(a, b);
    if (diff > 3e-2) {
      std::fprintf(stderr, "ptox SwiGLU differs from oneDNN by %g (relative)\n", diff);
      std::exit(1);
    }
  }
  p.ForgetConstants();
}

// ---- Reports ------------------------------------------------------------------------------------

// The same-run ceiling of a row: the read bandwidth for GB/s (GEMV), the bf16 dot-product peak
// for the bf16 SwiGLU (the FMA peak where the host has no AVX512_BF16), else the f32 FMA peak.
double Ceiling(const Row& row) {
  double fma = 0, dot = 0, read = 0;
  for (const Row& r : g_rows) {
    if (r.group != "ceiling" || r.threads != row.threads) continue;
    if (r.impl == "read") read = r.Rate();
    else if (r.impl == "bf16-dot-loop") dot = r.Rate();
    else if (r.impl != "triad") fma = r.Rate();
  }
  if (row.unit == "GB/s") return read;
  return row.group == "swiglu" && dot > 0 ? dot : fma;
}

void WriteJson(const std::string& path, const std::string& corename) {
  std::ofstream out(path);
  out << "{\n" << ptox::bench::ManifestMember() << "  \"openblas_coretype\": \""
      << std::getenv("OPENBLAS_CORETYPE")
      << "\",\n  \"openblas_core\": \"" << corename << "\",\n  \"reps\": " << g_reps
      << ",\n  \"rows\": [\n";
  for (size_t i = 0; i < g_rows.size(); ++i) {
    const Row& r = g_rows[i];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "    {\"group\": \"%s\", \"shape\": \"%s\", \"impl\": \"%s\", \"threads\": %d, "
                  "\"unit\": \"%s\", \"rate\": %.4f, \"median_s\": %.6g, \"min_s\": %.6g, "
                  "\"max_s\": %.6g}%s\n",
                  r.group.c_str(), r.shape.c_str(), r.impl.c_str(), r.threads, r.unit.c_str(),
                  r.Rate(), r.s.median, r.s.min, r.s.max, i + 1 < g_rows.size() ? "," : "");
    out << buf;
  }
  out << "  ]\n}\n";
}

// One table per group: per (shape, threads) every implementation's median rate, and for each
// of ptox's rows ("ptox", and "ptox-const" with weights kept packed; the epilogue group:
// "ptox+epi" against "ptox") its spread, share of the same-run ceiling and ratio to each other
// implementation.
void WriteGroupTable(std::ofstream& out, const std::string& group) {
  std::vector<std::string> impls, keys;
  std::map<std::string, std::map<std::string, const Row*>> cells;
  for (const Row& r : g_rows) {
    if (r.group != group) continue;
    if (std::find(impls.begin(), impls.end(), r.impl) == impls.end()) impls.push_back(r.impl);
    const std::string key = r.shape + "|" + std::to_string(r.threads);
    if (!cells.count(key)) keys.push_back(key);
    cells[key][r.impl] = &r;
  }
  if (keys.empty()) return;
  std::vector<std::string> mine, others;
  for (const auto& i : impls) {
    const bool ours = group == "epilogue" ? i == "ptox+epi" : i.rfind("ptox", 0) == 0;
    (ours ? mine : others).push_back(i);
  }
  out << "\n### " << group << "\n\n| shape | threads | unit |";
  int cols = 0;
  for (const auto& i : impls) out << " " << i << " |", ++cols;
  for (const auto& m : mine) {
    out << " " << m << " spread | " << m << " % of ceiling |";
    cols += 2;
    for (const auto& o : others) out << " " << m << " / " << o << " |", ++cols;
  }
  out << "\n|---|---:|---|";
  for (int i = 0; i < cols; ++i) out << "---:|";
  out << "\n";
  char buf[64];
  for (const std::string& key : keys) {
    auto& row = cells[key];
    const Row& any = *row.begin()->second;
    out << "| " << any.shape << " | " << any.threads << " | " << any.unit << " |";
    for (const auto& i : impls) {
      std::snprintf(buf, sizeof buf, " %.1f |", row.count(i) ? row[i]->Rate() : 0.0);
      out << buf;
    }
    const double ceil = Ceiling(any);
    for (const auto& m : mine) {
      const Row* p = row.count(m) ? row[m] : nullptr;
      std::snprintf(buf, sizeof buf, " %.0f%% | %.0f%% |",
                    p ? 100.0 * (p->s.max - p->s.min) / p->s.median : 0.0,
                    p && ceil > 0 ? 100.0 * p->Rate() / ceil : 0.0);
      out << buf;
      for (const auto& o : others) {
        std::snprintf(buf, sizeof buf, " %.2fx |",
                      p && row.count(o) ? p->Rate() / row[o]->Rate() : 0.0);
        out << buf;
      }
    }
    out << "\n";
  }
}

void WriteReports(const std::string& json_path, const std::string& md_path,
                  const std::string& corename) {
  WriteJson(json_path, corename);
  std::ofstream out(md_path);
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = -1;
  out << "OpenBLAS: OPENBLAS_CORETYPE=" << std::getenv("OPENBLAS_CORETYPE") << " (core "
      << corename << "). Medians of >= " << g_reps
      << " runs (>= 0.1 s) after >= 20 ms of warm-up; load average at "
      << "the end " << load[0] << ".\n\n### ceilings\n\n| ceiling | threads | median | min | max "
      << "| unit |\n|---|---:|---:|---:|---:|---|\n";
  char buf[256];
  for (const Row& r : g_rows) {
    if (r.group != "ceiling") continue;
    std::snprintf(buf, sizeof buf, "| %s | %d | %.1f | %.1f | %.1f | %s |\n", r.shape.c_str(),
                  r.threads, r.Rate(), r.work / r.s.max / 1e9, r.work / r.s.min / 1e9,
                  r.unit.c_str());
    out << buf;
  }
  for (const char* g : {"square", "llm", "llm-bt", "gemv-l3", "gemv-dram", "epilogue", "swiglu"})
    WriteGroupTable(out, g);
  std::fprintf(stderr, "wrote %s and %s\n", json_path.c_str(), md_path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's OpenBLAS (DYNAMIC_ARCH) picks its kernels when the library loads, and misdetects
  // this CPU unless OPENBLAS_CORETYPE says otherwise: set it and restart before any call.
  // SkylakeX: OpenBLAS 0.3.21's AVX-512 kernels (its Zen target is AVX2 only).
  // PTOX_BENCH_OPENBLAS_CORE picks another.
  const char* core = std::getenv("PTOX_BENCH_OPENBLAS_CORE");
  core = core ? core : "SkylakeX";
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  if (set == nullptr || std::strcmp(set, core) != 0) {
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);
  }
  std::string json = "matmul_bench.json", md = "matmul_bench.md", only, shape;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--json=", 0) == 0) json = s.substr(7);
    else if (s.rfind("--md=", 0) == 0) md = s.substr(5);
    else if (s.rfind("--only=", 0) == 0) only = s.substr(7);
    else if (s.rfind("--shape=", 0) == 0) shape = s.substr(8);
    else if (s.rfind("--reps=", 0) == 0) g_reps = std::max(10, std::atoi(s.c_str() + 7));
  }
  auto want = [&](const char* g) { return only.empty() || only.find(g) != std::string::npos; };
  const std::string corename = openblas_get_corename();
  std::fprintf(stderr, "OPENBLAS_CORETYPE=%s (OpenBLAS core: %s)\n",
               std::getenv("OPENBLAS_CORETYPE"), corename.c_str());
  for (int t : {1, 2}) {
    MeasureFmaPeak(t);
    if (want("gemv")) MeasureTriad(t), MeasureRead(t);
  }
  long sm = 0, sk = 0, sn = 0;
  if (std::sscanf(shape.c_str(), "%ldx%ldx%ld", &sm, &sk, &sn) == 3) {
    for (int t : {1, 2}) BenchGemm("shape", sm, sk, sn, t);  // one shape only (--shape=MxKxN)
    only = "none";
  }
  for (int t : {1, 2}) {
    if (want("square"))
      for (int64_t s : {256, 512, 1024, 2048, 4096}) BenchGemm("square", s, s, s, t);
    if (want("llm"))
      for (int64_t m : {16, 128})
        for (auto [k, n] : {std::pair<int64_t, int64_t>{1024, 3072}, {2048, 6144}, {4096, 11008}})
          BenchGemm("llm", m, k, n, t);
    if (want("llm-bt"))  // the weights as B^T
      for (int64_t m : {1, 16, 128})
        for (auto [k, n] : {std::pair<int64_t, int64_t>{2048, 6144}, {4096, 11008}})
          BenchGemm("llm-bt", m, k, n, t, true);
    if (want("gemv")) {
      BenchGemm("gemv-l3", 1, 1024, 3072, t);  // 12 MiB of weights: L3-resident
      BenchGemm("gemv-dram", 1, 2048, 6144, t);   // 48 MiB of weights
      BenchGemm("gemv-dram", 1, 4096, 11008, t);  // 172 MiB of weights: DRAM
      BenchGemm("gemv-dram", 1, 8192, 11008, t);  // 344 MiB: past a 260 MB L3 too
    }
    if (want("epilogue")) BenchEpilogue(2048, t);
    if (want("swiglu"))
      for (int64_t m : {16, 128}) BenchSwiglu(m, 2048, 5632, t);
  }
  WriteReports(json, md, corename);
  return 0;
}
