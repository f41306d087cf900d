// `ptox run FILE [--target T] [--function F] [--inputs a.npy,...] [--seed N] [--dims N=100,...]
// [--scalars x=1.5,...] [--outputs DIR] [--check] [--no-fuse]`: run a program on .npy or seeded
// random inputs and print one summary line per output (stdout), then `OK`.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "commands.h"
#include "ptox/dist.h"
#include "ptox/ptox.h"
#include "tools/ptox/npy.h"
#include "tools/ptox/run_args.h"
#include "tools/ptox/run_data.h"

namespace ptox::cli {
namespace {

// In a distributed run each rank writes its own file: "trace.json" is "trace.rank1.json" on
// rank 1 (docs/distributed.md).
std::string RankPath(const std::string& path) {
  const RankInfo me = ThisRank();
  if (me.world_size == 1) return path;
  const size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = path.size();
  return path.substr(0, dot) + ".rank" + std::to_string(me.rank) + path.substr(dot);
}

namespace fs = std::filesystem;

struct RunArgs {
  std::string file;
  std::string target = "interp";
  InputOptions in;  // --function, --seed, --inputs, --dims, --scalars
  std::string outputs_dir;
  bool check = false;
  int threads = 0;
  std::string trace_path;
  bool profile = false;
  bool check_nan = false;
  bool no_fuse = false;
};

Status Invalid(const std::string& message) { return Status(StatusCode::kInvalid, message); }

// Runs again on the interpreter from the same inputs and compares every output; prints one line
// per output. `inputs` holds every array as it was before the first run (outputs 0xFF-filled).
Status CheckAgainstInterp(const Program& prog, const RunArgs& args,
                          const std::vector<ParamInfo>& params, const Arrays& results,
                          Arrays inputs, const std::map<std::string, std::string>& scalars) {
  Result<std::vector<Arg>> ref_args = BuildArgs(params, inputs, scalars);
  if (!ref_args.ok()) return ref_args.status();
  Status s = Run(prog, *ref_args, {.target = "interp", .function = args.in.function});
  if (!s.ok()) return Status(s.code(), "interp reference run: " + s.message());
  // Exact ops must match bit for bit; reordered sums (row_sum, matmul) within their bound.
  Result<double> bound = ReorderBound(prog, args.in.function, *ref_args);
  if (!bound.ok()) return bound.status();
  int failures = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!IsOutput(params[i])) continue;
    DiffStats d = Compare(*results[i], *inputs[i], *bound);
    bool ok = d.nan_mismatch == 0 && d.out_of_bound == 0;
    std::string line = fmt::format("%{}: max |diff| = {:.7g} vs interp", params[i].name, d.max_abs);
    if (d.nan_mismatch > 0) line += fmt::format(" ({} NaN mismatches)", d.nan_mismatch);
    if (d.differing_bits > 0) line += fmt::format(" ({} elements differ)", d.differing_bits);
    std::printf("%s\n", line.c_str());
    failures += ok ? 0 : 1;
  }
  if (failures > 0)
    return Status(StatusCode::kRuntime,
                  fmt::format("runtime error: --check: {} output(s) of target '{}' differ from "
                              "the interpreter",
                              failures, args.target));
  return Status::Ok();
}

// Where one output goes: written to `tmp` (a hidden name in the same folder), renamed to `path`.
struct PendingOutput {
  std::string tmp, path;
};

// Checks every output's destination before anything is written: not an --inputs file, not a
// folder.
Result<std::vector<PendingOutput>> PlanOutputs(const RunArgs& args,
                                               const std::vector<ParamInfo>& params) {
  std::vector<PendingOutput> plan;
  std::error_code ec;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!IsOutput(params[i])) continue;
    const std::string file = params[i].name + ".npy";
    PendingOutput p{
        (fs::path(args.outputs_dir) / fmt::format(".{}.tmp.{}", file, getpid())).string(),
        (fs::path(args.outputs_dir) / file).string()};
    for (const std::string& in : args.in.inputs) {
      if (fs::equivalent(p.path, in, ec))
        return Invalid(
            fmt::format("error: --outputs: writing {} would overwrite input '{}'", p.path, in));
    }
    if (fs::is_directory(fs::symlink_status(p.path, ec)))
      return Invalid(fmt::format("error: --outputs: {} is a directory", p.path));
    plan.push_back(std::move(p));
  }
  return plan;
}

// Writes DIR/<name>.npy per output, all or nothing: each goes to a temporary name first and all
// are renamed into place only once every one was written, so a full disk or an unwritable file
// leaves no output of this run (and no partial file) behind.
Status WriteOutputs(const RunArgs& args, const std::vector<ParamInfo>& params,
                    const Arrays& arrays) {
  std::error_code ec;
  const bool created = fs::create_directories(args.outputs_dir, ec);
  if (ec)
    return Invalid(
        fmt::format("error: --outputs: cannot create '{}': {}", args.outputs_dir, ec.message()));
  Result<std::vector<PendingOutput>> plan = PlanOutputs(args, params);
  size_t written = 0;
  auto undo = [&](const Status& why, size_t renamed) {
    for (size_t k = 0; k < written; ++k)
      std::remove((k < renamed ? (*plan)[k].path : (*plan)[k].tmp).c_str());
    if (created) fs::remove(args.outputs_dir, ec);  // only when empty
    return Status(why.code(), why.message() + " (no output was written)");
  };
  if (!plan.ok()) return undo(plan.status(), 0);
  for (size_t i = 0, k = 0; i < params.size(); ++i) {
    if (!IsOutput(params[i])) continue;
    Status s = WriteNpy((*plan)[k++].tmp, *arrays[i]);
    if (!s.ok()) return undo(s, 0);
    ++written;
  }
  for (size_t k = 0; k < plan->size(); ++k) {
    fs::rename((*plan)[k].tmp, (*plan)[k].path, ec);
    if (ec)
      return undo(Status(StatusCode::kRuntime,
                         fmt::format("runtime error: --outputs: cannot rename {} to {}: {}",
                                     (*plan)[k].tmp, (*plan)[k].path, ec.message())),
                  k);
  }
  return Status::Ok();
}

int RunCommand(RunArgs args) {
  if (!args.in.function.empty() && args.in.function[0] == '@') args.in.function.erase(0, 1);
  Result<Program> prog = Program::FromFile(args.file);
  if (!prog.ok()) return Fail(prog.status());
  // A target this host cannot run fails before inputs are prepared.
  if (Status t = CheckTarget(*prog, args.target); !t.ok()) return Fail(t);
  Result<PreparedRun> prepared = PrepareRun(*prog, args.in);
  if (!prepared.ok()) return Fail(prepared.status());
  const std::vector<ParamInfo>& params = prepared->params;
  Arrays& arrays = prepared->arrays;
  Arrays before;
  if (args.check) before = arrays;  // inout arrays are updated in place by the run
  std::vector<TaskTrace> trace;
  bool tracing = !args.trace_path.empty() || args.profile;
  Status s = Run(*prog, prepared->args,
                 {.target = args.target,
                  .function = args.in.function,
                  .num_threads = args.threads,
                  .check_nan = args.check_nan,
                  .trace = tracing ? &trace : nullptr,
                  .fuse = !args.no_fuse,
                  .constants = args.in.constants});
  if (!s.ok()) return Fail(s);
  if (!args.trace_path.empty()) {
    if (Status t = WriteWholeFile(RankPath(args.trace_path), {ChromeTraceJson(trace)}); !t.ok())
      return Fail(t);
  }
  // The profile is a diagnostic: stderr, so stdout stays the summary lines.
  if (args.profile) std::fputs(ProfileTable(trace).c_str(), stderr);
  // In a distributed run (mpirun) rank 0 reports and writes the outputs; every rank checks (the
  // interpreter's reference run has the same collectives; docs/distributed.md).
  const bool report = ThisRank().rank == 0;
  for (size_t i = 0; i < params.size() && report; ++i)
    if (IsOutput(params[i])) std::printf("%s\n", SummaryLine(params[i].name, *arrays[i]).c_str());
  if (report && !args.outputs_dir.empty()) {
    s = WriteOutputs(args, params, arrays);
    if (!s.ok()) return Fail(s);
  }
  if (args.check) {
    s = CheckAgainstInterp(*prog, args, params, arrays, std::move(before), prepared->scalars);
    if (!s.ok()) return Fail(s);
  }
  if (report) std::printf("OK\n");
  return 0;
}

}  // namespace

Handler RegisterRun(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a program on .npy or seeded random inputs; print a summary of each output");
  sub->add_option("file", args->file, "a .pto file")->required();
  sub->add_option("--target", args->target, "where to run (see `ptox doctor`)")
      ->capture_default_str();
  AddInputOptions(*sub, args->in);
  sub->add_option("--outputs", args->outputs_dir, "write each output as DIR/<name>.npy");
  sub->add_flag("--check", args->check, "also run on the interpreter and compare the outputs");
  sub->add_option("--threads", args->threads,
                  "worker threads for compiled targets (default: PTOX_NUM_THREADS or one per core)")
      ->check(CLI::Range(0, kMaxThreads));
  sub->add_option("--trace", args->trace_path,
                  "write a Chrome / Perfetto trace of the tasks (compiled targets) to FILE "
                  "(under mpirun one per rank: t.json is t.rank1.json on rank 1)");
  sub->add_flag("--profile", args->profile,
                "print per-kernel calls, time, GB/s and GFLOP/s to stderr (compiled targets)");
  sub->add_flag("--check-nan", args->check_nan,
                "fail the run when it writes a NaN to an output (interp: checked after the run)");
  sub->add_flag("--no-fuse", args->no_fuse,
                "compiled targets: one kernel per tensor op (skip fuse-elementwise)");
  return [args] { return RunCommand(*args); };
}

}  // namespace ptox::cli
