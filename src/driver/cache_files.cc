// Build tokens, build locks (flock) and the sweep of stale temporary files (see cache_files.h).
#include "driver/cache_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <vector>

namespace ptox::driver::cache_files {
namespace {

namespace fs = std::filesystem;

// Leftovers without a lock (a failed compile's source that could not be moved aside) stay this
// long.
constexpr auto kLocklessAge = std::chrono::hours(24);

// The token of a temporary file name ("...tmp.<pid>.<random>[.cc]"), or "" for other files.
std::string TokenOf(const std::string& name) {
  size_t at = name.find(".tmp.");
  if (at == std::string::npos) return "";
  at += 5;
  size_t dot = name.find('.', at);
  if (dot == std::string::npos || dot == at) return "";
  size_t end = name.find('.', dot + 1);
  std::string token = name.substr(at, end == std::string::npos ? end : end - at);
  for (char c : token)
    if (c != '.' && (c < '0' || c > '9')) return "";
  return token;
}

bool IsLock(const std::string& name) { return name.find(".lock.tmp.") != std::string::npos; }

// Whether the build that owns the lock file at `path` is gone: its lock can be taken.
bool Abandoned(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;  // gone meanwhile: its owner finished and cleaned up
  const bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return free;
}

// The temporary files of `dir` grouped by token; the lock (if any) of each token in `locks`.
struct Temps {
  std::map<std::string, std::vector<fs::path>> files;  // without the lock
  std::map<std::string, fs::path> locks;
};

Temps ListTemps(const std::string& dir) {
  Temps t;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string token = TokenOf(name);
    if (token.empty()) continue;
    if (IsLock(name))
      t.locks[token] = e.path();
    else
      t.files[token].push_back(e.path());
  }
  return t;
}

// Removes the files of a token whose lock was abandoned, the lock last; returns how many.
int64_t RemoveToken(const Temps& t, const std::string& token) {
  int64_t n = 0;
  std::error_code ec;
  if (auto it = t.files.find(token); it != t.files.end())
    for (const fs::path& p : it->second) n += fs::remove(p, ec) ? 1 : 0;
  if (auto it = t.locks.find(token); it != t.locks.end()) n += fs::remove(it->second, ec) ? 1 : 0;
  return n;
}

bool OlderThan(const fs::path& p, std::chrono::hours age) {
  struct stat st {};
  if (lstat(p.c_str(), &st) != 0) return false;
  const auto mtime = std::chrono::system_clock::from_time_t(st.st_mtime);
  return std::chrono::system_clock::now() - mtime > age;
}

// "<key>.<ext>": a key is the 32 hex digits of an XXH3-128 (HashHex); any target's artifact
// extension, and the .sum record.
bool IsEntry(const std::string& name) {
  const size_t dot = name.find('.');
  return dot == 32 && dot + 1 < name.size() &&
         name.find_first_not_of("0123456789abcdef") == dot;
}

}  // namespace

std::string NewToken() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(getpid()));
  return std::to_string(getpid()) + "." + std::to_string(rng());
}

std::string TempName(const std::string& base, const std::string& what, const std::string& token) {
  return base + "." + what + ".tmp." + token;
}

BuildLock::BuildLock(const std::string& base, const std::string& token)
    : path_(TempName(base, "lock", token)) {
  fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ >= 0 && flock(fd_, LOCK_EX) != 0) {
    close(fd_);
    unlink(path_.c_str());
    fd_ = -1;
  }
}

BuildLock::~BuildLock() {
  if (fd_ < 0) return;
  unlink(path_.c_str());  // before the unlock: a sweeper never sees a free lock of a live build
  close(fd_);
}

void SweepStale(const std::string& dir) {
  static std::mutex mu;
  static std::set<std::string> swept;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!swept.insert(dir).second) return;
  }
  Temps t = ListTemps(dir);
  std::error_code ec;
  for (const auto& [token, lock] : t.locks)
    if (Abandoned(lock.string())) RemoveToken(t, token);
  for (const auto& [token, files] : t.files) {
    if (t.locks.count(token)) continue;  // a running build, or one just removed above
    for (const fs::path& p : files)
      if (OlderThan(p, kLocklessAge)) fs::remove(p, ec);
  }
}

int64_t RemoveAll(const std::string& dir) {
  int64_t n = 0;
  std::error_code ec;
  Temps t = ListTemps(dir);
  for (const auto& [token, files] : t.files) {
    auto lock = t.locks.find(token);
    if (lock != t.locks.end() && !Abandoned(lock->second.string())) continue;  // running
    n += RemoveToken(t, token);
  }
  for (const auto& [token, lock] : t.locks)
    if (!t.files.count(token) && Abandoned(lock.string())) n += fs::remove(lock, ec) ? 1 : 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const fs::path& p = e.path();
    if (IsEntry(p.filename().string()) && TokenOf(p.filename().string()).empty() && e.is_regular_file(ec) &&
        fs::remove(p, ec))
      ++n;
  }
  return n;
}

}  // namespace ptox::driver::cache_files
