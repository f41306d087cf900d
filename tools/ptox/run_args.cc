// The shared run options (--function, --seed, --inputs, --dims, --scalars) and how they become
// ptox::Arg values: .npy inputs checked against their parameters, seeded random inputs, outputs.
#include "tools/ptox/run_args.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <random>
#include <system_error>
#include <utility>

#include "tools/ptox/run_data.h"

namespace ptox::cli {
namespace {

using Symbols = std::map<std::string, int64_t>;

Status Invalid(const std::string& message) { return Status(StatusCode::kInvalid, message); }

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
Status ReadInputs(const InputOptions& args, const std::vector<ParamInfo>& params, Symbols& syms,
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
Status AllocateRest(const InputOptions& args, const std::vector<ParamInfo>& params,
                    const Symbols& syms, Arrays& arrays) {
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

// Prepares every argument: inputs read or generated, outputs allocated, symbols resolved.
Status Prepare(const InputOptions& args, const std::vector<ParamInfo>& params, Arrays& arrays) {
  Result<Symbols> syms = ParseDims(args.dims, params);
  if (!syms.ok()) return syms.status();
  if (!args.inputs.empty()) {
    Status s = ReadInputs(args, params, *syms, arrays);
    if (!s.ok()) return s;
  }
  return AllocateRest(args, params, *syms, arrays);
}

}  // namespace

bool IsInput(const ParamInfo& p) { return p.is_tensor && p.dir != ParamDirection::kOut; }
bool IsOutput(const ParamInfo& p) { return p.is_tensor && p.dir != ParamDirection::kIn; }

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

void AddInputOptions(CLI::App& sub, InputOptions& opts) {
  sub.add_option("--function", opts.function, "the entry function (default: the last one)");
  sub.add_option("--seed", opts.seed,
                 "seed for random inputs: floats uniform in [-1, 1), ints in [-8, 8], bools 0/1")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--inputs", opts.inputs,
                 "one .npy per in/inout tensor parameter, in order (bf16: '<u2' raw bits)")
      ->delimiter(',');
  sub.add_option("--dims", opts.dims, "sizes of symbolic dims, e.g. N=100,M=7")->delimiter(',');
  sub.add_option("--scalars", opts.scalars, "values of scalar parameters, e.g. alpha=0.5,k=3")
      ->delimiter(',');
  sub.add_option("--const", opts.constants,
                 "tensor inputs whose packed matmul blocks are kept across runs, e.g. w1,w2")
      ->delimiter(',');
}

Status CheckTarget(const Program& prog, const std::string& target) {
  std::vector<std::string> targets = AvailableTargets();
  if (target == "cpu" || std::find(targets.begin(), targets.end(), target) != targets.end())
    return Status::Ok();
  Result<std::string> probe = Compile(prog, {.target = target, .emit = Emit::kIr});
  return probe.status();
}

Result<PreparedRun> PrepareRun(const Program& prog, const InputOptions& opts) {
  PreparedRun run;
  Result<std::vector<ParamInfo>> params = prog.Params(opts.function);
  if (!params.ok()) return params.status();
  run.params = std::move(params).value();
  Result<std::map<std::string, std::string>> scalars = ParseAssignments(opts.scalars, "--scalars");
  if (!scalars.ok()) return scalars.status();
  run.scalars = std::move(scalars).value();
  run.arrays.resize(run.params.size());
  Status s = Prepare(opts, run.params, run.arrays);
  if (!s.ok()) return s;
  Result<std::vector<Arg>> args = BuildArgs(run.params, run.arrays, run.scalars);
  if (!args.ok()) return args.status();
  run.args = std::move(args).value();
  return run;
}

}  // namespace ptox::cli
