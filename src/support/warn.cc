// Warn(): one fwrite per line so that concurrent warnings stay whole.
#include "support/warn.h"

#include <cstdio>
#include <string>

namespace ptox {

void Warn(std::string_view message) {
  std::string line = "ptox: warning: ";
  line.append(message);
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace ptox
