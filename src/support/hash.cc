#include "support/hash.h"

#include <xxhash.h>

#include <cstdio>

namespace ptox {

std::string HashHex(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

}  // namespace ptox
