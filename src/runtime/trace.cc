// Trace and profile formatting (nlohmann::json for the trace, fmt for the table).
#include "ptox/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace ptox {

std::string ChromeTraceJson(const std::vector<TaskTrace>& records) {
  nlohmann::json events = nlohmann::json::array();
  std::map<int, bool> workers;
  for (const TaskTrace& r : records) {
    workers[r.worker] = true;
    events.push_back({{"name", r.name},
                      {"cat", "task"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", r.worker},
                      {"ts", r.start_us},
                      {"dur", r.end_us - r.start_us},
                      {"args",
                       {{"task", r.id},
                        {"bytes_read", r.bytes_read},
                        {"bytes_written", r.bytes_written},
                        {"flops", r.flops}}}});
  }
  for (const auto& [w, unused] : workers) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", w},
                      {"args", {{"name", fmt::format("worker {}", w)}}}});
  }
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return trace.dump(1) + "\n";
}

std::string ProfileTable(const std::vector<TaskTrace>& records) {
  struct Row {
    int64_t calls = 0;
    double total_us = 0;
    double bytes = 0, flops = 0;
  };
  std::map<std::string, Row> rows;
  for (const TaskTrace& r : records) {
    Row& row = rows[r.name];
    ++row.calls;
    row.total_us += r.end_us - r.start_us;
    row.bytes += static_cast<double>(r.bytes_read + r.bytes_written);
    row.flops += static_cast<double>(r.flops);
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
  // Kernel names carry their source position ("f.incore0 (model.pto:12:5)"): the column is as
  // wide as the longest, so the numbers stay aligned.
  size_t width = 40;
  for (const auto& [name, r] : sorted) width = std::max(width, name.size());
  std::string out = fmt::format("{:<{}} {:>8} {:>12} {:>11} {:>9} {:>9}\n", "kernel", width,
                                "calls", "total ms", "mean us", "GB/s", "GFLOP/s");
  for (const auto& [name, r] : sorted) {
    double secs = r.total_us * 1e-6;
    out +=
        fmt::format("{:<{}} {:>8} {:>12.3f} {:>11.2f} {:>9.2f} {:>9.2f}\n", name, width, r.calls,
                    r.total_us / 1e3, r.total_us / static_cast<double>(r.calls),
                    secs > 0 ? r.bytes / secs / 1e9 : 0.0, secs > 0 ? r.flops / secs / 1e9 : 0.0);
  }
  return out;
}

}  // namespace ptox
