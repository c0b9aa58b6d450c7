#include "sys/module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>

#include "sys/fault.hpp"

namespace gpubind::sys {

std::string executable_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, size_t(n));
  return path.substr(0, path.rfind('/'));
}

bool readable(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

#ifndef GPUBIND_MODULE_DIR
#error "GPUBIND_MODULE_DIR must name the installed module directory"
#endif
#ifndef GPUBIND_MODULE_REL_DIR
#error "GPUBIND_MODULE_REL_DIR must name the module directory relative to the executable's"
#endif

std::vector<std::string> module_candidates(const std::string& file) {
  std::vector<std::string> out;
  if (std::string here = executable_dir(); !here.empty()) {
    out.push_back(here + "/" + file);
    out.push_back(here + "/" + GPUBIND_MODULE_REL_DIR + "/" + file);
  }
  out.push_back(std::string(GPUBIND_MODULE_DIR) + "/" + file);
  return out;
}

Result<ModuleSymbol> find_module_symbol(const std::string& file, const std::string& symbol) {
  std::vector<std::string> tried;
  for (const std::string& path : module_candidates(file)) {
    if (!readable(path)) {
      tried.push_back(path);
      continue;
    }
    auto sym = module_symbol(path, symbol);
    if (!sym) return sym.error();
    return ModuleSymbol{path, *sym};
  }
  std::string looked;
  for (const std::string& t : tried) looked += (looked.empty() ? "" : ", ") + t;
  return Error{file, "not installed (looked for " + looked + ")", ErrorKind::not_found};
}

Result<void*> module_symbol(const std::string& path, const std::string& symbol) {
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

}  // namespace gpubind::sys
