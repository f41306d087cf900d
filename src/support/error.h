// Compiler-internal errors: user errors carry a source span, internal errors a ptox source line.
// The compiler throws these; src/driver and the public API turn them into ptox::Status.
#pragma once

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ptox/status.h"

namespace ptox {

struct CallSite;

// A location in a .pto file (1-based); file may be empty for IR built in C++. Code that the
// inline-calls pass copied out of a function body keeps its own location and records the call it
// was inlined at, so a message names both the callee's line and the caller's.
struct Span {
  std::string file;
  int line = 0;
  int col = 0;
  std::shared_ptr<const CallSite> inlined_at;  // null outside inlined code
  bool known() const { return line > 0; }
};

// Where a function's body was inlined: the callee and the call statement's location.
struct CallSite {
  std::string callee;
  Span span;
};

// "file:line:col" ("line:col" without a file), followed by " (in @f, called at file:line:col)" for each call the code was
// inlined through, innermost first; empty when the span is unknown.
std::string FormatSpan(const Span& span);
// The " (in @f, called at file:line:col)" part alone ("" outside inlined code).
std::string FormatCallChain(const Span& span);

class Error : public std::runtime_error {
 public:
  Error(StatusCode code, std::string message)
      : std::runtime_error(message), code_(code) {}
  StatusCode code() const { return code_; }
  Status ToStatus() const { return Status(code_, what()); }

 private:
  StatusCode code_;
};

namespace detail {
// Collects `<< msg` and throws on destruction of the full expression (via Throw()).
class ErrorBuilder {
 public:
  ErrorBuilder(StatusCode code, std::string prefix) : code_(code) { os_ << prefix; }
  template <typename T>
  ErrorBuilder& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  [[noreturn]] void Throw() const { throw Error(code_, os_.str()); }

 private:
  StatusCode code_;
  std::ostringstream os_;
};
// `Voidify() & builder` binds looser than <<, so the whole message is built before Throw().
struct Thrower {
  [[noreturn]] void operator&(const ErrorBuilder& b) const { b.Throw(); }
};
// "file:line:col: <kind>: " ("<kind>: " when the span is unknown).
std::string SpanPrefix(const Span& span, const char* kind = "error");
std::string InternalPrefix(const char* file, int line);
}  // namespace detail

}  // namespace ptox

// User error at a source span: `PTOX_CHECK(cond, span) << "message"` -> "file:line:col: error: message".
#define PTOX_CHECK(cond, span)                  \
  if (cond) {                                   \
  } else                                        \
    ::ptox::detail::Thrower() &                 \
        ::ptox::detail::ErrorBuilder(::ptox::StatusCode::kInvalid, \
                                     ::ptox::detail::SpanPrefix(span))

// Unconditional user error.
#define PTOX_FAIL(span) PTOX_CHECK(false, span)

// A ptox bug: "internal error [src/...:line]: message".
#define PTOX_ICHECK(cond)                       \
  if (cond) {                                   \
  } else                                        \
    ::ptox::detail::Thrower() &                 \
        ::ptox::detail::ErrorBuilder(::ptox::StatusCode::kInternal, \
                                     ::ptox::detail::InternalPrefix(__FILE__, __LINE__))

// A documented limitation: "unsupported: message".
#define PTOX_UNSUPPORTED()      \
  ::ptox::detail::Thrower() &   \
      ::ptox::detail::ErrorBuilder(::ptox::StatusCode::kUnsupported, "unsupported: ")

// A documented limitation at a source span: `PTOX_SUPPORTED(cond, span) << "message"` ->
// "file:line:col: unsupported: message" (status kUnsupported, CLI exit 2).
#define PTOX_SUPPORTED(cond, span)              \
  if (cond) {                                   \
  } else                                        \
    ::ptox::detail::Thrower() &                 \
        ::ptox::detail::ErrorBuilder(::ptox::StatusCode::kUnsupported, \
                                     ::ptox::detail::SpanPrefix(span, "unsupported"))

// A failure while running a program (interpreter or runtime): "runtime error: message".
#define PTOX_RUNTIME_CHECK(cond) \
  if (cond) {                    \
  } else                         \
    ::ptox::detail::Thrower() &  \
        ::ptox::detail::ErrorBuilder(::ptox::StatusCode::kRuntime, "runtime error: ")
