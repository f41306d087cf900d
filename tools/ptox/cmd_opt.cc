// `ptox opt FILE [--passes=a,b | --pipeline [--no-fuse]] [--target=T] [--caps=l2=N,...]
// [--print-ir-after=PASS,... | --print-ir-after-all] [--time-passes] [--dump-dir=DIR]
// [--list-passes]`: parse, verify, transform, and print the IR to stdout. Per-pass dumps and the
// timing table go to stderr; --dump-dir writes every stage (and the generated source) to files.
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "commands.h"
#include "ptox/ptox.h"

namespace ptox::cli {

namespace {

Status Invalid(const std::string& message) { return Status(StatusCode::kInvalid, message); }

// "123", "32K", "1M", "4G" (binary multiples) -> bytes; nullopt when malformed or not positive.
std::optional<int64_t> ParseBytes(std::string_view text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p == text.data() || v <= 0) return std::nullopt;
  int shift = 0;
  if (p != end) {
    const std::string_view units = "KMG";
    const size_t u = units.find(static_cast<char>(std::toupper(*p)));
    if (u == std::string_view::npos || p + 1 != end) return std::nullopt;
    shift = 10 * static_cast<int>(u + 1);
  }
  if (v > (std::numeric_limits<int64_t>::max() >> shift)) return std::nullopt;
  return v << shift;
}

}  // namespace

Result<TargetCaps> ParseCaps(const std::string& spec) {
  using Field = std::optional<int64_t> TargetCaps::*;
  static const std::vector<std::pair<std::string, Field>> kFields = {
      {"l2", &TargetCaps::l2_bytes},
      {"onchip", &TargetCaps::onchip_bytes}};
  TargetCaps caps;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    Field field = nullptr;
    std::string known;
    for (const auto& [name, f] : kFields) {
      known += (known.empty() ? "" : ", ") + name;
      if (name == key) field = f;
    }
    if (eq == std::string::npos || field == nullptr)
      return Invalid("error: --caps: expected NAME=BYTES with NAME one of " + known + ", got '" +
                     item + "'");
    std::optional<int64_t> bytes = ParseBytes(std::string_view(item).substr(eq + 1));
    if (!bytes)
      return Invalid("error: --caps: " + key + " must be a positive byte count (e.g. 32768 or " +
                     "32K), got '" + item.substr(eq + 1) + "'");
    caps.*field = *bytes;
  }
  return caps;
}

namespace {

struct OptArgs {
  std::string file;
  std::vector<std::string> passes;
  bool pipeline = false;
  bool no_fuse = false;
  std::string target = "cpu";
  std::string caps;
  bool print_after_all = false;
  std::vector<std::string> print_after;
  bool time_passes = false;
  std::string dump_dir;
  bool list = false;
};

// Writes the stages of a transformation as DIR/NN-<stage>.<ext>, numbered in order.
class Dumper {
 public:
  explicit Dumper(std::string dir) : dir_(std::move(dir)) {}

  Status Open() {
    std::error_code ec, is_dir_ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec || !std::filesystem::is_directory(dir_, is_dir_ec))
      return Invalid("error: --dump-dir: cannot create directory " + dir_ + ": " +
                     (ec ? ec.message() : "a file of that name exists"));
    return Status::Ok();
  }

  // Writes one stage; the first failure is kept in status() and later stages are skipped.
  void Write(const std::string& stage, const std::string& text) {
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%02d-", next_++);
    const std::string path = (std::filesystem::path(dir_) / (prefix + stage)).string();
    if (!status_.ok()) return;
    FILE* f = std::fopen(path.c_str(), "wb");
    const bool ok = f != nullptr && std::fputs(text.c_str(), f) >= 0;
    if ((f != nullptr && std::fclose(f) != 0) || !ok)
      status_ = Invalid("error: --dump-dir: cannot write " + path);
  }

  const Status& status() const { return status_; }

 private:
  std::string dir_;
  int next_ = 0;
  Status status_ = Status::Ok();
};

// An unknown name in `names` is an error listing the known passes.
Status CheckPassNames(const std::vector<std::string>& names, const char* flag) {
  std::set<std::string> known_set;
  std::string known;
  for (const auto& [name, summary] : ListPasses()) {
    known_set.insert(name);
    known += (known.empty() ? "" : ", ") + name;
  }
  for (const std::string& n : names)
    if (!known_set.count(n))
      return Invalid(std::string("error: ") + flag + ": unknown pass '" + n + "' (known: " + known +
                     ")");
  return Status::Ok();
}

// The --time-passes table on stderr: pass, milliseconds, share of the total.
void PrintTimings(const std::vector<std::pair<std::string, double>>& timings) {
  double total = 0;
  for (const auto& [pass, ms] : timings) total += ms;
  auto row = [&](const std::string& name, double ms) {
    std::fprintf(stderr, "%-24s %10.3f %6.1f%%\n", name.c_str(), ms,
                 total > 0 ? 100.0 * ms / total : 0.0);
  };
  std::fprintf(stderr, "// ----- pass timings -----\n%-24s %10s %7s\n", "pass", "ms", "%");
  for (const auto& [pass, ms] : timings) row(pass, ms);
  row("total", total);
}

// The generated source of every function of the transformed program, as the last stages.
void DumpSources(Dumper& dumper, const Program& prog, const OptArgs& args, const TargetCaps& caps,
                 Status* status) {
  const std::vector<std::string> funcs = prog.FunctionNames();
  for (const std::string& fn : funcs) {
    CompileOptions copts{args.target, fn, Emit::kSource, !args.no_fuse, caps};
    Result<std::string> src = Compile(prog, copts);
    if (!src.ok()) {
      *status = src.status();
      return;
    }
    dumper.Write(funcs.size() == 1 ? "source.cc" : "source-" + fn + ".cc", *src);
  }
}

// TransformOptions from the flags: passes, target, capabilities and the per-pass callbacks.
Status MakeOptions(const OptArgs& args, TransformOptions& opts) {
  opts.passes = args.pipeline ? DefaultPipeline(!args.no_fuse) : args.passes;
  opts.target = args.target;
  if (!args.caps.empty()) {
    Result<TargetCaps> caps = ParseCaps(args.caps);
    if (!caps.ok()) return caps.status();
    opts.caps = *caps;
  }
  return CheckPassNames(args.print_after, "--print-ir-after");
}

int RunOpt(const OptArgs& args) {
  if (args.list) {
    for (const auto& [name, summary] : ListPasses())
      std::printf("%-22s %s\n", name.c_str(), summary.c_str());
    return 0;
  }
  if (args.file.empty()) return Fail(Invalid("error: no input file"));
  TransformOptions opts;
  if (Status s = MakeOptions(args, opts); !s.ok()) return Fail(s);
  Result<Program> prog = Program::FromFile(args.file);
  if (!prog.ok()) return Fail(prog.status());
  Dumper dumper(args.dump_dir);
  if (!args.dump_dir.empty()) {
    if (Status s = dumper.Open(); !s.ok()) return Fail(s);
    dumper.Write("input.pto", prog->ToText());
    if (!dumper.status().ok()) return Fail(dumper.status());
  }
  const std::set<std::string> print_after(args.print_after.begin(), args.print_after.end());
  opts.after_pass = [&](std::string_view pass, const std::string& ir) {
    if (args.print_after_all || print_after.count(std::string(pass)))
      std::fprintf(stderr, "// ----- IR after %.*s -----\n%s", static_cast<int>(pass.size()),
                   pass.data(), ir.c_str());
    if (!args.dump_dir.empty()) dumper.Write(std::string(pass) + ".pto", ir);
  };
  std::vector<std::pair<std::string, double>> timings;
  if (args.time_passes) opts.timings = &timings;
  Result<Program> out = Transform(*prog, opts);
  if (args.time_passes) PrintTimings(timings);
  if (!dumper.status().ok()) return Fail(dumper.status());
  if (!out.ok()) return Fail(out.status());
  if (!args.dump_dir.empty() && args.target != "interp") {
    Status s = Status::Ok();
    DumpSources(dumper, *out, args, opts.caps, &s);
    if (!s.ok()) return Fail(s);
    if (!dumper.status().ok()) return Fail(dumper.status());
  }
  std::fputs(out->ToText().c_str(), stdout);
  return 0;
}

}  // namespace

Handler RegisterOpt(CLI::App& app) {
  auto args = std::make_shared<OptArgs>();
  CLI::App* sub = app.add_subcommand("opt", "Parse, verify and transform a program; print the IR");
  sub->add_option("file", args->file, "a .pto file");
  sub->add_option("--passes", args->passes, "comma-separated passes to run, in order")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_flag("--pipeline", args->pipeline, "run the default pipeline");
  sub->add_flag("--no-fuse", args->no_fuse, "--pipeline without fuse-elementwise");
  sub->add_option("--target", args->target,
                  "whose capabilities the passes read: cpu (default), cpu-avx2, ..., interp");
  sub->add_option("--caps", args->caps,
                  "override capabilities in bytes: l2=1M,onchip=4M (any subset)");
  sub->add_option("--print-ir-after", args->print_after,
                  "print the IR to stderr after these passes (repeatable, comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_flag("--print-ir-after-all", args->print_after_all,
                "print the IR to stderr after every pass");
  sub->add_flag("--time-passes", args->time_passes, "print a table of pass times to stderr");
  sub->add_option("--dump-dir", args->dump_dir,
                  "write every stage to DIR: 00-input.pto, 01-<pass>.pto, ..., NN-source.cc");
  sub->add_flag("--list-passes", args->list, "list the passes and exit");
  return [args] { return RunOpt(*args); };
}

}  // namespace ptox::cli
