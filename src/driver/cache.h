// The persistent compile cache: content-addressed shared objects under $PTOX_CACHE_DIR (default
// ~/.cache/ptox, created 0700). Each entry is <key>.so plus <key>.sum, the XXH3-128 of the .so;
// an entry whose sum does not match (truncated, corrupted) is rebuilt. Entries are written to a
// temporary file and renamed, so processes compiling the same kernel at once all succeed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ptox::driver {

// Lower-case hex of the XXH3-128 hash of `data`.
std::string HashHex(std::string_view data);

class CompileCache {
 public:
  // The cache folder, created (0700) if missing. Throws kRuntime when it cannot be created.
  static std::string Dir();

  // The path of a valid entry for `key`, or nullopt (missing or failing its checksum).
  std::optional<std::string> Lookup(const std::string& key) const;
  // Runs build(tmp_path) to produce the shared object, then installs it atomically as the entry
  // for `key`; returns the entry's path.
  std::string Insert(const std::string& key,
                     const std::function<void(const std::string& tmp_path)>& build) const;

  struct Info {
    std::string dir;
    int64_t entries = 0;
    int64_t bytes = 0;
  };
  Info Stats() const;
  // Removes every entry (and leftovers of interrupted builds); returns how many files went.
  int64_t Clear() const;
};

}  // namespace ptox::driver
