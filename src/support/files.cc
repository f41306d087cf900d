// ReadRegularFile / WriteFile over plain POSIX calls: the checks are on the opened descriptor
// (fstat), so the file cannot be swapped between the check and the read.
#include "ptox/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ptox/fault.h"

namespace ptox {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a device or socket";
}

// Closes on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    if (w == 0) return errno = EIO, false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

std::optional<std::string> ReadRegularFile(const std::string& path, std::string* error,
                                           const FileReadOptions& options) {
  // O_NONBLOCK: opening a FIFO would wait for a writer. Reads of a regular file never block.
  Fd f;
  f.fd =
      open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (options.no_follow ? O_NOFOLLOW : 0));
  if (f.fd < 0) {
    *error = errno == ELOOP && options.no_follow ? "not a regular file (a symbolic link)"
                                                 : std::string("cannot open: ") + strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (fstat(f.fd, &st) != 0) {
    *error = std::string("cannot stat: ") + strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = std::string("not a regular file (") + KindOf(st.st_mode) + ")";
    return std::nullopt;
  }
  if (options.stat) *options.stat = st;
  std::string bytes;
  char buf[65536];
  for (;;) {
    ssize_t r = read(f.fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      *error = std::string("cannot read: ") + strerror(errno);
      return std::nullopt;
    }
    if (r == 0) return bytes;
    bytes.append(buf, static_cast<size_t>(r));
  }
}

bool WriteFile(const std::string& path, std::initializer_list<std::string_view> parts,
               const FileWriteOptions& options, const char** failed_step) {
  const char* step = "open";
  Fd f;
  f.fd = open(path.c_str(),
              O_WRONLY | O_CREAT | O_CLOEXEC | (options.replace ? O_TRUNC : O_EXCL), options.mode);
  if (f.fd < 0) {
    if (failed_step) *failed_step = step;
    return false;
  }
  // PTOX_FAULT=write:N: this file fails half-way through, as on a full disk.
  const bool inject = fault::ShouldFail(fault::Site::kWrite);
  bool ok = true;
  step = "write";
  for (std::string_view part : parts) {
    ok = WriteAll(f.fd, part.data(), inject ? part.size() / 2 : part.size());
    if (ok && inject) errno = ENOSPC, ok = false;
    if (!ok) break;
  }
  int err = ok ? 0 : errno;
  // close() reports what a network file system defers (a full disk on NFS).
  if (close(f.fd) != 0 && ok) ok = false, err = errno, step = "close";
  f.fd = -1;
  if (ok) return true;
  unlink(path.c_str());  // never leave a truncated file behind
  if (failed_step) *failed_step = step;
  errno = err;
  return false;
}

bool IsResourceErrno(int err) {
  return err == ENOSPC || err == EDQUOT || err == EFBIG || err == EIO || err == ENOMEM;
}

}  // namespace ptox
