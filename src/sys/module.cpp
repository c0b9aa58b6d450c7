#include "sys/module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "sys/fault.hpp"
#include "sys/unique_fd.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

std::string executable_path() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, size_t(n));
}

std::string executable_dir() {
  std::string path = executable_path();
  return path.substr(0, path.rfind('/'));
}

#ifndef GPUBIND_MODULE_REL_DIR
#error "GPUBIND_MODULE_REL_DIR must name the module directory relative to the executable's"
#endif

std::vector<std::string> module_candidates(const std::string& file) {
  std::vector<std::string> out;
  if (std::string here = executable_dir(); !here.empty()) {
    out.push_back(here + "/" + file);
    out.push_back(here + "/" + GPUBIND_MODULE_REL_DIR + "/" + file);
  }
  return out;
}

namespace {
ModuleRefusal refusal = nullptr;

// The first of module_candidates(file) that this process may access with `mode` (R_OK to load,
// X_OK to run); not_found, naming where it looked, when none.
Result<std::string> installed(const std::string& file, int mode) {
  std::string looked;
  for (const std::string& path : module_candidates(file)) {
    if (::access(path.c_str(), mode) == 0) return path;
    looked += (looked.empty() ? "" : ", ") + path;
  }
  return Error{file, "not installed (looked for " + looked + ")", ErrorKind::not_found};
}
}  // namespace

void refuse_modules(ModuleRefusal take_over) { refusal = take_over; }

Error exec_module_binary(const std::string& file, char** argv) {
  auto path = installed(file, X_OK);
  if (!path) return path.error();
  std::fflush(nullptr);
  ::execv(path->c_str(), argv);
  return Error{*path, std::strerror(errno)};
}

Result<ModuleSymbol> find_module_symbol(const std::string& file, const std::string& symbol) {
  if (refusal) refusal(file);
  auto path = installed(file, R_OK);
  if (!path) return path.error();
  auto sym = module_symbol(*path, symbol);
  if (!sym) return sym.error();
  return ModuleSymbol{*path, *sym};
}

Result<const void*> load_module_api(const ModuleSpec& spec, bool (*valid)(const void* api)) {
  auto m = find_module_symbol(spec.file, spec.entry);
  if (!m && m.error().kind == ErrorKind::not_found)
    return Error{spec.what, std::string("the module ") + spec.file + " is " + m.error().why + "; " + spec.without};
  if (!m) return Error{m.error().what, std::string("cannot load ") + spec.purpose + ": " + m.error().why};
  using Entry = const void* (*)();
  const void* api = reinterpret_cast<Entry>(m->address)();
  if (!api || !valid(api)) return Error{m->path, std::string("not a gpubind ") + spec.kind + " module of this version"};
  return api;
}

Result<void*> module_symbol(const std::string& path, const std::string& symbol) {
  if (refusal) refusal(path.substr(path.rfind('/') + 1));
  if (int e = injected_errno("gpubind/dlopen")) return Error{path, std::strerror(e)};
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    return Error{path, e ? e : "dlopen failed"};
  }
  void* sym = ::dlsym(h, symbol.c_str());
  if (!sym) return Error{path, "no symbol " + symbol};
  return sym;
}

std::string capture_stderr(const std::function<void()>& fn) {
  std::fflush(stderr);
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> tmp(std::tmpfile());
  UniqueFd saved(tmp ? ::dup(2) : -1);
  if (!saved || ::dup2(::fileno(tmp.get()), 2) < 0) {  // cannot capture: let it through
    fn();
    return "";
  }
  fn();
  std::fflush(stderr);
  ::dup2(saved.get(), 2);
  saved.reset();
  std::string text;
  std::rewind(tmp.get());
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, tmp.get())) > 0 && text.size() < 65536) text.append(buf, n);
  std::string joined;  // its lines joined, "a; b"
  for (std::string_view line : split(trim(text), '\n'))
    if (!trim(line).empty()) joined += (joined.empty() ? "" : "; ") + std::string(trim(line));
  return one_line(joined);
}

}  // namespace gpubind::sys
