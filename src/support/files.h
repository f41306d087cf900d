// File reads and writes that neither block nor leave partial files: reading
// refuses anything but a regular file (a FIFO would block, a directory reads as empty), writing
// goes to a temporary name that is renamed into place only when every byte is on disk.
#pragma once

#include <sys/stat.h>

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

// Writes `data` to the new file `path` (O_EXCL, mode `mode`). On failure
// removes what it wrote and returns false with errno set (ENOSPC for a full disk; PTOX_FAULT's
// `write` site fails here with ENOSPC after half the data). Not flushed to disk: readers verify
// what they read (cache entries carry a checksum).
bool WriteNewFile(const std::string& path, std::string_view data, mode_t mode = 0644);

// Whether a failed file operation's errno is the machine running out of something (a full disk
// or quota, an I/O error, memory): a runtime error, not a problem with what the user asked for.
bool IsResourceErrno(int err);

}  // namespace ptox
