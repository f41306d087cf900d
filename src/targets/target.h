// The target interface: what a backend offers the driver (and, read-only, the passes).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "passes/pass.h"
#include "ptox/tensor.h"
#include "runtime/pack_store.h"
#include "runtime/task_graph.h"

namespace ptox::targets {

using passes::Capabilities;

// How one run executes: the worker threads and what it records.
struct RunContext {
  int threads = 0;                             // 0: the process-wide executor (PTOX_NUM_THREADS)
  bool check_nan = false;                      // fail a task whose outputs hold a NaN
  std::vector<TaskTrace>* records = nullptr;  // filled when not null
  std::vector<std::string> arg_names;          // parameter names, for error messages
  // Parameters marked constant (RunOptions::constants; empty: none) and where kernels keep
  // their packed blocks.
  std::vector<bool> constant;
  runtime::PackStore* packs = nullptr;
};

// A compiled function, ready to run on checked arguments.
class Executable {
 public:
  virtual ~Executable() = default;
  // Runs on arguments already checked by ir::BindArgs; throws kRuntime on a kernel failure.
  virtual void Run(const std::vector<Arg>& args, const RunContext& ctx) const = 0;
};

// The bytes every shared object built for cache key `key` carries, as the content of a
// symbol (kKeySymbol): the compile cache checks them in the file before loading it, the target
// checks the symbol after loading, so an entry cannot pass for another key's.
inline std::string KeyStamp(std::string_view key) { return "ptox-cache-key:" + std::string(key); }
inline constexpr const char* kKeySymbol = "ptox_cache_key";

// A compiled backend. The driver owns caching: it asks for the source, a build identity (part of
// the cache key), builds on a miss and loads the shared object.
class Target {
 public:
  virtual ~Target() = default;
  virtual std::string_view name() const = 0;
  // Whether this host can run the target; `why` says what is missing when it cannot.
  virtual bool Available(std::string* why) const = 0;
  virtual const Capabilities& caps() const = 0;
  // The generated source for `func`. Throws kUnsupported for what the target cannot express.
  virtual std::string Source(const ir::Func& func) const = 0;
  // Everything besides the source that determines the binary: compiler identity, flags, ABI and
  // kernel-library version. Cheap (no process is spawned).
  virtual std::string BuildIdentity() const = 0;
  // Compiles `source` into a shared object at `out_path` that exports KeyStamp(key) as the
  // null-terminated string kKeySymbol. Throws kToolchain with the compiler's message and a
  // one-line command that reproduces the failure (kRuntime when the host is out of disk,
  // processes or memory).
  virtual void Build(const std::string& source, const std::string& key,
                     const std::string& out_path) const = 0;
  // Loads a shared object built by Build() for `key`; throws kRuntime when it does not carry
  // that key.
  virtual std::shared_ptr<const Executable> Load(const std::string& so_path,
                                                 const std::string& key) const = 0;
};

// Every compiled-in target, in preference order (best first); "cpu" resolves to the best
// available CPU target.
const std::vector<const Target*>& AllTargets();
// The target called `name` ("cpu" = the best CPU target this host runs); throws kUnsupported
// for unknown names and for targets this host cannot run.
const Target& GetTarget(std::string_view name);

}  // namespace ptox::targets
