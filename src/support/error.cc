// Formatting of error prefixes and the Status -> exit code mapping.
#include "support/error.h"

#include <cstring>

namespace ptox {

int ExitCode(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return 0;
    case StatusCode::kInvalid: return 1;
    case StatusCode::kUnsupported: return 2;
    case StatusCode::kToolchain: return 3;
    case StatusCode::kRuntime: return 4;
    case StatusCode::kInternal: return 70;
  }
  return 70;
}

namespace detail {

std::string SpanPrefix(const Span& span, const char* kind) {
  if (!span.known()) return std::string(kind) + ": ";
  std::string file = span.file.empty() ? "<input>" : span.file;
  return file + ":" + std::to_string(span.line) + ":" + std::to_string(span.col) + ": " + kind +
         ": ";
}

std::string InternalPrefix(const char* file, int line) {
  // Report the path from src/ on, independent of where the tree was built.
  const char* rel = std::strstr(file, "src/");
  return std::string("internal error [") + (rel ? rel : file) + ":" + std::to_string(line) + "]: ";
}

}  // namespace detail
}  // namespace ptox
