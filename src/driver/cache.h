// The persistent compile cache: build artifacts under ptox::CacheDir() (created 0700), one entry
// per key. An entry is <key>.<ext> (the target's artifact_extension(): "so" for the CPU targets)
// plus <key>.sum, a small text record of the key, the build identity's hash and the artifact's
// XXH3-128; the artifact also carries its key (targets::KeyStamp). An entry is used only when all
// of these match what the caller asks for; anything else (truncated, corrupted, another program's
// binary, a symlink, a folder) is a miss and is rebuilt. Entries are written under temporary names
// and renamed, so processes compiling the same kernel at once all succeed. A build the compiler
// rejected leaves <key>.failed, a record of its error, and <key>.failed.cc, the source its error
// names (LookupFailure). docs/security.md has the trust model.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ptox/status.h"
#include "support/hash.h"

namespace ptox::driver {

// The subfolder of the cache that holds built preludes (CompiledTarget::BuildPrelude: precompiled
// headers of the tile library), entries of the same format keyed by the prelude and the build
// identity.
inline constexpr const char* kPreludeFolder = "prelude";

class CompileCache {
 public:
  // Opens ptox::CacheDir(), creating it (0700) when missing. Throws
  // kRuntime when it cannot be created or is refused: not a folder, owned by another user than
  // this one or root, or writable by group or others (anyone who can write it could run code in
  // this process). A trusted folder this user cannot write is used read-only.
  CompileCache();
  // The same for the folder `dir` (the cache's prelude folder, under ptox::CacheDir()).
  explicit CompileCache(std::string dir);

  const std::string& dir() const { return dir_; }
  bool writable() const { return writable_; }

  // The path of the valid entry for `key` built with build identity hash `identity`, or nullopt.
  // `ext` is the artifact's file name extension.
  std::optional<std::string> Lookup(const std::string& key, const std::string& identity,
                                    const std::string& ext) const;

  // An artifact built for a key: the installed entry, or a temporary file (a read-only
  // cache, or an entry that could not be installed) that the caller removes with Discard once
  // it is loaded.
  struct Built {
    std::string path;
    bool temporary = false;
    std::string scratch_dir;  // the private folder of a read-only cache's build, removed with it
  };
  // Runs build(tmp_path, failure_stem) to produce the artifact, then installs it atomically as
  // the entry for `key`. Leaves no temporary file behind when build throws; a failed install is a
  // warning and the build is used uncached. A failed build's files that its error names are
  // failure_stem + an extension ("<key>.failed.cc"); when it throws targets::BuildRejected, the
  // failure is recorded as <key>.failed (LookupFailure) before the error goes on.
  Built Insert(const std::string& key, const std::string& identity, const std::string& ext,
               const std::function<void(const std::string& tmp_path,
                                        const std::string& failure_stem)>& build) const;
  // The error of a build of `key` with build identity hash `identity` that the compiler
  // rejected less than kFailureLifetimeS seconds ago (the recorded message and a line saying it was
  // remembered), or nullopt. Another build of the same key would fail the same way: the key
  // hashes the source, the compiler (path, size, mtime), its flags and environment, and the
  // kernel library. What the key does not cover (a system header installed since) is why a
  // record expires, and `ptox cache clear` removes it at once.
  std::optional<Status> LookupFailure(const std::string& key, const std::string& identity) const;
  static constexpr int64_t kFailureLifetimeS = 3600;
  // Removes a temporary build (and its private folder); nothing for an installed entry.
  static void Discard(const Built& built);

  struct Info {
    std::string dir;
    int64_t entries = 0;
    int64_t bytes = 0;
    // Entries failing a check a lookup makes (any but the build identity, which only the entry's
    // target can judge): they would be rebuilt.
    int64_t corrupt = 0;
  };
  Info Stats() const;
  // Removes every entry and the leftovers of builds that are no longer running, those of the
  // prelude folder too; returns how many files went.
  int64_t Clear() const;

 private:
  std::string dir_;
  bool writable_ = true;
};

}  // namespace ptox::driver
