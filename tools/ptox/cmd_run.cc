// `ptox run FILE [--target T] [--function F] [--inputs a.npy,...] [--seed N] [--dims N=100,...]
// [--scalars x=1.5,...] [--outputs DIR] [--check] [--no-fuse]`: run a program on .npy or seeded
// random inputs and print one summary line per output (stdout), then `OK`.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "commands.h"
#include "ptox/ptox.h"
#include "tools/ptox/npy.h"
#include "tools/ptox/run_data.h"

namespace ptox::cli {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  std::string file;
  std::string target = "interp";
  std::string function;
  uint64_t seed = 0;
  std::vector<std::string> inputs;
  std::string outputs_dir;
  std::vector<std::string> dims;
  std::vector<std::string> scalars;
  bool check = false;
  int threads = 0;
  std::string trace_path;
  bool profile = false;
  bool check_nan = false;
  bool no_fuse = false;
};

using Symbols = std::map<std::string, int64_t>;
// One slot per parameter: an array for tensor parameters, empty for scalars.
using Arrays = std::vector<std::optional<NpyArray>>;

Status Invalid(const std::string& message) { return Status(StatusCode::kInvalid, message); }

bool IsInput(const ParamInfo& p) { return p.is_tensor && p.dir != ParamDirection::kOut; }
bool IsOutput(const ParamInfo& p) { return p.is_tensor && p.dir != ParamDirection::kIn; }

// "tensor<{N}x128xf32>" for messages, as the printer writes it.
std::string TypeText(const ParamInfo& p) {
  std::string s = p.is_tensor ? "tensor<" : "";
  for (const ParamInfo::Dim& d : p.dims)
    s += (d.sym.empty() ? std::to_string(d.size) : "{" + d.sym + "}") + "x";
  s += DTypeName(p.dtype);
  return p.is_tensor ? s + ">" : s;
}

std::string ShapeText(const std::vector<int64_t>& shape, DType dtype) {
  return Tensor::Contiguous(nullptr, dtype, shape).ShapeString();
}

// Splits "NAME=VALUE" items; `flag` names the option in messages.
Result<std::map<std::string, std::string>> ParseAssignments(const std::vector<std::string>& items,
                                                            const std::string& flag) {
  std::map<std::string, std::string> out;
  for (const std::string& item : items) {
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    if (!name.empty() && name[0] == '%') name.erase(0, 1);
    if (eq == std::string::npos || name.empty() || eq + 1 == item.size())
      return Invalid(fmt::format("error: {}: expected NAME=VALUE, got '{}'", flag, item));
    if (!out.emplace(name, item.substr(eq + 1)).second)
      return Invalid(fmt::format("error: {}: '{}' is given twice", flag, name));
  }
  return out;
}

std::optional<int64_t> ParseInt(const std::string& text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// --dims: every symbol must be used by some tensor parameter (catches typos).
Result<Symbols> ParseDims(const std::vector<std::string>& items,
                          const std::vector<ParamInfo>& params) {
  Result<std::map<std::string, std::string>> kv = ParseAssignments(items, "--dims");
  if (!kv.ok()) return kv.status();
  Symbols syms;
  for (const auto& [name, text] : *kv) {
    std::optional<int64_t> n = ParseInt(text);
    if (!n || *n < 0)
      return Invalid(
          fmt::format("error: --dims: size of {} must be a non-negative integer, "
                      "got '{}'",
                      name, text));
    bool used = std::any_of(params.begin(), params.end(), [&](const ParamInfo& p) {
      return std::any_of(p.dims.begin(), p.dims.end(),
                         [&](const ParamInfo::Dim& d) { return d.sym == name; });
    });
    if (!used) return Invalid(fmt::format("error: --dims: no parameter uses symbol {}", name));
    syms[name] = *n;
  }
  return syms;
}

// Checks an input file's shape against its parameter and binds the parameter's symbols.
Status BindInput(const ParamInfo& p, const NpyArray& a, const std::string& path, Symbols& syms,
                 std::map<std::string, std::string>& bound_by) {
  if (a.dtype() != p.dtype)
    return Invalid(fmt::format("error: {}: dtype {} ('{}') does not match %{}: {}", path,
                               DTypeName(a.dtype()), DescrFor(a.dtype()), p.name, TypeText(p)));
  std::string shape = ShapeText(a.shape(), a.dtype());
  if (a.shape().size() != p.dims.size())
    return Invalid(fmt::format("error: {}: shape {} has rank {}, but %{}: {} has rank {}", path,
                               shape, a.shape().size(), p.name, TypeText(p), p.dims.size()));
  for (size_t d = 0; d < p.dims.size(); ++d) {
    int64_t n = a.shape()[d];
    const ParamInfo::Dim& dim = p.dims[d];
    if (dim.sym.empty()) {
      if (n != dim.size)
        return Invalid(fmt::format("error: {}: shape {} does not match %{}: {}", path, shape,
                                   p.name, TypeText(p)));
      continue;
    }
    auto [it, fresh] = syms.emplace(dim.sym, n);
    if (fresh) bound_by[dim.sym] = path;
    if (it->second != n)
      return Invalid(fmt::format("error: {}: shape {} binds symbol {} = {}, but {} set it to {}",
                                 path, shape, dim.sym, n, bound_by[dim.sym], it->second));
  }
  return Status::Ok();
}

// Reads --inputs, one file per in / inout tensor parameter, in parameter order.
Status ReadInputs(const RunArgs& args, const std::vector<ParamInfo>& params, Symbols& syms,
                  Arrays& arrays) {
  size_t want = std::count_if(params.begin(), params.end(), IsInput);
  if (args.inputs.size() != want)
    return Invalid(
        fmt::format("error: --inputs: {} file(s) given, but the function has {} "
                    "in/inout tensor parameter(s)",
                    args.inputs.size(), want));
  std::map<std::string, std::string> bound_by;
  for (const auto& [sym, n] : syms) bound_by[sym] = fmt::format("--dims {}={}", sym, n);
  size_t next = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!IsInput(params[i])) continue;
    const std::string& path = args.inputs[next++];
    Result<NpyArray> a = ReadNpy(path, params[i].dtype);
    if (!a.ok()) return a.status();
    Status s = BindInput(params[i], *a, path, syms, bound_by);
    if (!s.ok()) return s;
    arrays[i] = std::move(a).value();
  }
  return Status::Ok();
}

Result<std::vector<int64_t>> ResolveShape(const ParamInfo& p, const Symbols& syms) {
  std::vector<int64_t> shape;
  for (const ParamInfo::Dim& d : p.dims) {
    if (d.sym.empty()) {
      shape.push_back(d.size);
      continue;
    }
    auto it = syms.find(d.sym);
    if (it == syms.end())
      return Invalid(
          fmt::format("error: symbol {0} has no size: pass --dims {0}=<size> or "
                      "--inputs",
                      d.sym));
    shape.push_back(it->second);
  }
  return shape;
}

// Allocates the arrays --inputs did not provide: random inputs (seeded), 0xFF-filled outputs
// (all-ones bytes are NaN for floats, so elements a program never writes stand out).
Status AllocateRest(const RunArgs& args, const std::vector<ParamInfo>& params, const Symbols& syms,
                    Arrays& arrays) {
  std::mt19937_64 rng(args.seed);
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    if (!p.is_tensor || arrays[i]) continue;
    Result<std::vector<int64_t>> shape = ResolveShape(p, syms);
    if (!shape.ok()) return shape.status();
    Result<NpyArray> a = NpyArray::Allocate(p.dtype, *shape);
    if (!a.ok()) return a.status();
    if (IsInput(p)) {
      FillRandom(*a, rng);
    } else {
      std::fill(a->data(), a->data() + a->nbytes(), static_cast<char>(0xFF));
    }
    arrays[i] = std::move(a).value();
  }
  return Status::Ok();
}

Result<Arg> ParseScalar(const ParamInfo& p, const std::string& text) {
  if (IsFloat(p.dtype)) {
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size())
      return Invalid(fmt::format("error: --scalars: %{} ({}) needs a number, got '{}'", p.name,
                                 DTypeName(p.dtype), text));
    return Arg(v);
  }
  if (p.dtype == DType::kBool && (text == "true" || text == "false"))
    return Arg(int64_t{text == "true"});
  std::optional<int64_t> v = ParseInt(text);
  if (!v || (p.dtype == DType::kBool && *v != 0 && *v != 1))
    return Invalid(fmt::format("error: --scalars: %{} ({}) needs an integer, got '{}'", p.name,
                               DTypeName(p.dtype), text));
  return Arg(*v);
}

// The argument list for ptox::Run: views of `arrays`, scalars from --scalars.
Result<std::vector<Arg>> BuildArgs(const std::vector<ParamInfo>& params, Arrays& arrays,
                                   const std::map<std::string, std::string>& scalars) {
  for (const auto& [name, value] : scalars) {
    bool known = std::any_of(params.begin(), params.end(),
                             [&](const ParamInfo& p) { return !p.is_tensor && p.name == name; });
    if (!known) return Invalid(fmt::format("error: --scalars: no scalar parameter %{}", name));
  }
  std::vector<Arg> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    if (p.is_tensor) {
      out.push_back(arrays[i]->view());
      continue;
    }
    auto it = scalars.find(p.name);
    if (it == scalars.end())
      return Invalid(
          fmt::format("error: scalar parameter %{}: {} has no value: pass --scalars "
                      "{}=<value>",
                      p.name, TypeText(p), p.name));
    Result<Arg> a = ParseScalar(p, it->second);
    if (!a.ok()) return a.status();
    out.push_back(*a);
  }
  return out;
}

// Runs again on the interpreter from the same inputs and compares every output; prints one line
// per output. `inputs` holds every array as it was before the first run (outputs 0xFF-filled).
Status CheckAgainstInterp(const Program& prog, const RunArgs& args,
                          const std::vector<ParamInfo>& params, const Arrays& results,
                          Arrays inputs, const std::map<std::string, std::string>& scalars) {
  Result<std::vector<Arg>> ref_args = BuildArgs(params, inputs, scalars);
  if (!ref_args.ok()) return ref_args.status();
  Status s = Run(prog, *ref_args, {.target = "interp", .function = args.function});
  if (!s.ok()) return Status(s.code(), "interp reference run: " + s.message());
  // Exact ops must match bit for bit; reordered sums (row_sum, matmul) within their bound.
  Result<double> bound = ReorderBound(prog, args.function, *ref_args);
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

// Writes DIR/<name>.npy per output, refusing to overwrite any --inputs file.
Status WriteOutputs(const RunArgs& args, const std::vector<ParamInfo>& params,
                    const Arrays& arrays) {
  std::error_code ec;
  fs::create_directories(args.outputs_dir, ec);
  if (ec)
    return Invalid(
        fmt::format("error: --outputs: cannot create '{}': {}", args.outputs_dir, ec.message()));
  for (size_t i = 0; i < params.size(); ++i) {
    if (!IsOutput(params[i])) continue;
    std::string path = (fs::path(args.outputs_dir) / (params[i].name + ".npy")).string();
    for (const std::string& in : args.inputs) {
      if (fs::equivalent(path, in, ec))
        return Invalid(
            fmt::format("error: --outputs: writing {} would overwrite input '{}'", path, in));
    }
    Status s = WriteNpy(path, *arrays[i]);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// Prepares every argument: inputs read or generated, outputs allocated, symbols resolved.
Status Prepare(const RunArgs& args, const std::vector<ParamInfo>& params, Arrays& arrays) {
  Result<Symbols> syms = ParseDims(args.dims, params);
  if (!syms.ok()) return syms.status();
  if (!args.inputs.empty()) {
    Status s = ReadInputs(args, params, *syms, arrays);
    if (!s.ok()) return s;
  }
  return AllocateRest(args, params, *syms, arrays);
}

int RunCommand(RunArgs args) {
  if (!args.function.empty() && args.function[0] == '@') args.function.erase(0, 1);
  Result<Program> prog = Program::FromFile(args.file);
  if (!prog.ok()) return Fail(prog.status());
  // A target this host cannot run fails before inputs are prepared, with the driver's reason
  // (an unknown name, or the ISA features the host lacks). "cpu" is resolved by Run().
  std::vector<std::string> targets = AvailableTargets();
  if (args.target != "cpu" &&
      std::find(targets.begin(), targets.end(), args.target) == targets.end()) {
    Result<std::string> probe = Compile(*prog, {.target = args.target, .emit = Emit::kIr});
    if (!probe.ok()) return Fail(probe.status());
  }
  Result<std::vector<ParamInfo>> params = prog->Params(args.function);
  if (!params.ok()) return Fail(params.status());
  Result<std::map<std::string, std::string>> scalars = ParseAssignments(args.scalars, "--scalars");
  if (!scalars.ok()) return Fail(scalars.status());
  Arrays arrays(params->size());
  Status s = Prepare(args, *params, arrays);
  if (!s.ok()) return Fail(s);
  Result<std::vector<Arg>> run_args = BuildArgs(*params, arrays, *scalars);
  if (!run_args.ok()) return Fail(run_args.status());
  Arrays before;
  if (args.check) before = arrays;  // inout arrays are updated in place by the run
  std::vector<TaskTrace> trace;
  bool tracing = !args.trace_path.empty() || args.profile;
  s = Run(*prog, *run_args,
          {.target = args.target, .function = args.function, .num_threads = args.threads,
           .check_nan = args.check_nan, .trace = tracing ? &trace : nullptr,
           .fuse = !args.no_fuse});
  if (!s.ok()) return Fail(s);
  if (!args.trace_path.empty()) {
    std::FILE* f = std::fopen(args.trace_path.c_str(), "wb");
    std::string json = ChromeTraceJson(trace);
    if (f == nullptr || std::fputs(json.c_str(), f) < 0 || std::fclose(f) != 0)
      return Fail(Invalid("error: cannot write the trace to '" + args.trace_path + "'"));
  }
  // The profile is a diagnostic: stderr, so stdout stays the summary lines.
  if (args.profile) std::fputs(ProfileTable(trace).c_str(), stderr);
  for (size_t i = 0; i < params->size(); ++i)
    if (IsOutput((*params)[i]))
      std::printf("%s\n", SummaryLine((*params)[i].name, *arrays[i]).c_str());
  if (!args.outputs_dir.empty()) {
    s = WriteOutputs(args, *params, arrays);
    if (!s.ok()) return Fail(s);
  }
  if (args.check) {
    s = CheckAgainstInterp(*prog, args, *params, arrays, std::move(before), *scalars);
    if (!s.ok()) return Fail(s);
  }
  std::printf("OK\n");
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
  sub->add_option("--function", args->function, "the entry function (default: the last one)");
  sub->add_option("--seed", args->seed,
                  "seed for random inputs: floats uniform in [-1, 1), ints in [-8, 8], bools 0/1")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--inputs", args->inputs,
                  "one .npy per in/inout tensor parameter, in order (bf16: '<u2' raw bits)")
      ->delimiter(',');
  sub->add_option("--outputs", args->outputs_dir, "write each output as DIR/<name>.npy");
  sub->add_option("--dims", args->dims, "sizes of symbolic dims, e.g. N=100,M=7")->delimiter(',');
  sub->add_option("--scalars", args->scalars, "values of scalar parameters, e.g. alpha=0.5,k=3")
      ->delimiter(',');
  sub->add_flag("--check", args->check, "also run on the interpreter and compare the outputs");
  sub->add_option("--threads", args->threads,
                  "worker threads for compiled targets (default: PTOX_NUM_THREADS or one per core)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--trace", args->trace_path,
                  "write a Chrome / Perfetto trace of the tasks (compiled targets) to FILE");
  sub->add_flag("--profile", args->profile,
                "print per-kernel calls, time, GB/s and GFLOP/s to stderr (compiled targets)");
  sub->add_flag("--check-nan", args->check_nan, "fail the task that writes a NaN to an output");
  sub->add_flag("--no-fuse", args->no_fuse,
                "compiled targets: one kernel per tensor op (skip fuse-elementwise)");
  return [args] { return RunCommand(*args); };
}

}  // namespace ptox::cli
