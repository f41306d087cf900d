// ptox._core: the Python bindings, over the public C++ API only (include/ptox), as the CLI is.
// Tensors cross zero-copy: a kernel reads and writes the caller's buffers (numpy, torch, anything
// with __dlpack__). Errors become the exceptions of ptox.errors by StatusCode.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptox/bandwidth.h"
#include "ptox/dist.h"
#include "ptox/fma_peak.h"
#include "ptox/manifest.h"
#include "ptox/ptox.h"

namespace nb = nanobind;

namespace {

// A failed Status, raised as the ptox.errors class for its code (see RaiseFor).
struct StatusError {
  ptox::StatusCode code;
  std::string message;
};

[[noreturn]] void Raise(const ptox::Status& s) { throw StatusError{s.code(), s.message()}; }

template <typename T>
T Take(ptox::Result<T> r) {
  if (!r.ok()) Raise(r.status());
  return std::move(*r);
}

const char* ErrorClass(ptox::StatusCode code) {
  switch (code) {
    case ptox::StatusCode::kInvalid: return "InvalidError";
    case ptox::StatusCode::kUnsupported: return "UnsupportedError";
    case ptox::StatusCode::kToolchain: return "ToolchainError";
    case ptox::StatusCode::kRuntime: return "KernelError";
    default: return "InternalError";
  }
}

// The tasks of every compiled run between trace_begin and trace_end (ptox.profile). Touched only
// with the GIL held: a run records into its own vector and appends here after retaking the GIL,
// its times shifted by when it started, so runs lie one after another on one timeline.
struct Recording {
  std::chrono::steady_clock::time_point begin;
  std::vector<ptox::TaskTrace> tasks;
};
std::optional<Recording> recording;

// Runs `program` with the GIL released, recording its tasks when a trace is open.
ptox::Status RunRecorded(const ptox::Program& program, const std::vector<ptox::Arg>& values,
                         ptox::RunOptions& options) {
  std::vector<ptox::TaskTrace> tasks;
  if (recording) options.trace = &tasks;
  const auto start = std::chrono::steady_clock::now();
  ptox::Status s;
  {
    nb::gil_scoped_release unlocked;  // the caller's arrays stay alive: the caller holds them
    s = ptox::Run(program, values, options);
  }
  if (recording) {
    const double shift =
        std::chrono::duration<double, std::micro>(start - recording->begin).count();
    for (ptox::TaskTrace& t : tasks) {
      t.start_us += shift;
      t.end_us += shift;
      recording->tasks.push_back(std::move(t));
    }
  }
  return s;
}

std::string DirName(ptox::ParamDirection d) {
  return d == ptox::ParamDirection::kIn ? "in" : d == ptox::ParamDirection::kOut ? "out" : "inout";
}

// One parameter as a dict: name, dir, is_tensor, dtype, dims (ints, or str for symbols).
nb::dict ParamDict(const ptox::ParamInfo& p) {
  nb::dict d;
  d["name"] = p.name;
  d["dir"] = DirName(p.dir);
  d["is_tensor"] = p.is_tensor;
  d["dtype"] = std::string(ptox::DTypeName(p.dtype));
  nb::list dims;
  for (const auto& dim : p.dims) {
    if (dim.sym.empty()) dims.append(dim.size);
    else dims.append(dim.sym);
  }
  d["dims"] = dims;
  return d;
}

// Read-only arrays (a memory-mapped weight) are accepted: ptox never writes an `in` tensor, and
// the Python side refuses a read-only array for a parameter the kernel writes.
using Array = nb::ndarray<nb::ro, nb::device::cpu>;

// A tensor argument: the caller's array, read as `dtype` (its own element size must match).
ptox::Tensor TensorOf(const Array& a, const std::string& dtype) {
  std::optional<ptox::DType> t = ptox::ParseDType(dtype);
  if (!t) Raise({ptox::StatusCode::kInvalid, "unknown dtype '" + dtype + "'"});
  if (static_cast<int>(a.itemsize()) != ptox::DTypeBytes(*t))
    Raise({ptox::StatusCode::kInvalid, "an array of " + std::to_string(a.itemsize()) +
                                           "-byte elements cannot be read as " + dtype});
  ptox::Tensor out;
  out.data = const_cast<void*>(a.data());
  out.dtype = *t;
  for (size_t d = 0; d < a.ndim(); ++d) {
    out.shape.push_back(static_cast<int64_t>(a.shape(d)));
    out.strides.push_back(static_cast<int64_t>(a.stride(d)));  // elements, as ptox takes them
  }
  return out;
}

// The ptox dtype of an array's elements as DLPack describes them (none for other types).
std::optional<ptox::DType> DTypeOf(const Array& a) {
  const nb::dlpack::dtype t = a.dtype();
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(t.code);
  if (t.lanes != 1) return std::nullopt;
  if (code == Code::Float && t.bits == 32) return ptox::DType::kF32;
  if (code == Code::Float && t.bits == 16) return ptox::DType::kF16;
  if (code == Code::Bfloat && t.bits == 16) return ptox::DType::kBF16;
  if (code == Code::Int && t.bits == 8) return ptox::DType::kI8;
  if (code == Code::Int && t.bits == 32) return ptox::DType::kI32;
  if (code == Code::Int && t.bits == 64) return ptox::DType::kI64;
  if (code == Code::Bool && t.bits == 8) return ptox::DType::kBool;
  return std::nullopt;
}

// args: a list of (array, dtype) pairs, ints and floats, one per parameter in order.
std::vector<ptox::Arg> ArgsOf(const nb::list& args) {
  std::vector<ptox::Arg> out;
  for (nb::handle h : args) {
    if (nb::isinstance<nb::tuple>(h)) {
      nb::tuple t = nb::cast<nb::tuple>(h);
      out.emplace_back(TensorOf(nb::cast<Array>(t[0]), nb::cast<std::string>(t[1])));
    } else if (nb::isinstance<nb::bool_>(h) || nb::isinstance<nb::int_>(h)) {
      out.emplace_back(nb::cast<int64_t>(h));
    } else if (nb::isinstance<nb::float_>(h)) {
      out.emplace_back(nb::cast<double>(h));
    } else {
      Raise({ptox::StatusCode::kInvalid, "an argument must be an array, an int or a float, got " +
                                             nb::cast<std::string>(nb::str(h.type()))});
    }
  }
  return out;
}

ptox::Emit EmitOf(const std::string& emit) {
  if (emit == "ir") return ptox::Emit::kIr;
  if (emit == "source") return ptox::Emit::kSource;
  if (emit == "binary") return ptox::Emit::kBinary;
  Raise({ptox::StatusCode::kInvalid, "emit must be 'ir', 'source' or 'binary', got '" + emit + "'"});
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "ptox's C++ core (use the ptox package, not this module)";
  m.attr("__version__") = PTOX_VERSION;

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object cls = nb::module_::import_("ptox.errors").attr(ErrorClass(e.code));
      PyErr_SetObject(cls.ptr(), nb::str(e.message.c_str()).ptr());
    }
  });

  nb::class_<ptox::Program>(m, "Program")
      .def_static("parse", [](const std::string& text, const std::string& filename) {
        return Take(ptox::Program::Parse(text, filename));
      }, nb::arg("text"), nb::arg("filename") = "<input>")
      .def_static("from_file", [](const std::string& path) {
        return Take(ptox::Program::FromFile(path));
      })
      .def("text", &ptox::Program::ToText)
      .def("function_names", &ptox::Program::FunctionNames)
      .def("params", [](const ptox::Program& p, const std::string& function) {
        nb::list out;
        for (const ptox::ParamInfo& i : Take(p.Params(function))) out.append(ParamDict(i));
        return out;
      }, nb::arg("function") = "")
      .def("forget_constants", &ptox::Program::ForgetConstants)
      // [(target, (runs, compiles, builds, cache_hits))]: kernel.stats()
      .def("compile_stats", [](const ptox::Program& p) {
        std::vector<std::pair<std::string, std::tuple<int64_t, int64_t, int64_t, int64_t>>> out;
        for (const auto& [target, s] : p.Stats())
          out.emplace_back(target, std::make_tuple(s.runs, s.compiles, s.builds, s.cache_hits));
        return out;
      })
      .def("value_types", [](const ptox::Program& p, const std::string& function) {
        nb::dict out;
        for (const auto& [name, type] : Take(p.ValueTypes(function))) out[name.c_str()] = type;
        return out;
      }, nb::arg("function") = "");

  m.def("run", [](const ptox::Program& program, const nb::list& args, const std::string& target,
                  const std::string& function, int threads, bool check_nan, bool fuse,
                  const std::vector<std::string>& constants) {
    std::vector<ptox::Arg> values = ArgsOf(args);
    ptox::RunOptions options;
    options.constants = constants;
    options.target = target;
    options.function = function;
    options.num_threads = threads;
    options.check_nan = check_nan;
    options.fuse = fuse;
    const ptox::Status s = RunRecorded(program, values, options);
    if (!s.ok()) Raise(s);
  }, nb::arg("program"), nb::arg("args"), nb::arg("target") = "cpu", nb::arg("function") = "",
     nb::arg("threads") = 0, nb::arg("check_nan") = false, nb::arg("fuse") = true,
     nb::arg("constants") = std::vector<std::string>());

  // The fast path of a call: every argument given, arrays as they are (their dtype from DLPack).
  // Returns False, having run nothing, when an array's dtype needs the Python path (a numpy
  // bfloat16 array); raises like run otherwise.
  m.def("run_direct", [](const ptox::Program& program, const nb::tuple& args,
                         const std::string& target, const std::string& function, int threads,
                         const std::vector<std::string>& constants, bool fuse) {
    std::vector<ptox::Arg> values;
    values.reserve(args.size());
    for (nb::handle h : args) {
      Array a;
      if (nb::try_cast<Array>(h, a, /*convert=*/false)) {
        std::optional<ptox::DType> t = DTypeOf(a);
        if (!t) return false;
        values.emplace_back(TensorOf(a, std::string(ptox::DTypeName(*t))));
      } else if (nb::isinstance<nb::bool_>(h) || nb::isinstance<nb::int_>(h)) {
        values.emplace_back(nb::cast<int64_t>(h));
      } else if (nb::isinstance<nb::float_>(h)) {
        values.emplace_back(nb::cast<double>(h));
      } else {
        return false;  // the Python path explains what is wrong with it
      }
    }
    ptox::RunOptions options;
    options.target = target;
    options.function = function;
    options.num_threads = threads;
    options.constants = constants;
    options.fuse = fuse;
    const ptox::Status s = RunRecorded(program, values, options);
    if (!s.ok()) Raise(s);
    return true;
  }, nb::arg("program"), nb::arg("args"), nb::arg("target"), nb::arg("function"),
     nb::arg("threads"), nb::arg("constants") = std::vector<std::string>(),
     nb::arg("fuse") = true);

  m.def("compile", [](const ptox::Program& program, const std::string& target,
                      const std::string& function, const std::string& emit, bool fuse) {
    ptox::CompileOptions options;
    options.target = target;
    options.function = function;
    options.emit = EmitOf(emit);
    options.fuse = fuse;
    ptox::Result<std::string> r = std::string();
    {
      nb::gil_scoped_release unlocked;  // a compile takes a while: other threads may run
      r = ptox::Compile(program, options);
    }
    return Take(std::move(r));
  }, nb::arg("program"), nb::arg("target") = "cpu", nb::arg("function") = "",
     nb::arg("emit") = "source", nb::arg("fuse") = true);

  m.def("stages", [](const ptox::Program& program, const std::string& target, bool fuse) {
    std::vector<std::pair<std::string, std::string>> out;
    ptox::TransformOptions options;
    options.passes = ptox::DefaultPipeline(fuse);
    options.target = target;
    options.after_pass = [&](std::string_view pass, const std::string& text) {
      out.emplace_back(std::string(pass), text);
    };
    Take(ptox::Transform(program, options));
    return out;
  }, nb::arg("program"), nb::arg("target") = "cpu", nb::arg("fuse") = true);

  m.def("reorder_bound", [](const ptox::Program& program, const nb::list& args,
                            const std::string& function) {
    return Take(ptox::ReorderBound(program, function, ArgsOf(args)));
  }, nb::arg("program"), nb::arg("args"), nb::arg("function") = "");
  // ptox.profile: record the tasks of the compiled runs in between; trace_end returns the Chrome
  // trace JSON and the per-kernel profile table of them, each kernel's name passed through
  // `rename` when given (ptox.jit maps the "<jit f>:line:col" in it to the Python source).
  m.def("trace_begin", [] {
    if (recording) throw nb::value_error("a profile is already open (they do not nest)");
    recording = Recording{std::chrono::steady_clock::now(), {}};
  });
  m.def(
      "trace_end",
      [](nb::object rename) {
        if (!recording) throw nb::value_error("no trace is open");
        std::vector<ptox::TaskTrace> tasks = std::move(recording->tasks);
        recording.reset();
        std::map<std::string, std::string> renamed;  // one call per kernel, not per task
        for (ptox::TaskTrace& t : tasks) {
          if (rename.is_none()) break;
          auto [it, fresh] = renamed.try_emplace(t.name);
          if (fresh) it->second = nb::cast<std::string>(rename(t.name));
          t.name = it->second;
        }
        return std::make_pair(ptox::ChromeTraceJson(tasks), ptox::ProfileTable(tasks));
      },
      nb::arg("rename") = nb::none());
  // A distributed run's rank (docs/distributed.md): initializes MPI under a launcher.
  m.def("rank_info", [] {
    const ptox::RankInfo r = ptox::ThisRank();
    return std::make_pair(r.rank, r.world_size);
  });
  // "ptox: rank K: message" on stderr, then every rank of the run ends with `code`.
  m.def("abort_run", [](const std::string& message, int code) { ptox::AbortRun(message, code); });
  m.def("available_targets", &ptox::AvailableTargets);
  m.def("op_names", &ptox::OpNames);
  // The attributes an op takes (src/ops/op_attrs.def), one dict each: name, kind ("bool", "int",
  // "float", "string"), values (the strings a string attribute accepts; empty: any), pass_mark.
  m.def("op_attrs", [](const std::string& op) {
    nb::list out;
    for (const ptox::OpAttr& a : ptox::OpAttrs(op)) {
      nb::dict d;
      d["name"] = a.name;
      d["kind"] = a.kind;
      d["values"] = nb::cast(a.values);
      d["pass_mark"] = a.pass_mark;
      out.append(d);
    }
    return out;
  });
  m.def("default_threads", &ptox::DefaultThreads);
  m.def("cache_dir", &ptox::CacheDir);
  m.def("build_manifest_json", [] { return ptox::GetBuildManifest().ToJson(); });
  // Memory bandwidth ceilings (GB/s: median, min, max) for benchmarks; the GIL is released.
  m.def("bandwidth", [](const std::string& kind, int threads, int64_t bytes, int reps) {
    if (kind != "triad" && kind != "read") throw nb::value_error("kind is 'triad' or 'read'");
    nb::gil_scoped_release release;
    const ptox::Bandwidth b = kind == "triad" ? ptox::TriadGBs(threads, bytes, reps)
                                              : ptox::ReadGBs(threads, bytes, reps);
    return std::make_tuple(b.median, b.min, b.max);
  }, nb::arg("kind"), nb::arg("threads"), nb::arg("bytes"), nb::arg("reps") = 5);
  // The f32 FMA peak (GFLOP/s, best of 3) of the widest loop this host runs on `threads` threads
  // at once: the compute ceiling for benchmarks; the GIL is released.
  m.def("fma_peak", [](int threads) {
    nb::gil_scoped_release release;
    return ptox::MeasurePeakGflops(ptox::BestFmaKernel(), threads);
  }, nb::arg("threads"));
}
