// Shared by the benchmarks: a steady clock, elapsed seconds, and median / min / max of samples.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "ptox/manifest.h"

namespace ptox::bench {

using Clock = std::chrono::steady_clock;

// The "manifest" member of a benchmark's hand-written JSON object: the build that was measured
// (ptox/manifest.h), so results name the commit, compiler, flags and kernel library.
inline std::string ManifestMember() {
  return "  \"manifest\": " + GetBuildManifest().ToJson() + ",\n";
}

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

// Runs `fn` once to warm up, then `reps` times (DESIGN.md: >= 10); the times in seconds.
inline Stats TimeIt(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    fn();
    t.push_back(Seconds(a, Clock::now()));
  }
  return Summarize(t);
}

}  // namespace ptox::bench
