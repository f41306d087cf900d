// The target interface: what a backend (or the interpreter) offers the driver, and, read-only,
// the passes.
#pragma once

#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "kernels/abi.h"
#include "passes/pass.h"
#include "ptox/tensor.h"
#include "runtime/task_graph.h"
#include "support/error.h"
#include "targets/collectives.h"

namespace ptox::interp {
class Comm;
}  // namespace ptox::interp

namespace ptox::targets {

using passes::Capabilities;

// What a target keeps for one Program across its runs (the host-orchestrated targets: the blocks
// their kernels pack from constant inputs). Made by Target::NewProgramState and owned by the
// Program; a run holds Use() for its whole duration, and ForgetConstants waits for such runs.
class ProgramState {
 public:
  virtual ~ProgramState() = default;
  virtual std::shared_lock<std::shared_mutex> Use() = 0;
  virtual void ForgetConstants() = 0;  // Program::ForgetConstants
  virtual int64_t ConstantBytes() const = 0;
};

// How one run executes: what every target reads, and the running target's own state.
struct RunContext {
  int threads = 0;                            // 0: the process-wide executor (PTOX_NUM_THREADS)
  bool check_nan = false;                     // fail a task whose outputs hold a NaN
  std::vector<TaskTrace>* records = nullptr;  // filled when not null
  std::vector<std::string> arg_names;         // parameter names, for error messages
  std::vector<bool> constant;  // parameters marked constant (RunOptions::constants; empty: none)
  ProgramState* state = nullptr;  // this target's NewProgramState() for the Program, or null
  interp::Comm* comm = nullptr;   // the ranks of a distributed run (the interpreter's); null: alone
  Collectives* collectives = nullptr;  // the same for compiled targets; null: rank 0 of 1
};

// A compiled function, ready to run on checked arguments.
class Executable {
 public:
  virtual ~Executable() = default;
  // Runs on arguments already checked by ir::BindArgs; throws kRuntime on a kernel failure.
  virtual void Run(const std::vector<Arg>& args, const RunContext& ctx) const = 0;
};

// The bytes every artifact built for cache key `key` carries (in a shared object, as the
// content of the symbol kKeySymbol): the compile cache checks them in the file before loading it,
// the target checks them after loading, so an entry cannot pass for another key's.
inline std::string KeyStamp(std::string_view key) { return "ptox-cache-key:" + std::string(key); }
inline constexpr const char* kKeySymbol = "ptox_cache_key";

class CompiledTarget;

// A place programs run: a compiled backend (CompiledTarget) or the interpreter. Targets of one
// family ("cpu": one per ISA) share their code generator and differ in capabilities.
class Target {
 public:
  virtual ~Target() = default;
  virtual std::string_view name() const = 0;
  // "interp", "cpu", ...: `--target=<family>` picks the best available target of the family.
  virtual std::string_view family() const = 0;
  // Whether this host can run the target; `why` says what is missing when it cannot.
  virtual bool Available(std::string* why) const = 0;
  // What the passes may assume (tile budgets, policy); the interpreter's are the defaults.
  virtual const Capabilities& caps() const = 0;
  // The compiler half of a target that builds code; nullptr for one that runs the IR as it is.
  virtual const CompiledTarget* compiled() const { return nullptr; }
  // For a target that runs the IR as it is (compiled() == nullptr): its executable for `func`.
  virtual std::shared_ptr<const Executable> Interpret(const ir::Func& func) const;
  // What the target keeps per Program across runs (RunContext::state); null: nothing.
  virtual std::unique_ptr<ProgramState> NewProgramState() const { return nullptr; }
};

// A build whose compiler ran to completion and rejected the source (an error in the generated
// code, or flags this compiler does not take): the same source and build identity fail the same
// way again, so the driver remembers the failure under the cache key instead of running the
// compiler again. A compiler that timed out, crashed, could not start or ran out of a resource is
// a plain kToolchain / kRuntime Error: another try may succeed.
class BuildRejected : public Error {
 public:
  explicit BuildRejected(std::string message) : Error(StatusCode::kToolchain, std::move(message)) {}
};

// A backend that generates code and builds it into an artifact (a shared object for the CPU
// targets). The driver owns lowering and caching: it asks for the source and a build identity
// (both part of the cache key), builds on a miss and loads the artifact.
class CompiledTarget : public Target {
 public:
  const CompiledTarget* compiled() const final { return this; }
  // The generated source for `func`. Throws kUnsupported for what the target cannot express.
  virtual std::string Source(const ir::Func& func) const = 0;
  // Everything besides the source that determines the artifact: compiler identity, flags, ABI
  // and kernel-library version. Cheap (no process is spawned).
  virtual std::string BuildIdentity() const = 0;
  // BuildIdentity's parts a person reads, as (name, value): the compiler, its flags, the kernel
  // library (a hash of its text), the ABI version. For the build manifest.
  virtual std::vector<std::pair<std::string, std::string>> IdentityParts() const = 0;
  // The file name extension of the artifact ("so"); the cache names its entries with it.
  virtual std::string_view artifact_extension() const = 0;
  // Builds `source` into an artifact at `out_path` that carries KeyStamp(key); its temporary
  // files are named `out_path` + a suffix and are gone when it returns or throws.
  // `prelude_path`: "" or an artifact BuildPrelude made for Prelude(source) (a precompiled
  // header), which only saves time: the artifact is the same without it. Throws kToolchain with
  // the compiler's message and a one-line command that reproduces the failure, whose files are
  // `failure_stem` + the target's extensions (the CPU targets move the source there:
  // "<stem>.cc"); BuildRejected when the compiler ran and rejected the source; kRuntime when the
  // host is out of disk, processes or memory.
  virtual void Build(const std::string& source, const std::string& key, const std::string& out_path,
                     const std::string& prelude_path, const std::string& failure_stem) const = 0;

  // The part of `source` that many programs share and that can be built once ahead to make
  // their builds faster (the CPU targets: the tile-library includes); "" when there is none.
  virtual std::string Prelude(const std::string& /*source*/) const { return ""; }
  // Builds `prelude` into an artifact at `out_path` carrying KeyStamp(key) that Build can
  // start from (cached by the driver like any artifact, under its own key); throws as Build.
  virtual void BuildPrelude(const std::string& /*prelude*/, const std::string& /*key*/,
                            const std::string& /*out_path*/) const {}
  // The file name extension of BuildPrelude's artifact.
  virtual std::string_view prelude_extension() const { return ""; }
  // Loads an artifact built by Build() for `key`; throws kRuntime when it does not carry that
  // key.
  virtual std::shared_ptr<const Executable> Load(const std::string& path,
                                                 const std::string& key) const = 0;
};

// Every compiled-in target, the interpreter included, each family best first.
const std::vector<const Target*>& AllTargets();
// The target called `name`, or the best available target of the family called `name` ("cpu");
// throws kUnsupported for unknown names and for targets this host cannot run.
const Target& GetTarget(std::string_view name);

}  // namespace ptox::targets
