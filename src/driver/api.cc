// The public API (ptox/ptox.h): the one place where compiler exceptions become Status.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>
#include <type_traits>

#include "driver/cache.h"
#include "driver/compile.h"
#include "driver/mpi_comm.h"
#include "driver/program_ir.h"
#include "driver/reorder_bound.h"
#include "interp/comm.h"
#include "interp/interpreter.h"
#include "ir/signature.h"
#include "ops/type_rules.h"
#include "runtime/task_graph.h"
#include "targets/target.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir/walk.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "ptox/ptox.h"
#include "ptox/files.h"

namespace ptox {

static_assert(kMaxThreads == runtime::Executor::kMaxThreads);

namespace {

// Runs `fn`, converting any exception into a Status.
template <typename F>
Status Guard(F&& fn) {
  try {
    fn();
    return Status::Ok();
  } catch (const Error& e) {
    return e.ToStatus();
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kRuntime, "runtime error: out of memory");
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, std::string("internal error: ") + e.what());
  }
}

// Function `name` of the module, or its last one when name is empty.
const ir::Func* Function(const ir::Module& m, std::string_view name) {
  if (name.empty()) {
    PTOX_CHECK(!m.funcs.empty(), Span{}) << "the module has no functions";
    return m.funcs.back().get();
  }
  const ir::Func* f = m.Find(name);
  PTOX_CHECK(f != nullptr, Span{}) << "no function @" << name << " in the module";
  return f;
}

// The function a run or compile starts at (as Function; never an incore one).
const ir::Func* Entry(const ir::Module& m, std::string_view name) {
  const ir::Func* f = Function(m, name);
  PTOX_CHECK(!f->incore, f->span) << "@" << f->name << " is an incore function: it runs inside "
                                  << "its callers' incore scopes, not on its own";
  return f;
}

}  // namespace

// Executables already compiled for a program: a second Run costs a map lookup, not lowering
// and code generation (the compile cache key is a hash of the generated source).
struct Program::Compiled {
  std::mutex mu;
  std::map<std::tuple<const ir::Func*, const targets::Target*, bool>,
           std::shared_ptr<const targets::Executable>>
      executables;
  // What each target keeps for this program across runs (targets::ProgramState).
  std::map<const targets::Target*, std::unique_ptr<targets::ProgramState>> states;
  // Runs, compiles, builds and cache hits per target name (Program::Stats).
  std::map<std::string, CompileStats, std::less<>> stats;

  // The state of `target`, made on first use (nullptr for a target that keeps none).
  targets::ProgramState* StateFor(const targets::Target& target) {
    std::lock_guard<std::mutex> lock(mu);
    auto [it, fresh] = states.try_emplace(&target);
    if (fresh) it->second = target.NewProgramState();
    return it->second.get();
  }
};

Result<Program> ProgramInternals::FromModule(ir::Module module) {
  Program p;
  Status s = Guard([&] {
    ir::Verify(module);
    // Inlined code is verified again: what only a call site can get wrong (a tile helper's
    // store into an `in` tensor) is reported at the callee's line and the call's.
    ir::Module entries = passes::InlineCalls(module, {});
    if (entries.funcs != module.funcs) ir::Verify(entries);
    p.entries_ = std::make_shared<const ir::Module>(std::move(entries));
    p.module_ = std::make_shared<const ir::Module>(std::move(module));
    p.compiled_ = std::make_shared<Program::Compiled>();
  });
  if (!s.ok()) return s;
  return p;
}

Result<Program> Program::Parse(std::string_view text, const std::string& filename) {
  ir::Module m;
  Status s = Guard([&] { m = ir::Parse(text, filename); });
  if (!s.ok()) return s;
  return ProgramInternals::FromModule(std::move(m));
}

Result<Program> Program::FromFile(const std::string& path) {
  // Not std::ifstream: it opens a directory (which then reads as an empty module) and waits on
  // a FIFO for a writer.
  std::string why;
  std::optional<std::string> text = ReadRegularFile(path, &why);
  if (!text) return Status(StatusCode::kInvalid, "error: cannot read '" + path + "': " + why);
  return Parse(*text, path);
}

void Program::ForgetConstants() const {
  if (!compiled_) return;
  std::vector<targets::ProgramState*> states;
  {
    std::lock_guard<std::mutex> lock(compiled_->mu);
    for (const auto& [target, state] : compiled_->states)
      if (state) states.push_back(state.get());
  }
  for (targets::ProgramState* s : states) s->ForgetConstants();  // waits for their runs
}

int64_t Program::ConstantBytes() const {
  if (!compiled_) return 0;
  std::lock_guard<std::mutex> lock(compiled_->mu);
  int64_t bytes = 0;
  for (const auto& [target, state] : compiled_->states)
    if (state) bytes += state->ConstantBytes();
  return bytes;
}

std::vector<std::pair<std::string, CompileStats>> Program::Stats() const {
  if (!compiled_) return {};
  std::lock_guard<std::mutex> lock(compiled_->mu);
  return {compiled_->stats.begin(), compiled_->stats.end()};
}

std::string Program::ToText() const { return ir::Print(*module_); }

std::vector<std::string> Program::FunctionNames() const {
  std::vector<std::string> names;
  for (const auto& f : module_->funcs) names.push_back(f->name);
  return names;
}

Result<std::vector<ParamInfo>> Program::Params(std::string_view function) const {
  std::vector<ParamInfo> out;
  Status s = Guard([&] {
    const ir::Func* f = Function(*module_, function);
    for (const ir::Param& p : f->params) {
      ParamInfo info;
      info.name = p.value->name;
      info.dir = static_cast<ParamDirection>(p.dir);
      info.is_tensor = p.value->type.is_tensor();
      info.dtype = p.value->type.dtype();
      if (info.is_tensor)
        for (const ir::Dim& d : p.value->type.shape()) info.dims.push_back({d.size, d.sym});
      out.push_back(std::move(info));
    }
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> Program::ValueTypes(
    std::string_view function) const {
  std::vector<std::pair<std::string, std::string>> out;
  Status s = Guard([&] {
    const ir::Func* f = Function(*module_, function);
    auto add = [&](const ir::Value& v) { out.emplace_back(v->name, v->type.ToString()); };
    for (const ir::Param& p : f->params) add(p.value);
    ir::ForEachStmt(f->body, [&](const ir::Stmt& st) {
      switch (st.kind()) {
        case ir::StmtKind::kOp:
          for (const ir::Value& r : ir::As<ir::OpStmt>(st).results()) add(r);
          break;
        case ir::StmtKind::kFor: {
          const auto& loop = ir::As<ir::ForStmt>(st);
          add(loop.iv());
          for (const ir::Value& v : loop.iter_args()) add(v);
          for (const ir::Value& v : loop.results()) add(v);
          break;
        }
        case ir::StmtKind::kIf:
          for (const ir::Value& v : ir::As<ir::IfStmt>(st).results()) add(v);
          break;
        case ir::StmtKind::kWhile: {
          const auto& loop = ir::As<ir::WhileStmt>(st);
          for (const ir::Value& v : loop.iter_args()) add(v);
          for (const ir::Value& v : loop.results()) add(v);
          break;
        }
        case ir::StmtKind::kCall:
          for (const ir::Value& v : ir::As<ir::CallStmt>(st).results()) add(v);
          break;
        default: break;
      }
    });
  });
  if (!s.ok()) return s;
  return out;
}

namespace {

// `target`'s capabilities with the overrides in `caps` applied.
passes::Capabilities CapsFor(const targets::Target& target, const TargetCaps& caps) {
  passes::Capabilities c = target.caps();
  auto set = [](int64_t& field, const std::optional<int64_t>& v, std::string_view name) {
    if (!v) return;
    PTOX_CHECK(*v > 0, Span{}) << "capability " << name << " must be a positive byte count, got "
                               << *v;
    field = *v;
  };
  set(c.l2_bytes, caps.l2_bytes, "l2");
  set(c.onchip_budget_bytes, caps.onchip_bytes, "onchip");
  return c;
}

}  // namespace

Result<Program> Transform(const Program& program, const TransformOptions& options) {
  ir::Module m;
  Status s = Guard([&] {
    passes::PipelineOptions popts;
    popts.context.caps = CapsFor(targets::GetTarget(options.target), options.caps);
    popts.timings = options.timings;
    if (options.after_pass) {
      popts.after_pass = [&](std::string_view name, const ir::Module& mod) {
        options.after_pass(name, ir::Print(mod));
      };
    }
    m = passes::RunPipeline(ProgramInternals::Module(program), options.passes, popts);
  });
  if (!s.ok()) return s;
  return ProgramInternals::FromModule(std::move(m));
}

std::vector<std::pair<std::string, std::string>> ListPasses() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : passes::AllPasses()) out.emplace_back(p.name, p.summary);
  return out;
}

std::vector<std::string> DefaultPipeline(bool fuse) { return passes::DefaultPipeline(fuse); }

Result<std::string> Compile(const Program& program, const CompileOptions& options) {
  std::string out;
  Status s = Guard([&] {
    const ir::Func* f = Entry(ProgramInternals::Entries(program), options.function);
    const targets::Target& target = targets::GetTarget(options.target);
    const passes::Capabilities caps = CapsFor(target, options.caps);
    const targets::CompiledTarget* compiled = target.compiled();
    PTOX_CHECK(compiled || options.emit == Emit::kIr, Span{})
        << "target '" << target.name() << "' runs the IR as it is: it has IR to show "
        << "(--emit=ir) but no source or binary";
    switch (options.emit) {
      case Emit::kIr: out = ir::Print(driver::Lower(caps, *f, options.fuse)); break;
      case Emit::kSource: out = compiled->Source(driver::Lower(caps, *f, options.fuse)); break;
      case Emit::kBinary:
        PTOX_CHECK(options.caps.empty(), Span{})
            << "capability overrides apply to the emitted IR and source only: a binary is built "
               "for the target's own capabilities";
        out = driver::CompileToCache(*compiled, *f, options.fuse);
        break;
    }
  });
  if (!s.ok()) return s;
  return out;
}

Result<CacheInfo> GetCacheInfo() {
  CacheInfo info;
  Status s = Guard([&] {
    driver::CompileCache::Info i = driver::CompileCache().Stats();
    info = {i.dir, i.entries, i.bytes, i.corrupt};
  });
  if (!s.ok()) return s;
  return info;
}

Result<int64_t> ClearCache() {
  int64_t n = 0;
  Status s = Guard([&] {
    driver::ForgetRejectedBuilds();
    n = driver::CompileCache().Clear();
  });
  if (!s.ok()) return s;
  return n;
}

Result<double> ReorderBound(const Program& program, std::string_view function,
                            const std::vector<Arg>& args) {
  double bound = 0;
  Status s = Guard([&] {
    const ir::Func* f = Entry(ProgramInternals::Entries(program), function);
    const int64_t terms = driver::ReorderedTerms(*f, args);
    if (terms == 0) return;
    // A reordered f32 result rounded to a 16-bit output may land on the other side of a
    // rounding boundary: one ulp of that type, at most 2^-7 (bf16) or 2^-10 (f16) of it.
    double ulp = 0;
    for (const ir::Param& p : f->params) {
      const ir::Type& t = p.value->type;
      if (p.dir == ir::Direction::kIn || !t.is_tensor()) continue;
      if (t.dtype() == DType::kBF16) ulp = std::max(ulp, 0x1p-7);
      if (t.dtype() == DType::kF16) ulp = std::max(ulp, 0x1p-10);
    }
    // A safety factor of 2 over the n * eps bound of a reordered n-term sum.
    bound = 2.0 * static_cast<double>(terms) * 0x1p-23 + ulp;
  });
  if (!s.ok()) return s;
  return bound;
}

std::vector<std::string> OpNames() {
  std::vector<std::string> names;
#define PTOX_OP(e, name, family, fn, ...) names.emplace_back(name);
#include "ops/ops.def"
#undef PTOX_OP
  return names;
}

std::vector<OpAttr> OpAttrs(std::string_view op) {
  std::vector<OpAttr> out;
  const std::optional<ir::OpCode> code = ir::LookupOp(op);
  if (!code) return out;
  for (const ir::AttrSpec& a : ir::OpAttrs(*code)) {
    OpAttr& o = out.emplace_back();
    o.name = a.name;
    o.kind = ir::AttrKindName(a.kind);
    if (a.values)
      for (std::string_view v : a.values()) o.values.emplace_back(v);
    o.pass_mark = a.mark;
  }
  return out;
}

int DefaultThreads() { return runtime::Executor::DefaultThreads(); }

std::vector<std::string> AvailableTargets() {
  std::vector<std::string> names;
  for (const targets::Target* t : targets::AllTargets())
    if (t->Available(nullptr)) names.emplace_back(t->name());
  return names;
}

namespace {

// Which parameters of `f` RunOptions::constants names; each must be a tensor input.
std::vector<bool> ConstantParams(const ir::Func& f, const std::vector<std::string>& names) {
  std::vector<bool> constant(f.params.size(), false);
  for (const std::string& name : names) {
    size_t i = 0;
    while (i < f.params.size() && f.params[i].value->name != name) ++i;
    PTOX_CHECK(i < f.params.size(), Span{})
        << "constant '" << name << "' is not a parameter of @" << f.name;
    const ir::Param& p = f.params[i];
    PTOX_CHECK(p.value->type.is_tensor() && p.dir == ir::Direction::kIn, Span{})
        << "constant '" << name << "' must be a tensor input ('in'): only inputs stay unchanged "
           "between runs";
    constant[i] = true;
  }
  return constant;
}

}  // namespace

Status Run(const Program& program, const std::vector<Arg>& args, const RunOptions& options) {
  return Guard([&] {
    PTOX_CHECK(program.module_ != nullptr, Span{})
        << "the program is empty (make one with Program::Parse, FromFile or FunctionBuilder)";
    const ir::Func* f = Entry(ProgramInternals::Entries(program), options.function);
    PTOX_CHECK(options.num_threads >= 0 && options.num_threads <= kMaxThreads, Span{})
        << "num_threads must be in [0, " << kMaxThreads << "] (0: PTOX_NUM_THREADS or one per "
        << "core), got " << options.num_threads;
    std::vector<bool> constant = ConstantParams(*f, options.constants);
    const targets::Target& target = targets::GetTarget(options.target);
    ir::BindArgs(*f, args);  // before compiling: bad arguments never cost a compile
    if (options.trace) options.trace->clear();
    targets::RunContext ctx{options.num_threads, options.check_nan, options.trace, {}};
    for (const ir::Param& p : f->params) ctx.arg_names.push_back(p.value->name);
    ctx.constant = std::move(constant);
    ctx.state = program.compiled_->StateFor(target);
    // Under an MPI launcher the run is this process's rank (docs/distributed.md).
    static driver::MpiComm mpi(dist::World::Get());
    static driver::MpiCollectives collectives(dist::World::Get());
    if (mpi.size() > 1 && target.compiled()) ctx.collectives = &collectives;
    if (mpi.size() > 1 && !target.compiled()) ctx.comm = &mpi;
    // Ranks on one machine share its cores: unless told otherwise, each gets its share of worker
    // threads (4 ranks on 2 cores with 2 workers each ran collectives at 0.6-0.9x raw MPI's
    // speed, at 0.8-1.07x with 1). Found once: counting the cores reads sysfs, and the affinity
    // is a system call (3-4 us of each run of a program of one collective, Xeon VM).
    static const int rank_share = [] {
      const int local = dist::World::Get().local_size();
      if (local <= 1 || std::getenv("PTOX_NUM_THREADS") != nullptr) return 0;
      const int cores = static_cast<int>(std::thread::hardware_concurrency());
      return std::max(1, std::min(DefaultThreads(), cores / local));
    }();
    if (ctx.threads == 0) ctx.threads = rank_share;
    std::shared_ptr<const targets::Executable> exe;
    {
      std::lock_guard<std::mutex> lock(program.compiled_->mu);
      auto& slot = program.compiled_->executables[{f, &target, options.fuse}];
      CompileStats& stats = program.compiled_->stats[std::string(target.name())];
      ++stats.runs;
      if (!slot) {
        bool built = false;
        slot = driver::Compile(target, *f, options.fuse, &built);
        ++stats.compiles;
        stats.builds += built;
        stats.cache_hits += target.compiled() != nullptr && !built;
      }
      exe = slot;
    }
    std::shared_lock<std::shared_mutex> in_use;  // ForgetConstants waits for this run
    if (ctx.state) in_use = ctx.state->Use();
    exe->Run(args, ctx);
  });
}

Status RunRanks(const Program& program, const std::vector<std::vector<Arg>>& rank_args,
                const RunOptions& options, int64_t timeout_ms) {
  const int n = static_cast<int>(rank_args.size());
  Status checked = Guard([&] {
    PTOX_CHECK(program.module_ != nullptr, Span{})
        << "the program is empty (make one with Program::Parse, FromFile or FunctionBuilder)";
    PTOX_CHECK(n >= 1 && n <= kMaxThreads, Span{})
        << "RunRanks needs 1 to " << kMaxThreads << " ranks, got " << n;
    PTOX_CHECK(timeout_ms > 0, Span{}) << "timeout_ms must be positive, got " << timeout_ms;
    PTOX_SUPPORTED(options.target == "interp", Span{})
        << "RunRanks simulates ranks on the interpreter only (target \"interp\"), not \""
        << options.target << "\" (docs/distributed.md)";
    const ir::Func* f = Entry(ProgramInternals::Entries(program), options.function);
    for (int r = 0; r < n; ++r) {
      try {
        ir::BindArgs(*f, rank_args[r]);
      } catch (const Error& e) {
        throw Error(e.code(), "rank " + std::to_string(r) + ": " + e.what());
      }
    }
  });
  if (!checked.ok()) return checked;
  const ir::Func* f = Entry(ProgramInternals::Entries(program), options.function);
  interp::SimWorld world(n, std::chrono::milliseconds(timeout_ms));
  std::vector<Status> status(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      status[r] = Guard([&] {
        try {
          interp::Run(*f, rank_args[r], &world.rank(r));
        } catch (const Error& e) {
          world.Fail(r, e.what());
          throw;
        }
        world.Finish(r);
      });
    });
  for (std::thread& t : threads) t.join();
  int failed = world.first_failure();
  for (int r = 0; r < n && failed < 0; ++r)
    if (!status[r].ok()) failed = r;
  if (failed >= 0)
    return Status(status[failed].code(),
                  "rank " + std::to_string(failed) + ": " + status[failed].message());
  return Status();
}

}  // namespace ptox
