// The differential program fuzzer: generates random valid tensor- and tile-level programs, runs
// each on the interpreter and every CPU target, shrinks and saves what disagrees
// (tests/fuzz/README.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "differential.h"
#include "generator.h"
#include "ptox/ptox.h"
#include "shrink.h"

namespace ptox::fuzz {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  uint64_t seed = 1;
  int64_t programs = 0;  // 0: as many as --minutes allows
  double minutes = 0;
  std::vector<std::string> targets;  // default: every CPU target this host runs
  std::string level = "both";
  std::string out = "fuzz-findings";
  std::string replay;
  bool verbose = false;
  double timeout_s = 120;
  int shrink_checks = 150;
  double unfused = 0.5;        // share of tensor-level programs also run with fuse = false
  bool in_process = false;     // --replay without a child per check (to run it under a debugger)
  bool generate_only = false;  // verify the generated programs, run nothing
};

std::string Label(const Config& c) { return c.target + (c.fuse ? "" : " (unfused)"); }

std::string HashText(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08llx", static_cast<unsigned long long>(h & 0xFFFFFFFFull));
  return buf;
}

std::string JoinMap(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}
std::map<std::string, std::string> DimsText(const std::map<std::string, int64_t>& dims) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : dims) out[k] = std::to_string(v);
  return out;
}

// `text` as comment lines.
std::string Commented(const std::string& text) {
  std::string out, line;
  std::istringstream in(text);
  while (std::getline(in, line)) out += "//   " + line + "\n";
  return out;
}

std::set<std::string> OpSet(const Program& p) {
  std::vector<std::string> names = p.OpNames();
  return {names.begin(), names.end()};
}

// Whether a target may reorder a sum of `p` (ReorderBound > 0). Reordered sums of the edge
// catalogue's huge values overflow in some orders and not in others, which no bound covers:
// such programs get the reduction pattern instead, whose sums cannot overflow.
bool HasReorderedSums(const Program& p) {
  static const std::set<std::string> kSums = {
      "tensor.sum",    "tensor.softmax", "tensor.log_softmax", "tensor.rmsnorm", "tensor.layernorm",
      "tensor.matmul", "tile.row_sum",   "tile.col_sum",       "tile.matmul",    "tile.matmul_acc"};
  for (const std::string& op : p.OpNames())
    if (kSums.count(op)) return true;
  return false;
}

class Fuzzer {
 public:
  explicit Fuzzer(Options o) : o_(std::move(o)) {
    fs::create_directories(o_.out);
    stderr_path_ = (fs::path(o_.out) / ".child-stderr").string();
  }

  int Run();
  int Replay();

 private:
  void FuzzOne(uint64_t seed, Level level);
  void Handle(Finding f, uint64_t seed);
  bool Known(const Finding& f) const;
  std::string Save(const Finding& f, uint64_t seed, int original_ops, int checks, bool dead);
  void Invalid(const Case& c, const std::string& why);
  void PrintSummary() const;
  // Shrinking may run half a minute past --minutes, so that the last finding is small too.
  ShrinkLimits Limits() const {
    const auto end =
        deadline_ == Clock::time_point::max() ? deadline_ : deadline_ + std::chrono::seconds(30);
    return {o_.shrink_checks, end, o_.timeout_s, stderr_path_};
  }

  Options o_;
  std::string level_;  // of the program being checked
  std::string stderr_path_;
  Clock::time_point start_ = Clock::now(), deadline_ = Clock::time_point::max();
  // Failures found so far: errors by category and gist, wrong results by the ops of their
  // shrunk program.
  std::set<std::pair<Category, std::string>> known_errors_;
  std::vector<std::pair<Category, std::set<std::string>>> known_results_;
  int64_t programs_ = 0, tensor_programs_ = 0, invalid_ = 0, duplicates_ = 0;
  std::map<std::string, int64_t> runs_;
  std::map<std::string, double> run_seconds_;  // wall time of those runs
  double shrink_seconds_ = 0;
  int64_t shrink_checks_ = 0;
  std::map<Category, int64_t> failures_;
  std::vector<std::string> saved_;
};

void Fuzzer::Invalid(const Case& c, const std::string& why) {
  ++invalid_;
  const fs::path dir = fs::path(o_.out) / "invalid";
  fs::create_directories(dir);
  const std::string path = (dir / (HashText(c.text) + ".pto")).string();
  std::ofstream(path) << "// The generator made an invalid program (a fuzzer bug):\n"
                      << Commented(why) << c.text;
  std::printf("  generator bug: invalid program saved to %s: %s\n", path.c_str(),
              why.substr(0, why.find('\n')).c_str());
}

void Fuzzer::FuzzOne(uint64_t seed, Level level) {
  Program prog = Generate(level, seed);
  level_ = level == Level::kTensor ? "tensor" : "tile";
  Rng side(seed ^ 0x5DEECE66Dull);
  const Inputs kinds[] = {Inputs::kCli, Inputs::kEdge, Inputs::kReduce};
  Inputs inputs = kinds[side.Weighted({5, 3, 2})];
  if (inputs == Inputs::kEdge && HasReorderedSums(prog)) inputs = Inputs::kReduce;
  Case c = ToCase(prog, inputs, seed);
  ++programs_;
  tensor_programs_ += level == Level::kTensor ? 1 : 0;
  std::printf("[%lld] seed %llu, %s level, %d ops, %s inputs:", static_cast<long long>(programs_),
              static_cast<unsigned long long>(seed), level == Level::kTensor ? "tensor" : "tile",
              prog.CountOps(), std::string(InputsName(c.inputs)).c_str());
  if (o_.verbose) std::printf("\n%s", c.text.c_str());
  Result<ptox::Program> parsed = ptox::Program::Parse(c.text, "fuzz.pto");
  if (!parsed.ok()) {
    std::printf("\n");
    Invalid(c, parsed.status().message());
    return;
  }
  if (o_.generate_only) {
    std::printf(" verified\n");
    return;
  }
  std::vector<Config> configs;
  for (const std::string& t : o_.targets) configs.push_back({t, true});
  if (level == Level::kTensor && side.Chance(o_.unfused))
    configs.push_back({side.Pick(o_.targets), false});
  std::vector<Finding> failed;
  for (const Config& config : configs) {
    const auto t0 = Clock::now();
    Outcome o = Check(c, config, o_.timeout_s, stderr_path_);
    ++runs_[Label(config)];
    run_seconds_[Label(config)] += std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf(" %s", std::string(CategoryName(o.category)).c_str());
    std::fflush(stdout);
    if (o.category == Category::kInvalidProgram) {
      std::printf("\n");
      Invalid(c, o.detail);
      return;
    }
    if (o.category == Category::kOk) continue;
    ++failures_[o.category];
    failed.push_back({prog, c, config, o});
  }
  std::printf("\n");
  for (size_t i = 0; i < failed.size(); ++i) {
    bool repeat = false;  // the same failure on another target of this program
    for (size_t j = 0; j < i; ++j)
      repeat = repeat || SameFailure(failed[i].outcome, failed[j].outcome);
    if (!repeat) Handle(std::move(failed[i]), seed);
  }
}

bool Fuzzer::Known(const Finding& f) const {
  const Category cat = f.outcome.category;
  if (KeyedByMessage(cat)) return known_errors_.count({cat, Gist(f.outcome.detail)}) > 0;
  const std::set<std::string> ops = OpSet(f.program);
  for (const auto& [c, known] : known_results_)
    if (c == cat && std::includes(ops.begin(), ops.end(), known.begin(), known.end())) return true;
  return false;
}

// Shrinks a failure not seen before and saves its reproducer.
void Fuzzer::Handle(Finding f, uint64_t seed) {
  std::printf("  %s: %s\n", std::string(CategoryName(f.outcome.category)).c_str(),
              f.outcome.detail.substr(0, f.outcome.detail.find('\n')).c_str());
  if (Known(f)) {
    ++duplicates_;
    std::printf("  (a failure already saved: not shrunk again)\n");
    return;
  }
  const int before = f.program.CountOps();
  const auto t0 = Clock::now();
  const int checks = Shrink(f, Limits());
  shrink_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  shrink_checks_ += checks;
  const Category cat = f.outcome.category;
  if (KeyedByMessage(cat)) {
    known_errors_.insert({cat, Gist(f.outcome.detail)});
  } else {
    known_results_.push_back({cat, OpSet(f.program)});
  }
  // Whether the failure needs ops whose results nothing uses (a target may drop those, and
  // with them the run-time errors the interpreter reports).
  Program live = f.program;
  const bool dead =
      RemoveDeadCode(live) &&
      !SameFailure(Check(ToCase(live, f.c.inputs, f.c.seed), f.config, o_.timeout_s, stderr_path_),
                   f.outcome);
  const std::string path = Save(f, seed, before, checks, dead);
  saved_.push_back(path);
  std::printf("  shrunk from %d to %d ops in %d checks: %s\n", before, f.program.CountOps(), checks,
              path.c_str());
}

std::string Fuzzer::Save(const Finding& f, uint64_t seed, int original_ops, int checks, bool dead) {
  const std::string name = std::string(CategoryName(f.outcome.category)) + "-" + HashText(f.c.text);
  const fs::path file = fs::path(o_.out) / (name + ".pto");
  std::string inputs = "--seed " + std::to_string(f.c.seed);
  if (f.c.inputs != Inputs::kCli) {
    Result<ptox::Program> prog = ptox::Program::Parse(f.c.text, "fuzz.pto");
    std::vector<std::string> paths;
    if (prog.ok() && prog->Params().ok())
      paths = WriteInputs(f.c, *prog->Params(), (fs::path(o_.out) / (name + ".inputs")).string());
    inputs = "--inputs ";
    for (size_t i = 0; i < paths.size(); ++i)
      inputs += (i ? "," : "") + name + ".inputs/" + fs::path(paths[i]).filename().string();
  }
  const std::string dims = JoinMap(DimsText(f.c.dims)), scalars = JoinMap(f.c.scalars);
  std::ostringstream h;
  h << "// Found by the program fuzzer (tests/fuzz): " << CategoryName(f.outcome.category) << " on "
    << Label(f.config) << ".\n"
    << Commented(f.outcome.detail)
    << (dead ? "// It needs dead code: without the ops whose results nothing uses, it passes.\n"
             : "")
    << "// Reproduce from this file's directory (ptox: build/dev/ptox; program_fuzzer:\n"
    << "// build/dev/tests/fuzz/program_fuzzer, which also checks guards and inputs):\n"
    << "//   ptox run " << name << ".pto" << (dims.empty() ? "" : " --dims " + dims)
    << (scalars.empty() ? "" : " --scalars " + scalars) << " " << inputs
    << " --target=" << f.config.target << " --check" << (f.config.fuse ? "" : " --no-fuse") << "\n"
    << "//   program_fuzzer --replay=" << name << ".pto\n"
    << "// Shrunk from program_fuzzer --level=" << level_ << " --seed=" << seed << " --programs=1 ("
    << original_ops << " ops) to " << f.program.CountOps() << " ops in " << checks << " checks.\n"
    << "// ptox-fuzz: target=" << f.config.target << " fuse=" << (f.config.fuse ? 1 : 0)
    << " inputs=" << InputsName(f.c.inputs) << " seed=" << f.c.seed << " dims=" << dims
    << " scalars=" << scalars << "\n";
  std::ofstream(file) << f.program.Text(h.str());
  return file.string();
}

void Fuzzer::PrintSummary() const {
  const double minutes = std::chrono::duration<double>(Clock::now() - start_).count() / 60;
  std::printf(
      "\nprogram fuzzer: %lld programs (%lld tensor-level, %lld tile-level) in %.1f minutes",
      static_cast<long long>(programs_), static_cast<long long>(tensor_programs_),
      static_cast<long long>(programs_ - tensor_programs_), minutes);
  std::printf(", %lld invalid (generator bugs)\n", static_cast<long long>(invalid_));
  for (const auto& [label, n] : runs_)
    std::printf("  runs on %-22s %6lld, %.1f s each\n", label.c_str(), static_cast<long long>(n),
                run_seconds_.at(label) / static_cast<double>(n));
  std::printf("  shrinking: %lld checks in %.1f minutes\n", static_cast<long long>(shrink_checks_),
              shrink_seconds_ / 60);
  for (const auto& [cat, n] : failures_)
    std::printf("  failing runs: %-16s %lld\n", std::string(CategoryName(cat)).c_str(),
                static_cast<long long>(n));
  std::printf("  %zu new reproducers, %lld repeats of a saved failure\n", saved_.size(),
              static_cast<long long>(duplicates_));
  for (const std::string& p : saved_) std::printf("    %s\n", p.c_str());
}

int Fuzzer::Run() {
  if (o_.minutes > 0)
    deadline_ = start_ + std::chrono::milliseconds(static_cast<int64_t>(o_.minutes * 60000));
  if (o_.programs == 0 && o_.minutes <= 0) o_.programs = 20;
  for (int64_t i = 0; (o_.programs == 0 || i < o_.programs) && Clock::now() < deadline_; ++i) {
    const uint64_t seed = o_.seed + static_cast<uint64_t>(i);
    const Level level = o_.level == "tensor" ? Level::kTensor
                        : o_.level == "tile" ? Level::kTile
                        : seed % 2 == 0      ? Level::kTensor
                                             : Level::kTile;
    FuzzOne(seed, level);
  }
  PrintSummary();
  int64_t failing = 0;
  for (const auto& [cat, n] : failures_) failing += n;
  return failing + invalid_ > 0 ? 1 : 0;
}

// How a reproducer ran, from its `// ptox-fuzz:` line; false when it has none.
bool ParseMeta(const std::string& text, Case& c, Config& config) {
  const size_t at = text.find("// ptox-fuzz:");
  if (at == std::string::npos) return false;
  std::istringstream line(text.substr(at + 13, text.find('\n', at) - at - 13));
  std::string item;
  auto pairs = [](const std::string& list, auto&& put) {
    std::istringstream in(list);
    std::string kv;
    while (std::getline(in, kv, ','))
      if (kv.find('=') != std::string::npos)
        put(kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1));
  };
  while (line >> item) {
    const std::string key = item.substr(0, item.find('='));
    const std::string value =
        item.find('=') == std::string::npos ? "" : item.substr(item.find('=') + 1);
    if (key == "target") config.target = value;
    if (key == "fuse") config.fuse = value != "0";
    if (key == "inputs" && !ParseInputs(value, c.inputs)) return false;
    if (key == "seed") c.seed = std::stoull(value);
    if (key == "dims")
      pairs(value, [&](const std::string& k, const std::string& v) { c.dims[k] = std::stoll(v); });
    if (key == "scalars")
      pairs(value, [&](const std::string& k, const std::string& v) { c.scalars[k] = v; });
  }
  return true;
}

// Runs saved reproducers again; any that still fails fails the replay.
int Fuzzer::Replay() {
  std::vector<fs::path> files;
  if (fs::is_directory(o_.replay)) {
    for (const auto& e : fs::directory_iterator(o_.replay))
      if (e.path().extension() == ".pto") files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(o_.replay);
  }
  int failing = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    Case c;
    c.text = ss.str();
    Config meta{"", true};
    const bool has_meta = ParseMeta(c.text, c, meta);
    std::vector<std::string> targets = o_.targets;
    if (std::find(targets.begin(), targets.end(), meta.target) != targets.end())
      targets = {meta.target};
    std::printf("%s%s:", file.string().c_str(), has_meta ? "" : " (no ptox-fuzz line)");
    for (const std::string& t : targets) {
      const Config config{t, meta.fuse};
      Outcome o =
          o_.in_process ? CheckInProcess(c, config) : Check(c, config, o_.timeout_s, stderr_path_);
      std::printf(" %s %s", t.c_str(), std::string(CategoryName(o.category)).c_str());
      if (o.category == Category::kOk) continue;
      ++failing;
      std::printf("\n  %s\n", o.detail.substr(0, o.detail.find('\n')).c_str());
    }
    std::printf("\n");
  }
  std::printf("replayed %zu reproducers: %d failing runs\n", files.size(), failing);
  return failing > 0 ? 1 : 0;
}

}  // namespace
}  // namespace ptox::fuzz

int main(int argc, char** argv) {
  ptox::fuzz::Options o;
  CLI::App app{
      "Differential program fuzzer: random tensor- and tile-level programs on the "
      "interpreter and every CPU target"};
  app.add_option("--seed", o.seed, "program i is generated from seed + i")->capture_default_str();
  app.add_option("--programs", o.programs,
                 "how many programs (default: 20, or unbounded with --minutes)");
  app.add_option("--minutes", o.minutes, "stop starting programs after this long");
  app.add_option("--targets", o.targets, "compiled targets to compare (default: every CPU target)")
      ->delimiter(',');
  app.add_option("--level", o.level, "tensor, tile or both")
      ->check(CLI::IsMember({"tensor", "tile", "both"}))
      ->capture_default_str();
  app.add_option("--out", o.out, "where reproducers go")->capture_default_str();
  app.add_option("--replay", o.replay, "rerun the reproducers in FILE or DIR; fail if any fails");
  app.add_option("--timeout", o.timeout_s, "seconds per check before it counts as a hang")
      ->capture_default_str();
  app.add_option("--shrink-checks", o.shrink_checks, "most checks spent shrinking one failure")
      ->capture_default_str();
  app.add_option("--unfused", o.unfused, "share of tensor programs also run with fusion off")
      ->capture_default_str();
  app.add_flag("-v,--verbose", o.verbose, "print every program");
  app.add_flag("--generate-only", o.generate_only,
               "only generate and verify programs (tests the generators)");
  app.add_flag("--in-process", o.in_process,
               "--replay in this process, no child per check (to run it under a debugger)");
  CLI11_PARSE(app, argc, argv);
  // Every program compiles new kernels: without a cache directory of the caller's, a private
  // one that goes away at exit, so that ~/.cache/ptox does not fill up.
  std::string own_cache;
  if (std::getenv("PTOX_CACHE_DIR") == nullptr) {
    own_cache =
        (std::filesystem::temp_directory_path() / ("ptox-fuzz-cache-" + std::to_string(getpid())))
            .string();
    setenv("PTOX_CACHE_DIR", own_cache.c_str(), 1);
  }
  if (o.targets.empty())
    for (const std::string& t : ptox::AvailableTargets())
      if (t != "interp") o.targets.push_back(t);
  ptox::fuzz::Fuzzer fuzzer(o);
  const int rc = o.replay.empty() ? fuzzer.Run() : fuzzer.Replay();
  if (!own_cache.empty()) std::filesystem::remove_all(own_cache);
  return rc;
}
