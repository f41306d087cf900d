// Shared by the benchmarks: a steady clock, elapsed seconds, and median / min / max of samples.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace ptox::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Median, min and max of a sample (seconds or any unit).
struct Stats {
  double median = 0, min = 0, max = 0;
};
inline Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

}  // namespace ptox::bench
