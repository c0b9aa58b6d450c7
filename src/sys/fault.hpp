#pragma once
// Failure points for tests (libfiu, docs/FAULTS.md). A build configured with
// -DGPUBIND_FAULT_POINTS=ON (the sanitizer build of `make test`) asks a named point before each
// syscall of the sys layer; under `fiu-run -c 'enable name=gpubind/<point>,failinfo=<errno>'`
// the call then fails with that errno instead of being made. Every other build compiles the
// points to nothing: the installed binary neither links libfiu nor reads its environment.
#include <cerrno>
#include <string>

#ifdef GPUBIND_FAULT_POINTS
#include <fiu.h>
#endif

namespace gpubind::sys {

// The errno the point `name` fails with now (its failinfo; EIO when it has none), else 0.
#ifdef GPUBIND_FAULT_POINTS
inline int injected_errno(const std::string& name) {
  if (!fiu_fail(name.c_str())) return 0;
  auto info = reinterpret_cast<long>(fiu_failinfo());
  return info > 0 ? int(info) : EIO;
}
#else
constexpr int injected_errno(const char*) { return 0; }
inline int injected_errno(const std::string&) { return 0; }
#endif

// Runs `call` (a syscall returning -1 and setting errno on failure) unless the point `name`
// fails it: then errno is the injected one and the result is -1, as from the kernel.
template <class Call>
auto faultable(const char* name, Call&& call) -> decltype(call()) {
  if (int e = injected_errno(name)) {
    errno = e;
    return -1;
  }
  return call();
}

// The point for a path: `kind` + the path ("gpubind/read" + "/proc/42/status"), so a test can
// fail one file ("gpubind/read/proc/42/status") or a tree ("gpubind/read/proc/*").
template <class Call>
auto faultable_path(const char* kind, const std::string& path, Call&& call) -> decltype(call()) {
#ifdef GPUBIND_FAULT_POINTS
  std::string name = std::string(kind) + (path.starts_with('/') ? "" : "/") + path;
  if (int e = injected_errno(name)) {
    errno = e;
    return -1;
  }
#else
  (void)kind;
  (void)path;
#endif
  return call();
}

}  // namespace gpubind::sys
