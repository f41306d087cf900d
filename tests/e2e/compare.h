// Shared by the e2e tests: seeded arguments for a program's parameters, and a program run on
// every compiled target compared with the interpreter (bit-identical, or within the reorder
// bound), or required to fail the same way on every target.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host_tensor.h"
#include "ptox/ptox.h"

namespace ptox::testing {

using Dims = std::map<std::string, int64_t>;
// Scalar parameters by name: integers for index / integer params, doubles for f32 ones.
using Scalars = std::map<std::string, Arg>;

struct Buffers {
  std::vector<std::unique_ptr<HostTensor>> tensors;  // null for scalar parameters
  std::vector<Arg> args;
  std::vector<bool> is_out;
};

// A program from text (named case.pto in messages); a parse error fails the test.
Program Parse(const std::string& text);

// Arguments for every parameter: tensors of the bound shapes (float inputs uniform in [-2, 2)
// from `seed`, integer ones in [0, 8), outputs NaN-filled), scalars from `scalars`.
Buffers MakeArgs(const Program& prog, const Dims& dims, uint32_t seed, const Scalars& scalars = {});

// Runs `prog` on `options.target` over fresh copies of the seeded inputs; the run must succeed.
Buffers RunOn(const Program& prog, const Dims& dims, const RunOptions& options,
              const Scalars& scalars = {});

// Outputs agree within the reorder bound: |got - want| <= bound * (|want| + max |want|), NaN
// where the reference has NaN (bound 0: bit-identical values).
void ExpectClose(const Buffers& got, const Buffers& want, double bound, const std::string& what);

// Every compiled target, fused and unfused, against the interpreter; inputs stay untouched.
void CheckAllTargets(const Program& prog, const Dims& dims, const std::string& what,
                     const Scalars& scalars = {});

// The interpreter and every compiled target (fused and unfused) fail with a runtime error whose
// message contains each of `needles` (the op the user wrote, its position, the values); a compiled
// target's names the source file:line the interpreter's does (": at file:line:col").
void ExpectRuntimeErrorEverywhere(const Program& prog, const Dims& dims,
                                  const std::vector<std::string>& needles,
                                  const Scalars& scalars = {});

}  // namespace ptox::testing
