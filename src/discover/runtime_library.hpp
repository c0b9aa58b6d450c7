#pragma once
// Binding a GPU library's entry points by name with dlopen (sys::module_symbol): the first
// candidate file that loads is used for every entry point. The GPU runtime layer (NVML, ROCm SMI)
// and topo --measure (the CUDA and HIP runtimes) load their libraries through it.
#include <string>
#include <vector>

#include "sys/module.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

// Binds a library's entry points by name: the first candidate file that loads is used for all.
class Library {
 public:
  Library(const char* label, std::vector<std::string> candidates) : m_label(label), m_candidates(std::move(candidates)) {}
  template <class Fn>
  Status bind(Fn& fn, const char* name) {
    if (m_path.empty()) {
      std::string first_error;
      for (const std::string& c : m_candidates) {
        auto sym = sys::module_symbol(c, name);
        if (sym) {
          m_path = c;
          fn = reinterpret_cast<Fn>(*sym);
          return Ok{};
        }
        if (first_error.empty()) first_error = sym.error().why;  // the loader's message names the library
      }
      return Error{m_label, first_error};
    }
    auto sym = sys::module_symbol(m_path, name);
    if (!sym) return Error{m_label, sym.error().why};
    fn = reinterpret_cast<Fn>(*sym);
    return Ok{};
  }
  // An entry point older libraries lack: nullptr then.
  template <class Fn>
  void bind_optional(Fn& fn, const char* name) {
    if (!bind(fn, name)) fn = nullptr;
  }

 private:
  const char* m_label;
  std::vector<std::string> m_candidates;
  std::string m_path;
};

}  // namespace gpubind::discover
