#pragma once
// The JSON file a fake GPU library answers from, named by an environment variable; read once.
// Unset: an empty object. Unparsable: a discarded value (the fake's init call then fails).
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

namespace gpubind::fakes {

inline nlohmann::json read_config(const char* variable) {
  const char* path = std::getenv(variable);
  if (!path) return nlohmann::json::object();
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

}  // namespace gpubind::fakes
