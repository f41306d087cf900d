// Status and Result<T>: how every public ptox entry point reports failure (no exceptions cross it).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ptox {

// Error classes map one-to-one onto the CLI's exit codes (see ExitCode).
enum class StatusCode {
  kOk = 0,
  kInvalid,      // bad user input: malformed text, wrong shapes/dtypes, out-of-bounds, aliasing
  kUnsupported,  // a documented limitation or a target/ISA the host lacks
  kToolchain,    // the host compiler / NVRTC failed
  kRuntime,      // a kernel or task failed while running
  kInternal,     // a ptox bug
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// The CLI exit code for a status: 0 ok, 1 invalid, 2 unsupported, 3 toolchain, 4 runtime, 70 internal.
int ExitCode(const Status& status);

template <typename T>
class Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : data_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace ptox
