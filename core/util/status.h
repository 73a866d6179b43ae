// Errors as values across every module boundary (the Abseil model).
//
// Contents:
//   ErrorCode          what kind of failure; main() maps it to an exit code (formats.md §4)
//   SourceFrame        one file:line an error was made at or passed through
//   Status             a code, a user-facing message (what, where, what was expected) and the
//                      trail of file:line the error took, which is not part of the message
//   Result<T>          a value or a Status; value() of an error aborts with its message
//   SS_RETURN_IF_ERROR / SS_ASSIGN_OR_RETURN   propagate errors upward, adding their file:line
//   ErrorTraceRequested  whether SHARDSCOPE_ERROR_TRACE=1 asks for the trail of every error
//
// Example:
//   Result<int> ParseDepth(const Json& j) {
//     if (!j.is_number_integer()) return InvalidInput("forward_prefetch_depth: an integer");
//     return j.get<int>();
//   }
//   SS_ASSIGN_OR_RETURN(int depth, ParseDepth(j));
//
// Library code never calls exit() or throws across a module boundary; only main decides.
#pragma once

#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace shardscope {

// Maps 1:1 onto the exit codes of formats.md §4 (kOk → 0, kCheckFailed → 1,
// kInvalidInput → 2, kRuntime → 3).
enum class ErrorCode { kOk = 0, kCheckFailed = 1, kInvalidInput = 2, kRuntime = 3 };

// `file` is a string literal (__FILE__ or std::source_location), so frames copy cheaply.
struct SourceFrame {
  const char* file;
  int line;
};

class [[nodiscard]] Status {
 public:
  // A trail longer than this keeps its first (innermost) frames: where the error started.
  static constexpr size_t kMaxTrail = 16;

  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The process exit code this status stands for.
  int exit_code() const { return static_cast<int>(code_); }

  // The same error, which another process of the same job has already said (rank 0 of a
  // launched sweep says what every rank found): `main` exits with its code without printing it.
  Status SaidElsewhere() && {
    said_elsewhere_ = true;
    return std::move(*this);
  }
  bool said_elsewhere() const { return said_elsewhere_; }

  // Returns a copy whose message is prefixed with `context: ` (e.g. the file name).
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    Status s = *this;
    s.message_ = context + ": " + message_;
    return s;
  }

  // Where the error was made, then each propagation macro it passed, innermost first.
  const std::vector<SourceFrame>& trail() const { return trail_; }
  // Appends `file:line` to the trail of an error (an OK status is returned unchanged).
  Status WithFrame(const char* file, int line) && {
    if (!ok() && trail_.size() < kMaxTrail) trail_.push_back({file, line});
    return std::move(*this);
  }
  Status WithFrame(const char* file, int line) const& {
    return Status(*this).WithFrame(file, line);
  }
  // "core/config/scenario.cpp:71 <- tools/shardscope/cmd_plan.cpp:40", paths relative to the
  // source tree; "" without frames.
  std::string TrailText() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::vector<SourceFrame> trail_;
  bool said_elsewhere_ = false;
};

// Bad input or usage: the message names the file / field / FQN and what was expected.
inline Status InvalidInput(std::string message,
                           std::source_location at = std::source_location::current()) {
  return Status(ErrorCode::kInvalidInput, std::move(message)).WithFrame(at.file_name(), at.line());
}
// Device, communicator or I/O failure.
inline Status RuntimeError(std::string message,
                           std::source_location at = std::source_location::current()) {
  return Status(ErrorCode::kRuntime, std::move(message)).WithFrame(at.file_name(), at.line());
}
// A check the user asked for did not pass (diff over tolerance, does not fit).
inline Status CheckFailed(std::string message,
                          std::source_location at = std::source_location::current()) {
  return Status(ErrorCode::kCheckFailed, std::move(message)).WithFrame(at.file_name(), at.line());
}

// True when the environment sets SHARDSCOPE_ERROR_TRACE=1: print every error's trail.
bool ErrorTraceRequested();

namespace internal {
// Prints "shardscope: <what>: <message> [trail]" to stderr and aborts: a bug, in every build.
[[noreturn]] void DieOnBadResult(const char* what, const Status& status);
}  // namespace internal

// A value of type T or an error Status. value() of an error is a bug: it aborts with the
// error's message and trail in every build type (never reads an empty optional).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) {
      internal::DieOnBadResult("Result constructed from an OK status without a value", status_);
    }
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    CheckOk();
    return *value_;
  }
  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void CheckOk() const {
    if (!ok()) internal::DieOnBadResult("Result::value() on an error", status_);
  }

  std::optional<T> value_;
  Status status_;
};

}  // namespace shardscope

#define SS_CONCAT_INNER_(a, b) a##b
#define SS_CONCAT_(a, b) SS_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK, adding this
// file:line to its trail.
#define SS_RETURN_IF_ERROR(expr)                                                      \
  do {                                                                                \
    ::shardscope::Status ss_status_ = (expr);                                         \
    if (!ss_status_.ok()) return std::move(ss_status_).WithFrame(__FILE__, __LINE__); \
  } while (0)

// `SS_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result or returns its error (with
// this file:line added to its trail).
#define SS_ASSIGN_OR_RETURN(lhs, expr) \
  SS_ASSIGN_OR_RETURN_IMPL_(SS_CONCAT_(ss_result_, __LINE__), lhs, expr)
#define SS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)                   \
  auto tmp = (expr);                                                \
  if (!tmp.ok()) return tmp.status().WithFrame(__FILE__, __LINE__); \
  lhs = std::move(tmp).value()
