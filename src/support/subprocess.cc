// fork + a supervisor + pipes + poll: runs a child process in its own process group and
// collects both output streams without deadlocking on a full pipe.
//
// Why a supervisor: a compiler driver (g++) starts cc1plus, as and collect2 / ld; killing the
// driver alone leaves them running and writing their outputs. The program therefore runs as the
// leader of a new process group, and a supervisor (a fork of this process that never execs)
// waits for it: the supervisor gets SIGTERM when this process dies (PR_SET_PDEATHSIG, which
// fires on SIGKILL too) or times the program out, and then kills the whole group. Between
// fork and exec both children call only async-signal-safe functions (this process may have
// other threads).
#include "ptox/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

// Everything the children use, prepared before fork (they must not allocate).
struct SpawnPlan {
  const char* exe;
  char* const* argv;
  char* const* envp;
  int out_w, err_w,
      report_w;  // the program's stdout / stderr; exec failures (errno) go to report_w
  pid_t parent;
  sigset_t program_mask;  // the signal mask the program starts with
};

// The supervisor's view of the program's process group, for its SIGTERM handler.
volatile sig_atomic_t g_group = 0;

void KillGroup(int) {
  if (g_group > 0) kill(-g_group, SIGKILL);
}

void WriteErrno(int fd) {
  int e = errno;
  ssize_t ignored = write(fd, &e, sizeof e);
  (void)ignored;
}

// Closes every fd from `first` up (this process's other pipes must not stay open in the
// children: a reader would wait for them).
void CloseFrom(int first) {
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
  for (int fd = first; fd < 65536; ++fd) close(fd);
}

// The program: leader of a new process group, stdio from the plan, then exec.
[[noreturn]] void ExecProgram(const SpawnPlan& p) {
  setpgid(0, 0);
  fcntl(3, F_SETFD, FD_CLOEXEC);  // the exec-failure report closes on success
  signal(SIGTERM, SIG_DFL);
  sigprocmask(SIG_SETMASK, &p.program_mask, nullptr);
  execve(p.exe, p.argv, p.envp);
  WriteErrno(3);
  _exit(127);
}

// The supervisor (see the file comment). Fds: 0 /dev/null, 1 and 2 the output pipes, 3 the
// exec-failure report. Exits as the program did (re-raising its signal).
[[noreturn]] void Supervise(const SpawnPlan& p) {
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  struct sigaction term {};
  term.sa_handler = KillGroup;
  sigaction(SIGTERM, &term, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != p.parent) _exit(127);  // the parent died before the line above
  // Moved above 3 first: when this process had 0-2 closed, a pipe may sit where it goes.
  const int out = fcntl(p.out_w, F_DUPFD, 10), err = fcntl(p.err_w, F_DUPFD, 10);
  const int report = fcntl(p.report_w, F_DUPFD, 10);
  const int devnull = open("/dev/null", O_RDONLY);
  if (out < 0 || err < 0 || report < 0 || devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 ||
      dup2(err, 2) < 0 || dup2(report, 3) < 0) {
    WriteErrno(p.report_w);
    _exit(127);
  }
  CloseFrom(4);
  const pid_t child = fork();
  if (child == 0) ExecProgram(p);
  if (child < 0) {
    WriteErrno(3);
    _exit(127);
  }
  setpgid(child, child);  // as the child does: whichever runs first, the group exists
  g_group = child;
  close(1), close(2), close(3);  // the readers see EOF when the program's group is done
  sigset_t only_term;
  sigfillset(&only_term);
  sigdelset(&only_term, SIGTERM);
  sigprocmask(SIG_SETMASK, &only_term, nullptr);  // a pending SIGTERM is handled here
  siginfo_t info{};
  while (waitid(P_PID, child, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  // The program is a zombie, so its pid (the group's id) is not reused yet: kill what it left.
  kill(-child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

std::vector<char*> CStrings(const std::vector<std::string>& items) {
  std::vector<char*> out;
  for (const std::string& s : items) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Forks the supervisor with every signal blocked (no handler of this process may run in it);
// returns its pid, or -1 with errno set.
pid_t StartSupervisor(SpawnPlan& plan) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  plan.program_mask = old;
  plan.parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) Supervise(plan);
  const int err = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return pid;
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

std::optional<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                        const ProcessOptions& options) {
  if (argv.empty()) return errno = EINVAL, std::nullopt;
  std::optional<std::string> exe = FindExecutable(argv[0]);
  if (!exe) return errno = ENOENT, std::nullopt;
  Pipe out, err, report;
  if (pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0 ||
      pipe2(report.fd, O_CLOEXEC) != 0)
    return std::nullopt;
  std::vector<char*> cargv = CStrings(argv);
  std::vector<char*> cenv = options.env ? CStrings(*options.env) : std::vector<char*>();
  SpawnPlan plan{exe->c_str(),
                 cargv.data(),
                 options.env ? cenv.data() : environ,
                 out.fd[1],
                 err.fd[1],
                 report.fd[1],
                 0,
                 {}};
  const pid_t pid = StartSupervisor(plan);
  if (pid < 0) return std::nullopt;
  out.Close(1);
  err.Close(1);
  report.Close(1);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(report.fd[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {  // the program never started
    WaitExit(pid);
    errno = exec_errno;
    return std::nullopt;
  }
  ProcessResult r;
  if (!Drain(out.fd[0], err.fd[0], r, options.timeout_ms)) {
    r.timed_out = true;
    kill(pid, SIGTERM);  // the supervisor kills the program's group, then exits
  }
  r.exit_code = WaitExit(pid);
  return r;
}

}  // namespace ptox
