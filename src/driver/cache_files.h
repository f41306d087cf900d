// The compile cache's temporary files and their housekeeping. Every build in the cache folder
// has a token, "<pid>.<random>", and names all its temporary files after it:
//
//   <key>.lock.tmp.<token>     held (flock) by the building process from start to finish
//   <key>.<ext>.tmp.<token>    the compiler's output, renamed to <key>.<ext> when installed
//                              (<ext>: the target's artifact extension, "so" on the CPU)
//   <key>.<ext>.tmp.<token>.cc the generated source, moved to <key>.failed.cc when the compiler
//                              fails (the file its error names; one per key, however often)
//   <key>.sum.tmp.<token>      the entry record, renamed to <key>.sum
//   <key>.failed.tmp.<token>   the record of a rejected build, renamed to <key>.failed
//
// A lock that can be taken belongs to a build whose process died (a lock goes with its process,
// whatever kills it, across pid namespaces): its files are removed. Temporary files without a
// lock are leftovers of finished builds (a source that could not be moved aside, or one an older
// ptox kept) and go after a day.
#pragma once

#include <cstdint>
#include <string>

namespace ptox::driver::cache_files {

// A fresh token, unique across processes and threads.
std::string NewToken();
// "<base>.<what>.tmp.<token>", e.g. TempName("/c/0ab1", "so", "12.34") = "/c/0ab1.so.tmp.12.34".
std::string TempName(const std::string& base, const std::string& what, const std::string& token);

// The lock of one build, held while the object lives; the file goes with it.
class BuildLock {
 public:
  BuildLock(const std::string& base, const std::string& token);
  ~BuildLock();
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;
  bool held() const { return fd_ >= 0; }  // false when the file could not be made (errno set)

 private:
  std::string path_;
  int fd_ = -1;
};

// Removes what dead builds left in `dir` (see the file comment); once per folder per process.
void SweepStale(const std::string& dir);

// Removes every entry and every temporary file of builds not running now; returns the count.
int64_t RemoveAll(const std::string& dir);

}  // namespace ptox::driver::cache_files
