// File reads and writes that neither block nor leave partial files, for the library and every
// front end: reading refuses anything but a regular file (a FIFO would block, a directory reads
// as empty), a failed write removes what it wrote.
#pragma once

#include <sys/stat.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace ptox {

struct FileReadOptions {
  bool no_follow = false;       // refuse a symbolic link as the final component (O_NOFOLLOW)
  struct stat* stat = nullptr;  // when set, receives the opened file's fstat
};

// The whole content of the regular file at `path`; nullopt with `*error` set ("cannot open: No
// such file or directory", "not a regular file (a directory)") otherwise.
std::optional<std::string> ReadRegularFile(const std::string& path, std::string* error,
                                           const FileReadOptions& options = {});

struct FileWriteOptions {
  bool replace = false;  // false: `path` must not exist (O_EXCL); true: created or truncated
  mode_t mode = 0644;    // of a file it creates (less the umask)
};

// Writes the concatenation of `parts` to `path`. On failure removes what it wrote and returns
// false with errno set (ENOSPC for a full disk; PTOX_FAULT's `write` site fails here with ENOSPC
// half-way through the first part) and, when `failed_step` is set, "open", "write" or "close"
// there. Not flushed to disk: readers verify what they read (cache entries carry a checksum).
bool WriteFile(const std::string& path, std::initializer_list<std::string_view> parts,
               const FileWriteOptions& options = {}, const char** failed_step = nullptr);

// Whether a failed file operation's errno is the machine running out of something (a full disk
// or quota, an I/O error, memory): a runtime error, not a problem with what the user asked for.
bool IsResourceErrno(int err);

}  // namespace ptox
