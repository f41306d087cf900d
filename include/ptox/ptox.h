// The ptox public API: parse or build a program, run it on a target over caller memory.
//
//   auto prog = ptox::Program::FromFile("examples/hello.pto");
//   if (!prog.ok()) { /* prog.status().message() */ }
//   std::vector<float> a(128 * 128), b(128 * 128), c(128 * 128);
//   ptox::Status s = ptox::Run(*prog, {ptox::Tensor::Contiguous(a.data(), ptox::DType::kF32, {128, 128}),
//                                      ..., ...}, {.target = "interp"});
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptox/dtype.h"
#include "ptox/status.h"
#include "ptox/tensor.h"
#include "ptox/trace.h"

namespace ptox {

namespace ir {
struct Module;
}

enum class ParamDirection { kIn, kOut, kInOut };

// A function parameter as seen by callers (enough to allocate arguments).
struct ParamInfo {
  std::string name;
  ParamDirection dir = ParamDirection::kIn;
  bool is_tensor = false;
  DType dtype = DType::kF32;
  // Per dim: a static size (sym empty) or a symbol name bound at run time.
  struct Dim {
    int64_t size = 0;
    std::string sym;
  };
  std::vector<Dim> dims;
};

// How the runs of a program on one target got their executables (Program::Stats): what a front
// end shows so that "one compile, whatever the sizes" can be checked (Python: kernel.stats()).
struct CompileStats {
  int64_t runs = 0;        // runs whose arguments were accepted
  int64_t compiles = 0;    // executables made (lowered, generated, loaded): once per function and
                           // fuse setting, not per size of a symbolic dim; failures not counted
  int64_t builds = 0;      // of those, the ones the toolchain built
  int64_t cache_hits = 0;  // of those, the ones a compiled target found in the compile cache (on
                           // disk, or loaded in this process by another program); the interpreter
                           // has neither
};

// A parsed and verified module. Cheap to copy (shares the immutable IR).
class Program {
 public:
  static Result<Program> Parse(std::string_view text, const std::string& filename = "<input>");
  static Result<Program> FromFile(const std::string& path);

  std::string ToText() const;
  std::vector<std::string> FunctionNames() const;
  // The entry function: `name`, or the last function in the module when name is empty.
  Result<std::vector<ParamInfo>> Params(std::string_view function = {}) const;
  // (name, type) of every value the entry function defines, in definition order, each type as
  // the text form spells it ("tensor<{N}x64xf32>", "tile<16x8xf32>", "index"): what a front end
  // asks when it has to write a type the verifier inferred.
  Result<std::vector<std::pair<std::string, std::string>>> ValueTypes(
      std::string_view function = {}) const;
  // Drops the blocks kept for constant inputs (RunOptions::constants) by this program and its
  // copies; call it before changing or freeing a tensor passed as a constant. Waits for runs in
  // progress.
  void ForgetConstants() const;
  // The bytes those blocks hold now.
  int64_t ConstantBytes() const;
  // Per target name ("cpu-avx512", "interp"), in name order: how the runs of this program and
  // its copies got their executables.
  std::vector<std::pair<std::string, CompileStats>> Stats() const;

 private:
  friend Status Run(const Program& program, const std::vector<Arg>& args,
                    const struct RunOptions& options);
  friend Status RunRanks(const Program& program, const std::vector<std::vector<Arg>>& rank_args,
                         const struct RunOptions& options, int64_t timeout_ms);
  friend struct ProgramInternals;  // the IR, for ptox's own code (src/driver/program_ir.h)
  struct Compiled;  // executables compiled for this program, per (function, target)
  // The module as written (calls included), and its entries: the functions no function calls,
  // with every call inlined (what runs and compiles).
  std::shared_ptr<const ir::Module> module_, entries_;
  std::shared_ptr<Compiled> compiled_;
};

// The most worker threads a run may ask for (RunOptions::num_threads, PTOX_NUM_THREADS).
inline constexpr int kMaxThreads = 1024;

// The worker threads a run gets when RunOptions::num_threads is 0: PTOX_NUM_THREADS when it is an
// integer in [1, kMaxThreads] (a warning on stderr otherwise), else one per CPU this process may
// run on (its affinity mask, as nproc counts).
int DefaultThreads();

struct RunOptions {
  std::string target = "interp";  // "interp", "cpu" (best ISA), "cpu-avx512", "cpu-avx2", ...
  std::string function;           // empty: the last function in the module
  // Worker threads, at most kMaxThreads; 0: PTOX_NUM_THREADS or one per core. Threads the host
  // refuses to create are a warning on stderr: the run goes on with those it got.
  int num_threads = 0;
  // A task that writes a NaN to a float tensor fails the run. The interpreter has no tasks: there
  // an output element the run changed to a NaN fails it (docs/runtime.md, Failure).
  bool check_nan = false;
  std::vector<TaskTrace>* trace = nullptr;  // when set, filled with every task that ran
  // Fuse tensor-level elementwise ops into shared kernels; false compiles one kernel per tensor
  // op (the baseline fusion is measured against). Tile-level programs are unaffected.
  bool fuse = true;
  // Tensor inputs (parameter names) whose contents stay the same from run to run, such as model
  // weights. Compiled targets keep the blocks their matmuls pack from these (B operands) across
  // runs of the program instead of packing them on every run, as a library's prepacked weights:
  // memory about the size of those inputs (Program::ConstantBytes). Blocks are found by address,
  // strides and extent: after changing a constant, call Program::ForgetConstants. A run that
  // finds the first row of a kept block changed fails instead of using stale data (a spot
  // check, not a guarantee). The interpreter packs nothing and ignores the list.
  std::vector<std::string> constants;
};

// Runs the program on `args` (one per parameter). Inputs are never modified; an output that
// aliases another argument is rejected. Returns kInvalid for bad arguments, kUnsupported for an
// unknown target, kRuntime for failures while running.
Status Run(const Program& program, const std::vector<Arg>& args, const RunOptions& options = {});

// Runs the program as a distributed run of `rank_args.size()` ranks simulated in this process
// (docs/distributed.md): rank r runs on its own thread with rank_args[r], dist.rank is r and
// dist.world_size the number of ranks, and collectives wait for every rank. The interpreter only
// (options.target "interp"); MPI processes are how compiled targets will run ranks. A rank that
// fails fails the run with "rank r: message" (the first rank that failed on its own), and the
// ranks waiting for it in a collective stop: nothing hangs (a collective that not every rank
// reaches within `timeout_ms` fails too).
Status RunRanks(const Program& program, const std::vector<std::vector<Arg>>& rank_args,
                const RunOptions& options = {}, int64_t timeout_ms = 60000);

// Overrides of the target capabilities that passes read (tile sizes, the on-chip budget); an
// unset field keeps the target's value. Golden tests pin them so that the IR does not depend on
// the host's caches (`ptox opt --caps=l2=1048576,onchip=4194304`). Every value set must
// be positive.
struct TargetCaps {
  std::optional<int64_t> l2_bytes;      // the per-core cache tiles are sized for
  std::optional<int64_t> onchip_bytes;  // the most bytes of tiles one incore scope may hold
  bool empty() const { return !l2_bytes && !onchip_bytes; }
};

// Runs IR passes over a program (ptox opt). Every pass is followed by the verifier.
struct TransformOptions {
  std::vector<std::string> passes;  // pass names in order (see ListPasses)
  // Whose capabilities (cache size, budget, tiling policy) passes read: a compiled target, or "interp"
  // (nominal capabilities; the interpreter runs tensor programs as written).
  std::string target = "cpu";
  TargetCaps caps;  // overrides of the target's capabilities
  // When set, receives (pass, milliseconds) for every pass run (--time-passes).
  std::vector<std::pair<std::string, double>>* timings = nullptr;
  // Called after each pass with its name and the resulting IR text (--print-ir-after-all).
  std::function<void(std::string_view pass, const std::string& ir_text)> after_pass;
};
Result<Program> Transform(const Program& program, const TransformOptions& options);
// (name, summary) of every pass; DefaultPipeline() lists the default order.
std::vector<std::pair<std::string, std::string>> ListPasses();
std::vector<std::string> DefaultPipeline(bool fuse = true);

// What `ptox compile` produces for a compiled target.
enum class Emit {
  kIr,      // the IR after the default pass pipeline (what codegen sees)
  kSource,  // the generated source
  kBinary,  // the path of the compiled shared object (in the compile cache; in a private
            // temporary folder when the cache is read-only for this user)
};
struct CompileOptions {
  std::string target = "cpu";
  std::string function;  // empty: the last function in the module
  Emit emit = Emit::kSource;
  bool fuse = true;  // as RunOptions::fuse
  // Capability overrides for the pass pipeline (as TransformOptions::caps); kIr and kSource
  // only: a binary is always built for the target's own capabilities (kInvalid otherwise).
  TargetCaps caps;
};
// Compiles (through the cache for kBinary) and returns the text or the binary's path.
Result<std::string> Compile(const Program& program, const CompileOptions& options);

// The persistent compile cache's folder: $PTOX_CACHE_DIR when set, else $HOME/.cache/ptox
// (/tmp/.cache/ptox without a HOME). Every front end and `ptox doctor` go by this one rule.
std::string CacheDir();
// What the cache holds.
struct CacheInfo {
  std::string dir;
  int64_t entries = 0;
  int64_t bytes = 0;
  int64_t corrupt = 0;  // entries that fail their checks (they are rebuilt when next used)
};
Result<CacheInfo> GetCacheInfo();
// Removes every cache entry and remembered compile failure; returns the number of files removed.
Result<int64_t> ClearCache();

// How far a compiled target may legitimately differ from the interpreter on `function`'s
// outputs: 0 when every op is exact (elementwise, casts, layout, max / min), else K * 2^-23 for
// the longest reordered reduction (row_sum / col_sum length, matmul K) — an output element then
// agrees within K * 2^-23 * (|ref| + max |ref|) (docs/ops.md states each op's bound), plus one
// ulp of a bf16 / f16 output (2^-7 / 2^-10 of it: a reordered result may round the other way).
// Tensor-level sums (tensor.sum, matmul, softmax, norms) are lowered to tiles of any shape and
// may feed each other, so their term counts add up; bounds over symbolic dims need `args`.
// The bound assumes what follows a reordered sum is well conditioned: an op that amplifies
// differences (rsqrt or a division near a cancellation, exp of a large sum) can take a conforming
// target past it, so a --check failure after such an op needs a look at the op-level bounds.
Result<double> ReorderBound(const Program& program, std::string_view function = {},
                            const std::vector<Arg>& args = {});

// Targets this build can run, best first.
std::vector<std::string> AvailableTargets();

// The name of every op ("tensor.add", "tile.load", ...), in src/ops/ops.def order: what front ends
// generate their op surface from.
std::vector<std::string> OpNames();

// One attribute an op takes: `{name = value}` in the text form, a keyword in Python. `kind` is
// "bool", "int", "float" or "string"; `values` the strings a string attribute accepts (empty:
// any); `pass_mark` marks one a pass sets, never written by users (fuse-tiles' `fused`).
struct OpAttr {
  std::string name;
  std::string kind;
  std::vector<std::string> values;
  bool pass_mark = false;
};
// The attributes of the op named `op` ("tensor.sum"), as src/ops/op_attrs.def declares them
// (what the verifier accepts); empty for an op without attributes or a name that is no op.
std::vector<OpAttr> OpAttrs(std::string_view op);

}  // namespace ptox
