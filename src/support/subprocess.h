// Running a program without a shell (posix_spawn) and capturing its stdout, stderr and exit code;
// used by the CPU toolchain, `ptox doctor` and the CLI tests.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ptox {

struct ProcessResult {
  int exit_code = -1;  // the exit status; 128 + signal number when killed by a signal
  bool timed_out = false;
  std::string out;  // everything written to stdout
  std::string err;  // everything written to stderr
};

// Runs argv[0] (a path, or a name searched on PATH) with stdin from /dev/null. Returns nullopt
// when the program cannot be started. A run longer than timeout_ms is killed (timed_out = true).
std::optional<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                        int timeout_ms = 30000);

// The full path of an executable named `name` in PATH, then in `extra_dirs`; nullopt if absent.
std::optional<std::string> FindExecutable(const std::string& name,
                                          const std::vector<std::string>& extra_dirs = {});

}  // namespace ptox
