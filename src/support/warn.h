// Warnings: problems ptox works around (fewer threads than asked, a read-only compile cache)
// reported on stderr as one line each, "ptox: warning: ...", never on stdout.
#pragma once

#include <string_view>

namespace ptox {

// Writes "ptox: warning: <message>\n" to stderr in one write (lines of concurrent callers do not
// interleave).
void Warn(std::string_view message);

}  // namespace ptox
