// Arguments for running a program from the command line, shared by `ptox run` and `ptox bench`:
// the --function / --seed / --inputs / --dims / --scalars options, and the ptox::Arg list they
// give (inputs read from .npy files or seeded random, outputs allocated, symbols resolved).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptox/ptox.h"
#include "tools/ptox/npy.h"

namespace ptox::cli {

// What the shared options hold once parsed.
struct InputOptions {
  std::string function;  // the entry function, with or without '@'; empty: the last one
  uint64_t seed = 0;
  std::vector<std::string> inputs;   // one .npy per in / inout tensor parameter, in order
  std::vector<std::string> dims;     // "N=100" items
  std::vector<std::string> scalars;  // "alpha=0.5" items
  std::vector<std::string> constants;  // RunOptions::constants (--const)
};

// Adds --function, --seed, --inputs, --dims, --scalars and --const to `sub`, parsed into `opts` (which
// must outlive the parse).
void AddInputOptions(CLI::App& sub, InputOptions& opts);

// One slot per parameter: an array for tensor parameters, empty for scalars.
using Arrays = std::vector<std::optional<NpyArray>>;

bool IsInput(const ParamInfo& p);   // an in / inout tensor parameter
bool IsOutput(const ParamInfo& p);  // an out / inout tensor parameter

// Splits "NAME=VALUE" items (a leading '%' in NAME is dropped); `flag` names the option in
// messages. A malformed or repeated item is kInvalid.
Result<std::map<std::string, std::string>> ParseAssignments(const std::vector<std::string>& items,
                                                            const std::string& flag);

// A whole decimal integer, or nothing.
std::optional<int64_t> ParseInt(const std::string& text);

// The argument list for ptox::Run: views of `arrays`, scalars from --scalars (already split).
Result<std::vector<Arg>> BuildArgs(const std::vector<ParamInfo>& params, Arrays& arrays,
                                   const std::map<std::string, std::string>& scalars);

// Everything a run of one function needs. `args` views `arrays`: keep them together (moving the
// struct keeps the views valid; copying it does not).
struct PreparedRun {
  std::vector<ParamInfo> params;
  std::map<std::string, std::string> scalars;  // --scalars, split
  Arrays arrays;  // inputs read or generated, outputs 0xFF-filled (NaN for floats)
  std::vector<Arg> args;
};

// Fails unless this host can run `target` on `prog`, with the driver's reason (an unknown name,
// or the ISA features the host lacks); "cpu" always passes (Run() picks the best CPU target).
Status CheckTarget(const Program& prog, const std::string& target);

// Prepares the arguments of `opts.function` (its '@' already removed) in `prog`: --dims parsed,
// --inputs read and checked against their parameters, the other inputs seeded random, outputs
// allocated, scalars parsed. Bad options are kInvalid with a message naming the option.
Result<PreparedRun> PrepareRun(const Program& prog, const InputOptions& opts);

}  // namespace ptox::cli
