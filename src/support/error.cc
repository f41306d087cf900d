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

namespace {

std::string Position(const Span& span) {
  std::string at = std::to_string(span.line) + ":" + std::to_string(span.col);
  return span.file.empty() ? at : span.file + ":" + at;
}

}  // namespace

std::string FormatSpan(const Span& span) {
  return span.known() ? Position(span) + FormatCallChain(span) : "";
}

std::string FormatCallChain(const Span& span) {
  std::string out;
  for (const CallSite* c = span.inlined_at.get(); c; c = c->span.inlined_at.get()) {
    out += " (in @" + c->callee;
    if (c->span.known()) out += ", called at " + Position(c->span);
    out += ")";
  }
  return out;
}

namespace detail {

std::string SpanPrefix(const Span& span, const char* kind) {
  if (!span.known()) return std::string(kind) + ": ";
  return (span.file.empty() ? "<input>:" : "") + FormatSpan(span) + ": " + kind + ": ";
}

std::string InternalPrefix(const char* file, int line) {
  // Report the path from src/ on, independent of where the tree was built.
  const char* rel = std::strstr(file, "src/");
  return std::string("internal error [") + (rel ? rel : file) + ":" + std::to_string(line) + "]: ";
}

}  // namespace detail
}  // namespace ptox
