#include "sys/environment.hpp"

#include <cstdlib>

namespace gpubind::sys {

std::optional<std::string> env_value(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

std::map<std::string, std::string> env_values(const std::vector<std::string>& names) {
  std::map<std::string, std::string> env;
  for (const std::string& n : names)
    if (auto v = env_value(n)) env[n] = *v;
  return env;
}

}  // namespace gpubind::sys
