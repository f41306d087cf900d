// One differential check of a program: the interpreter and one compiled target run it over
// identical guarded inputs in a forked child (so that a crash or a hang is a finding, not the
// fuzzer's end), and their statuses and outputs are compared under docs/ops.md's rules.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ptox/ptox.h"

namespace ptox::fuzz {

enum class Category {
  kOk,
  kInvalidProgram,  // the generator's fault: the program does not verify or its arguments bind
                    // wrongly (never a finding, always a fuzzer bug)
  kCrash,           // the child died of a signal
  kHang,            // the child ran past the time limit
  kInternal,        // kInternal from the interpreter or a target
  kToolchain,       // the generated code did not compile
  kUnsupported,     // a target answered kUnsupported where the interpreter ran the program
  kRejected,        // a target answered kInvalid where the interpreter ran the program
  kSpuriousError,   // a target failed at run time where the interpreter succeeded
  kMissedError,     // the interpreter failed at run time where the target succeeded
  kWrongBits,       // an output differs where ReorderBound is 0 (bit-exact ops only)
  kWrongBound,      // an output differs by more than 16 times the documented bound
  kNearBound,       // ... by more than the bound, less than 16 times it (a reordered sum
                    // feeding an ill-conditioned op can do that legitimately)
  kNanMismatch,     // NaN in one result where the other has a number
  kOutOfBounds,     // a write outside an argument's elements (guard bytes changed)
  kInputModified,   // an `in` tensor changed
};
std::string_view CategoryName(Category c);
// Whether failures of this category are told apart by their message (errors, crashes, missed
// run-time errors: the interpreter's message) rather than by the ops they need (wrong results).
bool KeyedByMessage(Category c);

// How input tensors are filled.
enum class Inputs {
  kCli,     // exactly what `ptox run --seed S` generates: floats uniform in [-1, 1), ints in
            // [-8, 8], bools 0 / 1 (so a reproducer needs no input files)
  kEdge,    // the conformance catalogue (tests/conformance/values.cc): NaN, +-Inf, +-0,
            // subnormals, huge values, rounding ties; small integers
  kReduce,  // the conformance reduction pattern: all-negative lines, ties, +-0 lines, one
            // NaN / Inf per few lines, nothing that overflows a sum
};
std::string_view InputsName(Inputs k);
bool ParseInputs(std::string_view text, Inputs& out);

// A program and everything a run of it needs.
struct Case {
  std::string text;
  std::map<std::string, int64_t> dims;         // symbol sizes (--dims)
  std::map<std::string, std::string> scalars;  // scalar parameters (--scalars)
  Inputs inputs = Inputs::kCli;
  uint64_t seed = 0;  // input values
};

struct Config {
  std::string target;
  bool fuse = true;
};

struct Outcome {
  Category category = Category::kOk;
  std::string detail;  // what went wrong, for the report (one line first)
};

// Runs `c` on the interpreter and on `config` in a forked child with a wall-clock limit.
// `stderr_path` receives the child's stderr (its tail goes into crash and hang reports).
Outcome Check(const Case& c, const Config& config, double timeout_s,
              const std::string& stderr_path);

// The same check in this process (what the child runs); `stage` hears which step begins
// ("interp", "target", "compare"), so that a crash can be placed.
Outcome CheckInProcess(const Case& c, const Config& config,
                       const std::function<void(std::string_view)>& stage = {});

// The argument values of `c` for `params` (inputs filled, outputs 0xFF as `ptox run` does),
// written as .npy files into `dir` (one per in / inout tensor, in parameter order); returns
// their paths.
std::vector<std::string> WriteInputs(const Case& c, const std::vector<ParamInfo>& params,
                                     const std::string& dir);

}  // namespace ptox::fuzz
