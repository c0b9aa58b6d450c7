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

// The return code a fixture GPU's "errors" map makes `call` give ({"errors": {"Memcpy": 700}}),
// 0 for none.
inline int call_error(const nlohmann::json& gpu, const char* call) {
  return gpu.is_object() && gpu.contains("errors") ? gpu["errors"].value(call, 0) : 0;
}

}  // namespace gpubind::fakes
