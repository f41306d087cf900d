// PTOX_FAULT parsing and the per-site occurrence counters (see include/ptox/fault.h).
#include "ptox/fault.h"

#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include "support/warn.h"

namespace ptox::fault {
namespace {

constexpr int kSites = 3;
constexpr std::string_view kNames[kSites] = {"thread", "write", "compile"};

// One site's rule: occurrence `first` fails, and every later one too when `onwards`.
struct Rule {
  int64_t first = 0;  // 0: never
  bool onwards = false;
};

struct State {
  std::mutex mu;  // guards rules (read on the slow path only) and re-parsing
  Rule rules[kSites];
  std::atomic<bool> any{false};  // some rule is set: the fast path's only load
  std::atomic<int64_t> count[kSites] = {};
};

State& GetState() {
  static State s;
  return s;
}

// Parses "site:N[+],..." into `rules`; false (rules untouched) when malformed.
bool Parse(std::string_view spec, Rule (&rules)[kSites]) {
  Rule out[kSites];
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view name = item.substr(0, colon), n = item.substr(colon + 1);
    int site = 0;
    while (site < kSites && kNames[site] != name) ++site;
    if (site == kSites) return false;
    Rule r;
    if (!n.empty() && n.back() == '+') r.onwards = true, n.remove_suffix(1);
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), r.first);
    if (ec != std::errc() || end != n.data() + n.size() || r.first < 1) return false;
    out[site] = r;
  }
  for (int i = 0; i < kSites; ++i) rules[i] = out[i];
  return true;
}

void Load(State& s) {
  std::lock_guard<std::mutex> lock(s.mu);
  for (int i = 0; i < kSites; ++i) s.rules[i] = Rule{}, s.count[i].store(0);
  const char* env = std::getenv("PTOX_FAULT");
  if (env != nullptr && *env != '\0' && !Parse(env, s.rules)) {
    Warn(std::string("ignoring PTOX_FAULT='") + env +
         "' (expected site:N or site:N+ items; sites: thread, write, compile)");
  }
  bool any = false;
  for (const Rule& r : s.rules) any = any || r.first > 0;
  s.any.store(any);
}

State& Loaded() {
  static State& s = []() -> State& {
    State& st = GetState();
    Load(st);
    return st;
  }();
  return s;
}

}  // namespace

bool ShouldFail(Site site) {
  State& s = Loaded();
  if (!s.any.load(std::memory_order_relaxed)) return false;
  const int i = static_cast<int>(site);
  const int64_t n = s.count[i].fetch_add(1) + 1;
  std::lock_guard<std::mutex> lock(s.mu);
  const Rule& r = s.rules[i];
  return r.first > 0 && (n == r.first || (r.onwards && n > r.first));
}

void Reset() { Load(Loaded()); }

}  // namespace ptox::fault
