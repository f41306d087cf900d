// Content hashes: XXH3-128 as 32 lower-case hex digits. The compile cache keys its entries with
// them and the build manifest names the kernel library by one.
#pragma once

#include <string>
#include <string_view>

namespace ptox {

std::string HashHex(std::string_view data);

}  // namespace ptox
