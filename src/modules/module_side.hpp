#pragma once
// The modules' side of their C interfaces (gpubind-http.so, gpubind-yaml.so,
// gpubind-podresources.so): how each hands back an error line and text it allocated. Header-only,
// since a module links none of gpubind's layers.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpubind::module_side {

// One line into the caller's buffer `err` of `errcap` bytes (cut to fit).
inline void copy_error(char* err, long errcap, const std::string& text) {
  if (err && errcap > 0) std::snprintf(err, size_t(errcap), "%s", text.c_str());
}

// `text` in memory the caller gives back through the module's release(); null when out of memory.
inline char* allocated_copy(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// The module's release(): frees what allocated_copy returned.
inline void release_copy(char* text) { std::free(text); }

}  // namespace gpubind::module_side
