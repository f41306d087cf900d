// Compile cache implementation (see cache.h for the on-disk format and its guarantees).
#include "driver/cache.h"

#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "support/error.h"

namespace ptox::driver {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(out.flush());
}

// A name no other process or thread will pick for its temporary file.
std::string TempSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(getpid()));
  return ".tmp." + std::to_string(getpid()) + "." + std::to_string(rng());
}

}  // namespace

std::string HashHex(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::string CompileCache::Dir() {
  std::string dir;
  if (const char* env = std::getenv("PTOX_CACHE_DIR"); env && *env) {
    dir = env;
  } else {
    const char* home = std::getenv("HOME");
    dir = std::string(home && *home ? home : "/tmp") + "/.cache/ptox";
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(fs::path(dir).parent_path(), ec);
    // EEXIST is fine only when another process made the folder meanwhile (not for a file).
    const int err = mkdir(dir.c_str(), 0700) == 0 ? 0 : errno;
    if (err != 0 && (err != EEXIST || !fs::is_directory(dir, ec))) {
      throw Error(StatusCode::kRuntime, "runtime error: cannot create the compile cache " + dir +
                                            ": " + strerror(err) +
                                            " (set PTOX_CACHE_DIR to a writable folder)");
    }
  }
  return dir;
}

std::optional<std::string> CompileCache::Lookup(const std::string& key) const {
  std::string so = Dir() + "/" + key + ".so";
  std::optional<std::string> sum = ReadFile(so.substr(0, so.size() - 3) + ".sum");
  if (!sum) return std::nullopt;
  std::optional<std::string> bytes = ReadFile(so);
  if (!bytes || HashHex(*bytes) != *sum) return std::nullopt;
  return so;
}

std::string CompileCache::Insert(const std::string& key,
                                 const std::function<void(const std::string&)>& build) const {
  std::string base = Dir() + "/" + key;
  std::string tmp = base + ".so" + TempSuffix();
  try {
    build(tmp);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  std::optional<std::string> bytes = ReadFile(tmp);
  PTOX_RUNTIME_CHECK(bytes.has_value()) << "the compiler wrote no output at " << tmp;
  std::string sum_tmp = base + ".sum" + TempSuffix();
  PTOX_RUNTIME_CHECK(WriteFile(sum_tmp, HashHex(*bytes))) << "cannot write " << sum_tmp;
  // The .so goes first: a reader that sees the new .sum also sees the matching .so.
  std::error_code ec;
  fs::rename(tmp, base + ".so", ec);
  PTOX_RUNTIME_CHECK(!ec) << "cannot install " << base << ".so: " << ec.message();
  fs::rename(sum_tmp, base + ".sum", ec);
  PTOX_RUNTIME_CHECK(!ec) << "cannot install " << base << ".sum: " << ec.message();
  return base + ".so";
}

CompileCache::Info CompileCache::Stats() const {
  Info info;
  info.dir = Dir();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(info.dir, ec)) {
    if (!e.is_regular_file()) continue;
    if (e.path().extension() == ".so") ++info.entries;
    info.bytes += static_cast<int64_t>(e.file_size(ec));
  }
  return info;
}

int64_t CompileCache::Clear() const {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(Dir(), ec)) {
    std::string name = e.path().filename().string();
    bool ours = e.path().extension() == ".so" || e.path().extension() == ".sum" ||
                name.find(".tmp.") != std::string::npos || e.path().extension() == ".cc";
    if (e.is_regular_file() && ours && fs::remove(e.path(), ec)) ++n;
  }
  return n;
}

}  // namespace ptox::driver
