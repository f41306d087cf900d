// Subcommand registration: each cmd_<name>.cc adds one CLI11 subcommand and its handler.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "ptox/manifest.h"
#include "ptox/ptox.h"
#include "ptox/status.h"

namespace ptox::cli {

// A subcommand's handler runs after parsing succeeded; it returns the process exit code.
using Handler = std::function<int()>;

Handler RegisterRun(CLI::App& app);
Handler RegisterBench(CLI::App& app);
Handler RegisterOpt(CLI::App& app);
Handler RegisterDoctor(CLI::App& app);
Handler RegisterCompile(CLI::App& app);
Handler RegisterCache(CLI::App& app);
Handler RegisterGenerate(CLI::App& app);
Handler RegisterQuantize(CLI::App& app);
Handler RegisterVersion(CLI::App& app);

// The Python that runs the subcommands written in Python and that `ptox doctor` checks:
// $PTOX_PYTHON, else the project's virtual environment, else python3 on PATH.
std::string PythonExecutable();
// "bf1b0ea5e606-dirty": a build manifest's commit, short (as git describe --dirty).
std::string ShortCommit(const std::string& commit, bool dirty);

// Prints a failed status to stderr and returns its exit code (DESIGN.md: 1 invalid, 2
// unsupported, 3 toolchain, 4 runtime, 70 internal).
int Fail(const Status& status);

// `--caps=l2=1M,onchip=4M` (any subset; K / M / G are binary multiples) ->
// capability overrides; a malformed item is kInvalid, naming the known capabilities.
Result<TargetCaps> ParseCaps(const std::string& spec);

}  // namespace ptox::cli
