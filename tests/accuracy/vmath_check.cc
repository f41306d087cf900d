// kernels/cpu/vmath.h against kernels/scalar.h, bit for bit, on every f32 input (2^32 bit
// patterns, or every stride-th with --stride=N), for each function with a vector form. Built once per x86 ISA the kernels are compiled
// for (vmath_check_avx512, vmath_check_avx2); exits 77 (skipped) where the host lacks the ISA.
//   vmath_check [--stride=N]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/vmath.h"

namespace {

bool HostHasIsa() {
#if defined(__AVX512F__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#elif defined(__AVX2__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return true;
#endif
}

struct Function {
  const char* name;
  void (*vector)(const float*, float*, int64_t);
  float (*scalar)(float);
};
namespace vm = ptox::cpu::vmath;
namespace sc = ptox::scalar;

// ExpSub, a fused softmax's exp of a row minus its maximum m: the general form on every input
// (m = 0.75), and the form for a finite maximum on the input mapped to at most m (a NaN to -inf),
// m = 0 (every non-positive f32 exactly) and m = 100 (differences that round).
template <int kM>
float AtMost(float x) {
  return x != x ? -INFINITY : std::min(x, static_cast<float>(kM));
}
void ExpSubAny(const float* in, float* out, int64_t n) { vm::ExpSub(in, 0.75f, out, n, false); }
float ExpSubAnyRef(float x) { return sc::Exp(x - 0.75f); }
template <int kM>
void ExpSubMax(const float* in, float* out, int64_t n) {
  std::vector<float> t(n);
  for (int64_t k = 0; k < n; ++k) t[k] = AtMost<kM>(in[k]);
  vm::ExpSub(t.data(), kM, out, n, true);
}
template <int kM>
float ExpSubMaxRef(float x) {
  return sc::Exp(AtMost<kM>(x) - static_cast<float>(kM));
}

const Function kFunctions[] = {{"exp", vm::Exp, sc::Exp},
                               {"tanh", vm::Tanh, sc::Tanh},
                               {"sigmoid", vm::Sigmoid, sc::Sigmoid},
                               {"silu", vm::Silu, sc::Silu},
                               {"gelu", vm::Gelu, sc::Gelu},
                               {"exp(x - 0.75)", ExpSubAny, ExpSubAnyRef},
                               {"exp(min(x, 0) - max)", ExpSubMax<0>, ExpSubMaxRef<0>},
                               {"exp(min(x, 100) - max)", ExpSubMax<100>, ExpSubMaxRef<100>}};

struct Mismatch {
  uint64_t count = 0;
  uint32_t first = 0;
  uint32_t want = 0, got = 0;
};

// Bit patterns begin, begin + stride, ... below end, in blocks run through the array form.
Mismatch Check(const Function& fn, uint64_t begin, uint64_t end, uint64_t stride) {
  constexpr int kBlock = 4096 + 7;  // not a multiple of the vector width: tails run too
  std::vector<float> in(kBlock), out(kBlock);
  Mismatch m;
  for (uint64_t u = begin; u < end;) {
    int n = 0;
    for (; n < kBlock && u < end; ++n, u += stride) {
      const uint32_t bits = static_cast<uint32_t>(u);
      std::memcpy(&in[n], &bits, 4);
    }
    fn.vector(in.data(), out.data(), n);
    for (int k = 0; k < n; ++k) {
      const uint32_t want = ptox::scalar::FloatBits(fn.scalar(in[k]));
      const uint32_t got = ptox::scalar::FloatBits(out[k]);
      if (want != got && m.count++ == 0) {
        m.first = ptox::scalar::FloatBits(in[k]);
        m.want = want;
        m.got = got;
      }
    }
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t stride = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--stride=", 0) == 0 && std::strtoull(a.c_str() + 9, nullptr, 10) > 0) {
      stride = std::strtoull(a.c_str() + 9, nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--stride=N]\n", argv[0]);
      return 2;
    }
  }
  if (!HostHasIsa()) {
    std::printf("skipped: this CPU lacks the ISA this check is built for\n");
    return 77;
  }
#ifndef PTOX_VMATH
  std::printf("note: no vector target in this build; checking the scalar fallback\n");
#endif
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t total = uint64_t{1} << 32, count = (total + stride - 1) / stride;
  uint64_t bad = 0;
  for (const Function& fn : kFunctions) {
    std::vector<Mismatch> results(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const uint64_t lo = count * t / threads * stride, hi = count * (t + 1) / threads * stride;
        results[t] = Check(fn, lo, std::min(hi, total), stride);
      });
    }
    for (std::thread& th : pool) th.join();
    uint64_t differ = 0;
    for (const Mismatch& m : results) {
      if (m.count && !differ)
        std::printf("%s(0x%08x): scalar 0x%08x, vector 0x%08x\n", fn.name, m.first, m.want,
                    m.got);
      differ += m.count;
    }
    std::printf("%s: %llu inputs, %llu differ from kernels/scalar.h\n", fn.name,
                static_cast<unsigned long long>(count), static_cast<unsigned long long>(differ));
    bad += differ;
  }
  return bad ? 1 : 0;
}
