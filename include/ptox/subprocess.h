// Running a program without a shell and capturing its stdout, stderr and exit code; used by the
// CPU toolchain, `ptox doctor` and the CLI tests.
//
// The program runs in a process group of its own, watched by a small supervisor process: a
// timeout, or the death of the calling process (even by SIGKILL), kills the whole group — a
// compiler driver and the cc1plus / as / ld it started — so no compile outlives ptox.
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

struct ProcessOptions {
  int timeout_ms = 30000;  // then the program's process group is killed (timed_out = true)
  // The program's environment ("NAME=value" items); nullopt: this process's environment.
  std::optional<std::vector<std::string>> env;
};

// Runs argv[0] (a path, or a name searched on PATH) with stdin from /dev/null. Returns nullopt
// when the program cannot be started, with errno saying why (ENOENT, EACCES, EAGAIN when the
// process limit is reached).
std::optional<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                        const ProcessOptions& options);
inline std::optional<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                               int timeout_ms = 30000) {
  return RunProcess(argv, ProcessOptions{.timeout_ms = timeout_ms});
}

// The full path of an executable named `name` in PATH, then in `extra_dirs`; nullopt if absent.
std::optional<std::string> FindExecutable(const std::string& name,
                                          const std::vector<std::string>& extra_dirs = {});

}  // namespace ptox
