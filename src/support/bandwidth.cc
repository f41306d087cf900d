// Memory bandwidth ceilings (include/ptox/bandwidth.h): the triad and a read-only sum, cloned for
// AVX-512 / AVX2 so the ceiling is not held back by the build's baseline ISA.
#include "ptox/bandwidth.h"
#include "support/vector_clones.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace ptox {
namespace {

__attribute__((noinline)) PTOX_VECTOR_CLONES void Triad(
    float* __restrict a, const float* __restrict b, const float* __restrict c, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
}

// Four streams at once per thread: one stream reads ~15 % slower on one thread here (the
// prefetchers keep more lines in flight for several); 64 lanes hide the add latency.
__attribute__((noinline)) PTOX_VECTOR_CLONES float ReadSum(
    const float* __restrict p, int64_t n) {
  constexpr int kStreams = 4;
  const int64_t part = n / kStreams / 16 * 16;
  float acc[kStreams][16] = {};
  for (int64_t i = 0; i < part; i += 16)
    for (int s = 0; s < kStreams; ++s)
      for (int j = 0; j < 16; ++j) acc[s][j] += p[s * part + i + j];
  float sum = 0;
  for (int64_t i = kStreams * part; i < n; ++i) sum += p[i];
  for (const auto& a : acc)
    for (float x : a) sum += x;
  return sum;
}

volatile float g_sink;  // where the sums go: the reads cannot be dropped

// fn(t) on threads 0..threads-1 at once (the caller runs thread 0; fewer when the host refuses
// a thread): `bytes` / seconds of `reps` timed runs after one warm-up.
Bandwidth Measure(int threads, int reps, double bytes, const std::function<void(int)>& fn) {
  std::vector<double> times;
  for (int rep = 0; rep <= std::max(reps, 1); ++rep) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    try {
      for (int t = 1; t < threads; ++t) pool.emplace_back(fn, t);
    } catch (const std::system_error&) {
    }
    fn(0);
    for (std::thread& t : pool) t.join();
    if (rep > 0)
      times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  const double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  return {bytes / median / 1e9, bytes / times.back() / 1e9, bytes / times.front() / 1e9};
}

}  // namespace

Bandwidth TriadGBs(int threads, int64_t bytes_per_array, int reps) {
  threads = std::max(threads, 1);
  const int64_t n = std::max<int64_t>(bytes_per_array / 4, threads);
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  return Measure(threads, reps, 12.0 * static_cast<double>(n), [&](int t) {
    const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
    Triad(a.data() + lo, b.data() + lo, c.data() + lo, hi - lo);
  });
}

Bandwidth ReadGBs(int threads, int64_t bytes, int reps) {
  threads = std::max(threads, 1);
  const int64_t n = std::max<int64_t>(bytes / 4, threads);
  std::vector<float> a(n, 1.0f);
  return Measure(threads, reps, 4.0 * static_cast<double>(n), [&](int t) {
    const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
    g_sink = ReadSum(a.data() + lo, hi - lo);
  });
}

}  // namespace ptox
