#pragma once
// Sets (or unsets, nullopt) an environment variable for one test and puts it back after.
#include <stdlib.h>

#include <optional>
#include <string>

namespace gpubind::testing {

class EnvVar {
 public:
  EnvVar(const char* name, std::optional<std::string> value) : m_name(name) {
    if (const char* old = ::getenv(name)) m_old = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~EnvVar() {
    if (m_old) ::setenv(m_name, m_old->c_str(), 1);
    else ::unsetenv(m_name);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

}  // namespace gpubind::testing
