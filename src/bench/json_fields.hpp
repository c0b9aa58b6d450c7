#pragma once
// Reading `gpubind bench` records back: a JSON field into a C++ value with its range checked
// (util/json_field.hpp), or an Error that names the field. Internal to src/bench (record.cpp, ab.cpp).
#include <string>

#include "util/json_field.hpp"
#include "util/result.hpp"

namespace gpubind::bench::json_fields {

using nlohmann::json;

// Reads `key` of `o` into `out`; an Error names the field.
template <typename T>
Status field(const json& o, const char* key, T& out, const std::string& where) {
  const json* v = json_field::member(o, key);
  if (!v) return Error{where, std::string("missing field '") + key + "'"};
  auto value = json_field::as<T>(*v);
  if (!value) return Error{where, std::string("field '") + key + "' is out of range or of the wrong type"};
  out = std::move(*value);
  return Ok{};
}

}  // namespace gpubind::bench::json_fields
