// Compile cache implementation (see cache.h for the on-disk format and its guarantees, and
// docs/security.md for why the folder and every entry are checked before anything is loaded).
#include "driver/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "driver/cache_files.h"
#include "ptox/files.h"
#include "ptox/ptox.h"
#include "support/error.h"
#include "support/warn.h"
#include "targets/target.h"

namespace ptox::driver {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRecordMagic = "ptox-cache-entry 2";

// The .sum record: what an entry is for and what its artifact must hash to.
std::string Record(const std::string& key, const std::string& identity, const std::string& so) {
  return std::string(kRecordMagic) + "\nkey " + key + "\nidentity " + identity + "\nso " + so +
         "\n";
}

constexpr std::string_view kFailureMagic = "ptox-cache-failure 1";

// The <key>.failed record: the rejected build's key and identity, then its status code and
// message.
std::string FailureRecord(const std::string& key, const std::string& identity, const Error& error) {
  return std::string(kFailureMagic) + "\nkey " + key + "\nidentity " + identity + "\ncode " +
         std::to_string(static_cast<int>(error.code())) + "\n" + error.what();
}

// A file of the cache that may be used: a regular file (never a symlink: ReadRegularFile with
// no_follow) owned by this user or root and writable by nobody else.
bool Trusted(const struct stat& st) {
  return (st.st_uid == geteuid() || st.st_uid == 0) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::optional<std::string> ReadTrusted(const std::string& path) {
  std::string why;
  struct stat st {};
  std::optional<std::string> bytes = ReadRegularFile(path, &why, {.no_follow = true, .stat = &st});
  if (!bytes || !Trusted(st)) return std::nullopt;
  return bytes;
}

// The build identity hash a .sum record names ("" when it names none).
std::string RecordedIdentity(const std::string& record) {
  constexpr std::string_view kField = "\nidentity ";
  const size_t at = record.find(kField);
  if (at == std::string::npos) return "";
  const size_t begin = at + kField.size();
  return record.substr(begin, record.find('\n', begin) - begin);
}

// Whether the record `sum_path` and the artifact `artifact_path` are an entry a lookup may use for
// `key`: both trusted, the record exactly the one Insert writes for this artifact (with build
// identity hash `identity`, or with the one it names when nullopt: only its target can judge
// that), and the artifact carrying its key.
bool Valid(const std::string& sum_path, const std::string& artifact_path, const std::string& key,
           const std::optional<std::string>& identity) {
  std::optional<std::string> record = ReadTrusted(sum_path);
  if (!record) return false;
  std::optional<std::string> artifact = ReadTrusted(artifact_path);
  if (!artifact) return false;
  const std::string id = identity ? *identity : RecordedIdentity(*record);
  // The artifact names its key itself: another program's never passes for this one.
  return *record == Record(key, id, HashHex(*artifact)) &&
         artifact->find(targets::KeyStamp(key)) != std::string::npos;
}

// Creates `dir` (0700) unless it is a folder already; throws kRuntime when it cannot.
void Create(const std::string& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  fs::create_directories(fs::path(dir).parent_path(), ec);
  // EEXIST is fine only when another process made the folder meanwhile (not for a file).
  const int err = mkdir(dir.c_str(), 0700) == 0 ? 0 : errno;
  if (err != 0 && (err != EEXIST || !fs::is_directory(dir, ec))) {
    throw Error(StatusCode::kRuntime, "runtime error: cannot create the compile cache " + dir +
                                          ": " + strerror(err) +
                                          " (set PTOX_CACHE_DIR to a writable folder)");
  }
}

// Refuses a folder that someone else could write (as ssh treats its configuration); returns
// whether this user may write it.
bool CheckTrust(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    throw Error(StatusCode::kRuntime,
                "runtime error: cannot use the compile cache " + dir + ": " + strerror(errno));
  const std::string refuse = "runtime error: refusing the compile cache " + dir + ": ";
  const std::string fix =
      "; anyone who can write it can run code in this process (set "
      "PTOX_CACHE_DIR to a folder of your own; docs/security.md)";
  if (st.st_uid != geteuid() && st.st_uid != 0)
    throw Error(StatusCode::kRuntime, refuse + "it belongs to uid " + std::to_string(st.st_uid) +
                                          ", not to this user (uid " + std::to_string(geteuid()) +
                                          ") or root" + fix);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error(StatusCode::kRuntime, refuse + "it is writable by group or others (mode " + mode +
                                          "; chmod go-w " + dir + ")" + fix);
  }
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

// Builds into a private temporary folder: the cache is read-only for this user.
CompileCache::Built BuildPrivate(
    const std::string& dir, const std::string& key, const std::string& ext,
    const std::function<void(const std::string&, const std::string&)>& build) {
  static std::once_flag warned;
  std::call_once(warned, [&] {
    Warn("the compile cache " + dir +
         " is read-only for this user: kernels compiled now are not kept (docs/security.md)");
  });
  std::string scratch = (fs::temp_directory_path() / "ptox-build-XXXXXX").string();
  PTOX_RUNTIME_CHECK(mkdtemp(scratch.data()) != nullptr)
      << "cannot create a build folder " << scratch << ": " << strerror(errno);
  CompileCache::Built built{scratch + "/" + key + "." + ext, true, scratch};
  try {
    build(built.path, scratch + "/" + key + ".failed");
  } catch (...) {
    std::remove(built.path.c_str());  // the folder stays: it holds the kept source
    throw;
  }
  return built;
}

// An flock on the cache folder for the scope: installs (two renames, exclusive) and lookups
// (two reads, shared) of concurrent processes do not interleave, so a reader never sees one
// build's artifact with another's .sum, and concurrent installs of one key leave a matching pair.
// Where the file system has no flock on folders, nothing is locked (a mixed pair is then a miss
// and is rebuilt).
class FolderLock {
 public:
  FolderLock(const std::string& dir, bool exclusive) {
    fd_ = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ >= 0 && flock(fd_, exclusive ? LOCK_EX : LOCK_SH) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~FolderLock() {
    if (fd_ >= 0) close(fd_);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// Renames `from` to `to`, first removing what is in the way when `to` is a folder.
bool Rename(const std::string& from, const std::string& to, std::string* error) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec && fs::is_directory(fs::symlink_status(to))) {
    fs::remove_all(to, ec);
    fs::rename(from, to, ec);
  }
  if (ec) *error = "cannot rename to " + to + ": " + ec.message();
  return !ec;
}

// Installs the built <base>.<ext>.tmp.<token> as <base>.<ext> with `record` as <base>.sum. On
// failure (`why` says what) the built file stays where it is, for use uncached; an artifact
// installed without its record is a miss for later lookups, which rebuild it.
bool Install(const std::string& dir, const std::string& base, const std::string& ext,
             const std::string& token, const std::string& record, std::string* why) {
  const std::string tmp = cache_files::TempName(base, ext, token);
  const std::string sum_tmp = cache_files::TempName(base, "sum", token);
  // Modes whatever the umask: a group-writable entry would be refused.
  if (!WriteFile(sum_tmp, {record}) || chmod(sum_tmp.c_str(), 0644) != 0 ||
      chmod(tmp.c_str(), 0644) != 0) {
    *why = "cannot write " + sum_tmp + ": " + strerror(errno);
    std::remove(sum_tmp.c_str());
    return false;
  }
  FolderLock installing(dir, /*exclusive=*/true);
  // The artifact goes first: a reader that sees the new .sum also sees the matching artifact.
  if (!Rename(tmp, base + "." + ext, why)) {
    std::remove(sum_tmp.c_str());
    return false;
  }
  if (!Rename(sum_tmp, base + ".sum", why)) {
    std::remove(sum_tmp.c_str());
    Warn("cannot install " + base + ".sum (" + *why + "): the entry will be rebuilt");
  }
  return true;
}

// Writes `record` as <base>.failed (under a temporary name, then renamed: a reader never sees
// half a record). A record that cannot be written only costs the next process a compile.
void RecordFailure(const std::string& base, const std::string& token, const std::string& record) {
  const std::string tmp = cache_files::TempName(base, "failed", token);
  std::string why;
  if (!WriteFile(tmp, {record}) || chmod(tmp.c_str(), 0644) != 0) {
    std::remove(tmp.c_str());
    return;
  }
  if (!Rename(tmp, base + ".failed", &why)) std::remove(tmp.c_str());
}

}  // namespace

CompileCache::CompileCache() : CompileCache(ptox::CacheDir()) {}

CompileCache::CompileCache(std::string dir) : dir_(std::move(dir)) {
  Create(dir_);
  writable_ = CheckTrust(dir_);
}

std::optional<std::string> CompileCache::Lookup(const std::string& key,
                                                const std::string& identity,
                                                const std::string& ext) const {
  const std::string base = dir_ + "/" + key, path = base + "." + ext;
  FolderLock lock(dir_, /*exclusive=*/false);
  if (!Valid(base + ".sum", path, key, identity)) return std::nullopt;
  return path;
}

std::optional<Status> CompileCache::LookupFailure(const std::string& key,
                                                  const std::string& identity) const {
  const std::string path = dir_ + "/" + key + ".failed";
  struct stat st {};
  std::string why;
  std::optional<std::string> record = ReadRegularFile(path, &why, {.no_follow = true, .stat = &st});
  if (!record || !Trusted(st)) return std::nullopt;
  const int64_t age = static_cast<int64_t>(time(nullptr)) - static_cast<int64_t>(st.st_mtime);
  if (age < 0 || age >= kFailureLifetimeS) return std::nullopt;
  // The header, then "code <n>\n" and the message.
  const std::string head =
      std::string(kFailureMagic) + "\nkey " + key + "\nidentity " + identity + "\ncode ";
  if (record->rfind(head, 0) != 0) return std::nullopt;
  const size_t eol = record->find('\n', head.size());
  if (eol == std::string::npos) return std::nullopt;
  const std::string code = record->substr(head.size(), eol - head.size());
  if (code != std::to_string(static_cast<int>(StatusCode::kToolchain))) return std::nullopt;
  return Status(StatusCode::kToolchain,
                record->substr(eol + 1) + "\n(remembered from a build " + std::to_string(age / 60) +
                    " min ago that the compiler rejected; `ptox cache clear` builds it again)");
}

CompileCache::Built CompileCache::Insert(
    const std::string& key, const std::string& identity, const std::string& ext,
    const std::function<void(const std::string&, const std::string&)>& build) const {
  if (!writable_) return BuildPrivate(dir_, key, ext, build);
  cache_files::SweepStale(dir_);
  const std::string base = dir_ + "/" + key, token = cache_files::NewToken();
  cache_files::BuildLock lock(base, token);
  if (!lock.held()) {
    Warn("cannot write to the compile cache " + dir_ + " (" + strerror(errno) +
         "): this kernel is not kept");
    return BuildPrivate(dir_, key, ext, build);
  }
  const std::string tmp = cache_files::TempName(base, ext, token);
  try {
    build(tmp, base + ".failed");
  } catch (const targets::BuildRejected& e) {
    std::remove(tmp.c_str());
    RecordFailure(base, token, FailureRecord(key, identity, e));
    throw;
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  std::string why;
  std::optional<std::string> bytes = ReadRegularFile(tmp, &why);
  if (!bytes) std::remove(tmp.c_str());
  PTOX_RUNTIME_CHECK(bytes.has_value()) << "the compiler wrote no output at " << tmp << ": " << why;
  PTOX_ICHECK(bytes->find(targets::KeyStamp(key)) != std::string::npos)
      << "the build of " << tmp << " does not carry its cache key";
  if (Install(dir_, base, ext, token, Record(key, identity, HashHex(*bytes)), &why))
    return {base + "." + ext, false, ""};
  Warn("cannot install the compile cache entry " + base + "." + ext + " (" + why +
       "): this kernel is not kept");
  return {tmp, true, ""};
}

void CompileCache::Discard(const Built& built) {
  if (!built.temporary) return;
  std::error_code ec;
  if (!built.scratch_dir.empty()) {
    fs::remove_all(built.scratch_dir, ec);
  } else {
    fs::remove(built.path, ec);
  }
}

CompileCache::Info CompileCache::Stats() const {
  Info info;
  info.dir = dir_;
  std::error_code ec;
  // One pass over the folder: the records, and each key's artifacts (a record names its
  // artifact's hash, not its extension; temporary files carry ".tmp." and are no entries).
  std::vector<fs::path> records;
  std::unordered_map<std::string, std::vector<std::string>> artifacts;
  for (const auto& e : fs::directory_iterator(info.dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    info.bytes += static_cast<int64_t>(e.file_size(ec));
    if (e.path().extension() == ".sum") {
      records.push_back(e.path());
    } else if (e.path().filename().string().find(".tmp.") == std::string::npos) {
      artifacts[e.path().stem().string()].push_back(e.path().string());
    }
  }
  info.entries = static_cast<int64_t>(records.size());
  FolderLock lock(dir_, /*exclusive=*/false);
  for (const fs::path& sum : records) {
    const std::string key = sum.stem().string();
    const std::vector<std::string>& paths = artifacts[key];
    const bool valid = std::any_of(paths.begin(), paths.end(), [&](const std::string& a) {
      return Valid(sum.string(), a, key, std::nullopt);
    });
    if (!valid) ++info.corrupt;
  }
  return info;
}

int64_t CompileCache::Clear() const {
  std::error_code ec;
  const std::string preludes = dir_ + "/" + kPreludeFolder;
  const int64_t n =
      fs::is_directory(fs::symlink_status(preludes, ec)) ? cache_files::RemoveAll(preludes) : 0;
  return n + cache_files::RemoveAll(dir_);
}

}  // namespace ptox::driver

namespace ptox {

std::string CacheDir() {
  if (const char* env = std::getenv("PTOX_CACHE_DIR"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/ptox";
}

}  // namespace ptox
