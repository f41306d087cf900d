// The C ABI between the host runtime and generated CPU kernels. Plain structs only: this header
// is compiled both into ptox and into every generated kernel, possibly by different compilers.
#pragma once

#include <cstdint>

namespace ptox::cpu {

inline constexpr int kMaxRank = 4;
// Bumped whenever the ABI or the tile library's semantics change; part of every cache key.
inline constexpr int kAbiVersion = 1;

struct TensorArg {
  void* data;
  int64_t rank;
  int64_t shape[kMaxRank];
  int64_t strides[kMaxRank];  // in elements
};

// One per function parameter: `t` for tensors, `i` for integer / bool scalars, `f` for floats.
struct Arg {
  TensorArg t;
  int64_t i;
  double f;
};

// Filled by a kernel that fails (code != 0): a runtime error message naming the op.
struct ErrorBuf {
  int code;
  char message[512];
};

// The entry point every generated module exports: returns 0, or non-zero with `err` filled.
using EntryFn = int (*)(const Arg* args, ErrorBuf* err);
inline constexpr const char* kEntrySymbol = "ptox_entry";

}  // namespace ptox::cpu
