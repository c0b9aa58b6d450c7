#pragma once
// Loading a shared module at run time (dlopen), and where this executable lives: how the CLI
// finds its hwloc discovery module only when it needs it.
#include <functional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace gpubind::sys {

// This process's executable (/proc/self/exe), "" when it cannot be read.
std::string executable_path();
// The directory holding it, "" when it cannot be read.
std::string executable_dir();

// Where gpubind's module `file` (gpubind-hwloc.so, gpubind-http.so) may be, in order: beside the
// executable (the build tree), in ../LIBDIR/gpubind relative to it (where `make install` and the
// Debian packages put them). Nowhere else: a packaged /usr/bin/gpubind run by root once also looked
// in the build's /usr/local/lib/gpubind, which Debian's staff group may write, and loaded a module
// planted there whose package was not installed.
std::vector<std::string> module_candidates(const std::string& file);

struct ModuleSymbol {
  std::string path;  // the module loaded
  void* address = nullptr;
};
// `symbol` of the first of module_candidates(file) that exists. Errors: not_found ("not installed
// (looked for A, B, C)") when none exists; otherwise the loader's message, named by the path.
Result<ModuleSymbol> find_module_symbol(const std::string& file, const std::string& symbol);

// A binary that must not load modules (the static front, src/cli/front.cpp: a static glibc
// binary cannot dlopen reliably) names a function that takes over instead: called with the
// module's file name before find_module_symbol or module_symbol would look for or load it, and
// never returns (it executes the full binary, or exits with an error line).
using ModuleRefusal = void (*)(const std::string& file);
void refuse_modules(ModuleRefusal take_over);

// Replaces this process with the first of module_candidates(file) that exists, with `argv` as it
// is (argv[0] included); returns only on failure: not installed (where it looked) or execv's error.
Error exec_module_binary(const std::string& file, char** argv);

// Loads the module at `path` (all symbols bound now, none exported to others) and returns the
// address of `symbol` in it; an Error with the loader's message otherwise. Never unloaded.
Result<void*> module_symbol(const std::string& path, const std::string& symbol);

// What a caller needs to say about one of gpubind's modules, in its messages.
struct ModuleSpec {
  const char* file;     // "gpubind-hwloc.so"
  const char* entry;    // its entry point, a C function returning the module's API table
  const char* what;     // the error's subject when it is not installed ("hwloc discovery")
  const char* purpose;  // what it is for, after "cannot load " ("hwloc discovery")
  const char* kind;     // its name in "not a gpubind KIND module of this version" ("hwloc")
  const char* without;  // what works without it ("a topology file ... works without it")
};

// The API table of module `spec` (its entry point called once; the table is the module's, never
// freed), when `valid` accepts it (its ABI number and entries). Errors, one line each: not
// installed (where it looked, and what works without it), the loader's message, or not a module
// of this version.
Result<const void*> load_module_api(const ModuleSpec& spec, bool (*valid)(const void* api));

// load_module_api for a table of type Api, loaded once per process and kept.
template <class Api>
Result<const Api*> module_api(const ModuleSpec& spec, bool (*valid)(const Api& api)) {
  static const Api* loaded = nullptr;
  static bool (*check)(const Api&) = nullptr;
  if (loaded) return loaded;
  check = valid;
  auto a = load_module_api(spec, [](const void* api) { return check(*static_cast<const Api*>(api)); });
  if (!a) return a.error();
  loaded = static_cast<const Api*>(*a);
  return loaded;
}

// Runs `fn` with this process's stderr (fd 2) sent to a temporary file, and returns what was
// written there, one line, trimmed. For a library's own chatter on start (ROCm SMI prints its
// exceptions), so gpubind says it once, in its own line. Single-threaded callers only.
std::string capture_stderr(const std::function<void()>& fn);

}  // namespace gpubind::sys
