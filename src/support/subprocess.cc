// posix_spawn + pipes + poll: runs a child process and collects both output streams without
// deadlocking on a full pipe.
#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

extern char** environ;

namespace ptox {
namespace {

// Closes the fds it owns on scope exit.
struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() { CloseAll(); }
  void Close(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
  void CloseAll() {
    Close(0);
    Close(1);
  }
};

// Reads from both pipes until both reach EOF or the deadline passes.
bool Drain(int out_fd, int err_fd, ProcessResult& r, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // deadline reached, or poll failed
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[i].fd = -1;
        --open;
      } else {
        sinks[i]->append(buf, static_cast<size_t>(got));
      }
    }
  }
  return true;
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::optional<std::string> FindExecutable(const std::string& name,
                                          const std::vector<std::string>& extra_dirs) {
  if (name.find('/') != std::string::npos) {
    return access(name.c_str(), X_OK) == 0 ? std::optional(name) : std::nullopt;
  }
  std::vector<std::string> dirs;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  for (size_t start = 0; start <= p.size();) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    dirs.push_back(end == start ? "." : p.substr(start, end - start));
    start = end + 1;
  }
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  for (const std::string& d : dirs) {
    std::string full = d + "/" + name;
    if (access(full.c_str(), X_OK) == 0) return full;
  }
  return std::nullopt;
}

std::optional<ProcessResult> RunProcess(const std::vector<std::string>& argv, int timeout_ms) {
  if (argv.empty()) return std::nullopt;
  std::optional<std::string> exe = FindExecutable(argv[0]);
  if (!exe) return std::nullopt;
  Pipe out, err;
  if (pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe->c_str(), &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return std::nullopt;
  out.Close(1);
  err.Close(1);
  ProcessResult r;
  if (!Drain(out.fd[0], err.fd[0], r, timeout_ms)) {
    r.timed_out = true;
    kill(pid, SIGKILL);
  }
  r.exit_code = WaitExit(pid);
  return r;
}

}  // namespace ptox
