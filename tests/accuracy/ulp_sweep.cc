// The accuracy of kernels/scalar.h's functions against float64 references: the maximum error in
// ulps of the exact value over every f32 input (--stride=1, about a minute per function on two
// cores) or every stride-th bit pattern, and over every bf16 and f16 input with the result
// rounded to that type (as a bf16 / f16 tile op computes: in f32, then one rounding). Prints the
// table of docs/ops.md; --check fails when a function exceeds its documented bound (ctest runs a
// sampled sweep this way), and the storage conversions are checked bit for bit against an
// independent rounding.
//
//   ulp_sweep [--stride=N] [--check] [--only=exp,log,...] [--threads=N]
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/scalar.h"

namespace {

using namespace ptox::scalar;  // NOLINT(build/namespaces)

float FromBits(uint32_t u) { return BitsFloat(u); }

struct Function {
  const char* name;
  float (*f)(float);
  double (*ref)(double);
  int bound;           // documented: max ulps from the correctly rounded result, normal results
  const char* domain;  // where the bound holds (docs/ops.md repeats it)
  // Inputs outside the bound's domain (their error is reported, not checked).
  bool (*excluded)(float) = nullptr;
};

double GeluRef(double x) {
  if (x < -1e3) return -0.0;  // the limit (the formula gives inf / inf at -inf)
  double u = 0.7978845608 * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

const std::vector<Function>& Functions() {
  static const std::vector<Function> fns = {
      {"exp", Exp, [](double x) { return std::exp(x); }, 1, "every input"},
      {"log", Log, [](double x) { return std::log(x); }, 1, "every input"},
      {"tanh", Tanh, [](double x) { return std::tanh(x); }, 2, "every input"},
      {"sigmoid", Sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, 2, "every input"},
      // Below -87 sigmoid(x) is subnormal, and x times it keeps only its few bits (docs/ops.md).
      {"silu", Silu, [](double x) { return x < -1e3 ? -0.0 : x / (1.0 + std::exp(-x)); }, 3,
       "x > -87", [](float x) { return x <= -87.0f; }},
      // Negative x is ill-conditioned (docs/ops.md): the bound is for x >= 0 only.
      {"gelu", Gelu, GeluRef, 3, "x >= 0", [](float x) { return !(x >= 0.0f); }},
      {"erf", Erf, [](double x) { return std::erf(x); }, 1, "every input"},
      {"sqrt", Sqrt, [](double x) { return std::sqrt(x); }, 0, "every input"},
      {"rsqrt", Rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, 1, "every input"},
      {"recip", Recip, [](double x) { return 1.0 / x; }, 0, "every input"},
  };
  return fns;
}

// How many f32 values lie between `got` and the correctly rounded `ref` (0 for two NaNs; a NaN
// against a number: 2^32).
int64_t UlpsFromRounded(float got, double ref) {
  const float want = static_cast<float>(ref);
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : 1LL << 32;
  auto ord = [](float f) -> int64_t {
    const int32_t i = static_cast<int32_t>(FloatBits(f));
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : i;
  };
  const int64_t d = ord(got) - ord(want);
  return d < 0 ? -d : d;
}

// The error of `got` against the exact `ref`, in ulps of f32 at ref (subnormal ulp below the
// normal range). Infinite and NaN cases: 0 when they agree, +Inf when they do not.
double UlpError(float got, double ref) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got) ? 0 : INFINITY;
  if (std::fabs(ref) > 3.4028235677973366e38) {  // rounds to Inf in f32 (or is Inf)
    const float want = static_cast<float>(ref);
    return got == want ? 0 : INFINITY;
  }
  if (std::isinf(got)) return INFINITY;
  const int e = std::max(std::ilogb(ref), -126);
  return std::fabs(static_cast<double>(got) - ref) / std::ldexp(1.0, e - 23);
}

// The worst input of a sweep: its distance from the correctly rounded result (what the bounds
// are stated in) and, separately, the largest error against the exact value.
struct Worst {
  int64_t ulps = 0;
  uint32_t at = 0;
  double exact = 0;
  void Take(int64_t d, double e, uint32_t u) {
    if (d > ulps) ulps = d, at = u;
    exact = std::max(exact, e);
  }
  void Take(const Worst& o) {
    Take(o.ulps, o.exact, o.at);
    if (o.ulps == ulps) at = std::min(at, o.at);
  }
};

// Max error over the bit patterns 0, stride, 2 stride, ... below 2^32, split over threads: over
// the bound's domain with a normal (or infinite) exact result, over inputs outside the domain,
// and over subnormal exact results (in subnormal ulps), each with its worst input.
struct Sweep {
  Worst checked, outside, subnormal;
};

Sweep SweepF32(const Function& fn, uint64_t stride, int threads) {
  std::vector<Sweep> part(threads);
  std::vector<std::thread> pool;
  const uint64_t total = (uint64_t{1} << 32);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      constexpr int kBlock = 4096;
      float xs[kBlock], ys[kBlock];
      uint32_t us[kBlock];
      uint64_t per = (total / stride + threads - 1) / threads;
      uint64_t begin = per * t * stride, end = std::min(total, per * (t + 1) * stride);
      for (uint64_t u = begin; u < end;) {
        int n = 0;
        for (; n < kBlock && u < end; ++n, u += stride) {
          us[n] = static_cast<uint32_t>(u);
          xs[n] = FromBits(us[n]);
        }
        for (int i = 0; i < n; ++i) ys[i] = fn.f(xs[i]);  // vectorized where the ISA allows
        for (int i = 0; i < n; ++i) {
          const double ref = fn.ref(xs[i]);
          Sweep& p = part[t];
          (fn.excluded && fn.excluded(xs[i]) ? p.outside
           : std::fabs(ref) < 0x1p-126 && ref != 0 ? p.subnormal
                                                   : p.checked)
              .Take(UlpsFromRounded(ys[i], ref), UlpError(ys[i], ref), us[i]);
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  Sweep all;
  for (const Sweep& p : part) {
    all.checked.Take(p.checked);
    all.outside.Take(p.outside);
    all.subnormal.Take(p.subnormal);
  }
  return all;
}

// An independent round-to-nearest-even of x to `mant` mantissa bits with least normal exponent
// `emin` (subnormals below it) and largest finite `max`: the candidates below and above in
// double, the nearer one, the even one on a tie. NaN is not handled (the caller checks it).
double RoundRef(double x, int mant, int emin, double max) {
  if (x == 0 || std::isinf(x)) return x;
  const int e = std::max(std::ilogb(x), emin);
  const double q = std::ldexp(x, mant - e);  // the value in units of the last place
  double lo = std::floor(q), hi = lo + 1;
  double r = (q - lo < hi - q) ? lo : (q - lo > hi - q) ? hi : (std::fmod(lo, 2) == 0 ? lo : hi);
  const double v = std::ldexp(r, e - mant);
  return std::fabs(v) > max ? std::copysign(INFINITY, x) : v;
}

// Max error, in ulps of the 16-bit type, over every 16-bit input whose f32 result is rounded to
// that type. `to16` / `from16` are the storage conversions; `mant` its mantissa bits, `emin` its
// least normal exponent, `max` its largest finite value.
double Sweep16(const Function& fn, uint16_t (*to16)(float), float (*from16)(uint16_t), int mant,
               int emin, double max) {
  double worst = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float x = from16(static_cast<uint16_t>(h));
    if (std::isnan(x) || (fn.excluded && fn.excluded(x))) continue;
    const float got = from16(to16(fn.f(x)));
    const double ref = fn.ref(x);
    if (std::isnan(ref) || std::isnan(got)) {
      if (std::isnan(ref) != std::isnan(got)) worst = INFINITY;
      continue;
    }
    if (std::fabs(ref) > max || std::isinf(got)) {  // at or past the range: the rounded value
      if (static_cast<double>(got) != RoundRef(ref, mant, emin, max)) worst = INFINITY;
      continue;
    }
    const int e = std::max(std::ilogb(ref), emin);
    worst = std::max(worst, std::fabs(got - ref) / std::ldexp(1.0, e - mant));
  }
  return worst;
}

uint16_t ToBf16(float x) { return F32ToBf16(x); }
uint16_t ToF16(float x) { return F32ToF16(x); }

// Every f32 (stride-th) through F32ToBf16 and F32ToF16 against RoundRef; NaNs must stay NaN
// with their sign. Returns the number of mismatches.
uint64_t CheckConversions(uint64_t stride) {
  uint64_t bad = 0;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += stride) {
    const float x = FromBits(static_cast<uint32_t>(u));
    const uint16_t b = F32ToBf16(x), h = F32ToF16(x);
    const float bx = Bf16ToF32(b), hx = F16ToF32(h);
    if (std::isnan(x)) {
      bad += !(std::isnan(bx) && std::isnan(hx) && std::signbit(bx) == std::signbit(x) &&
               std::signbit(hx) == std::signbit(x));
      continue;
    }
    const double wb = RoundRef(x, 7, -126, 3.3895313892515355e38);
    const double wh = RoundRef(x, 10, -14, 65504.0);
    bad += !(static_cast<double>(bx) == wb && std::signbit(bx) == std::signbit(x));
    bad += !(static_cast<double>(hx) == wh && std::signbit(hx) == std::signbit(x));
    if (bad && bad < 5 && (bx != wb || hx != wh))
      std::fprintf(stderr, "conversion mismatch at %08x\n", static_cast<unsigned>(u));
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t stride = 1;
  bool check = false;
  std::string only;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--stride=", 0) == 0) {
      stride = std::strtoull(a.c_str() + 9, nullptr, 10);
    } else if (a == "--check") {
      check = true;
    } else if (a.rfind("--only=", 0) == 0) {
      only = "," + a.substr(7) + ",";
    } else if (a.rfind("--threads=", 0) == 0) {
      threads = std::max(1, std::atoi(a.c_str() + 10));
    } else {
      std::fprintf(stderr, "usage: %s [--stride=N] [--check] [--only=exp,log,...] [--threads=N]\n",
                   argv[0]);
      return 2;
    }
  }
  if (stride == 0) stride = 1;
  std::printf("| function | bound | where | measured | at input | vs exact | subnormal results | "
              "outside the domain | bf16 inputs | f16 inputs |\n");
  std::printf("|---|---:|---|---:|---|---:|---:|---:|---:|---:|\n");
  bool failed = false;
  for (const Function& fn : Functions()) {
    if (!only.empty() && only.find("," + std::string(fn.name) + ",") == std::string::npos) continue;
    const Sweep sw = SweepF32(fn, stride, threads);
    const Worst& w = sw.checked;
    const double b16 = Sweep16(fn, ToBf16, Bf16ToF32, 7, -126, 3.3895313892515355e38);
    const double h16 = Sweep16(fn, ToF16, F16ToF32, 10, -14, 65504.0);
    char outs[64] = "-";
    if (fn.excluded) std::snprintf(outs, sizeof outs, "%lld", static_cast<long long>(sw.outside.ulps));
    std::printf("| %s | %d | %s | %lld | 0x%08x | %.3f | %lld | %s | %.3f | %.3f |\n", fn.name,
                fn.bound, fn.domain, static_cast<long long>(w.ulps), w.at, w.exact,
                static_cast<long long>(sw.subnormal.ulps), outs, b16, h16);
    // A 16-bit result adds its own rounding (half an ulp of the 16-bit type) to the f32 error,
    // which is far below one 16-bit ulp: the f32 bound in 16-bit ulps is < 0.51.
    if (check && (w.ulps > fn.bound || b16 > 0.51 || h16 > 0.51)) {
      std::fprintf(stderr, "FAIL %s: %lld ulp at 0x%08x (bound %d); bf16 %.3f, f16 %.3f\n",
                   fn.name, static_cast<long long>(w.ulps), w.at, fn.bound, b16, h16);
      failed = true;
    }
  }
  std::fflush(stdout);
  if (only.empty() || only.find(",convert,") != std::string::npos) {
    const uint64_t bad = CheckConversions(stride);
    std::printf("\nf32 -> bf16 and f32 -> f16 (round to nearest even) against an independent "
                "rounding: %llu mismatches\n",
                static_cast<unsigned long long>(bad));
    failed = failed || (check && bad != 0);
  }
  return failed ? 1 : 0;
}
