// Fault injection for tests: PTOX_FAULT makes chosen thread creations, file writes or compiles
// fail, so error paths run deterministically (no ulimit, full disk or broken compiler needed).
//
//   PTOX_FAULT=thread:3          the 3rd thread creation of the process fails (EAGAIN)
//   PTOX_FAULT=write:2+          the 2nd file write and every later one fail (ENOSPC, mid-file)
//   PTOX_FAULT=compile:1,thread:1+   several sites, comma-separated
//
// Sites: `thread` (the runtime's worker threads), `write` (each file ptox writes: .npy outputs,
// traces, cache entries, generated sources), `compile` (each invocation of the target
// compiler; it fails after the compiler ran). Counts are per process and start at 1. Unset, a
// check costs one relaxed atomic load. A malformed value is reported on stderr once and ignored.
#pragma once

namespace ptox::fault {

enum class Site { kThread, kWrite, kCompile };

// Counts one occurrence of `site`; true when PTOX_FAULT says this occurrence fails.
bool ShouldFail(Site site);

// Re-reads PTOX_FAULT and restarts the counts (for tests that change it in-process).
void Reset();

}  // namespace ptox::fault
