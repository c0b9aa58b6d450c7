#pragma once
// Result<T>: a value or an Error, for failures a caller can handle (a missing file, a malformed
// topology). Exceptions are not used for these: every fallible step returns a Result, and the
// CLI turns an Error into the one-line "gpubind: error: what: why" message (src/cli/common.cpp).
#include <string>
#include <utility>
#include <variant>

namespace gpubind {

// What kind of failure an Error is, so callers decide (an exit status, skipping a process that
// is gone) by kind, never by comparing message text.
enum class ErrorKind {
  failed,         // anything else: a malformed file, a syscall that failed
  usage,          // a flag, argument or request that cannot be satisfied as given
  not_found,      // it does not exist (ENOENT, ESRCH): a file, a process that is gone
  permission,     // not allowed (EACCES, EPERM)
  unsupported,    // it exists but is not something this can act on (a zombie, a kernel thread)
};

struct Error {
  std::string what;  // the thing that failed: a file name, a flag, a PID
  std::string why;   // the reason, in words a user can act on
  ErrorKind kind = ErrorKind::failed;

  std::string message() const { return why.empty() ? what : what + ": " + why; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return m_v.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(m_v); }
  const T& value() const& { return std::get<0>(m_v); }
  T&& value() && { return std::get<0>(std::move(m_v)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(m_v); }

 private:
  std::variant<T, Error> m_v;
};

// Result<void> stand-in: success or an Error.
struct Ok {};
using Status = Result<Ok>;

}  // namespace gpubind
