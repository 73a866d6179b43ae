// Errors as values across every module boundary (the Abseil model).
//
// Contents:
//   ErrorCode          what kind of failure; main() maps it to an exit code (formats.md §4)
//   Status             a code plus a user-facing message (what, where, what was expected)
//   Result<T>          a value or a Status
//   SS_RETURN_IF_ERROR / SS_ASSIGN_OR_RETURN   propagate errors upward
//
// Example:
//   Result<int> ParseDepth(const Json& j) {
//     if (!j.is_number_integer()) return InvalidInput("fsdp.forward_prefetch_depth: expected an
//     integer"); return j.get<int>();
//   }
//   SS_ASSIGN_OR_RETURN(int depth, ParseDepth(j));
//
// Library code never calls exit() or throws across a module boundary; only main decides.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace shardscope {

// Maps 1:1 onto the exit codes of formats.md §4 (kOk → 0, kCheckFailed → 1,
// kInvalidInput → 2, kRuntime → 3).
enum class ErrorCode { kOk = 0, kCheckFailed = 1, kInvalidInput = 2, kRuntime = 3 };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The process exit code this status stands for.
  int exit_code() const { return static_cast<int>(code_); }

  // Returns a copy whose message is prefixed with `context: ` (e.g. the file name).
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Bad input or usage: the message names the file / field / FQN and what was expected.
inline Status InvalidInput(std::string message) {
  return Status(ErrorCode::kInvalidInput, std::move(message));
}
// Device, communicator or I/O failure.
inline Status RuntimeError(std::string message) {
  return Status(ErrorCode::kRuntime, std::move(message));
}
// A check the user asked for did not pass (diff over tolerance, does not fit).
inline Status CheckFailed(std::string message) {
  return Status(ErrorCode::kCheckFailed, std::move(message));
}

// A value of type T or an error Status. Accessing value() of an error is a bug (asserts).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "Result constructed from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace shardscope

#define SS_CONCAT_INNER_(a, b) a##b
#define SS_CONCAT_(a, b) SS_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define SS_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::shardscope::Status ss_status_ = (expr); \
    if (!ss_status_.ok()) return ss_status_;  \
  } while (0)

// `SS_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result or returns its error.
#define SS_ASSIGN_OR_RETURN(lhs, expr) \
  SS_ASSIGN_OR_RETURN_IMPL_(SS_CONCAT_(ss_result_, __LINE__), lhs, expr)
#define SS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
