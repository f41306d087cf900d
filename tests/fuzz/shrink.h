// Test-case reduction for the program fuzzer: a failing program is made smaller (fewer stores,
// ops replaced by parameters or constants, loops unwrapped, smaller dims, plain inputs) for as
// long as it still fails the same way.
#pragma once

#include <chrono>
#include <string>

#include "differential.h"
#include "program_model.h"

namespace ptox::fuzz {

// A failure: the model it came from and the run that showed it.
struct Finding {
  Program program;
  Case c;
  Config config;
  Outcome outcome;
};

struct ShrinkLimits {
  int max_checks = 150;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  double timeout_s = 120;
  std::string stderr_path;
};

// The Case of `p` with these inputs: its text, the sizes of its symbols, its scalars.
Case ToCase(const Program& p, Inputs inputs, uint64_t seed);

// The detail of an outcome without what differs from run to run of one bug: the target's
// name, numbers, value names, positions and which float type.
std::string Gist(const std::string& detail);

// Whether `o` shows the same failure as `want`: the same category and, for errors, the same gist.
bool SameFailure(const Outcome& o, const Outcome& want);

// Shrinks `f` in place; returns the number of checks it ran.
int Shrink(Finding& f, const ShrinkLimits& limits);

}  // namespace ptox::fuzz
