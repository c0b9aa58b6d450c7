#pragma once
// Reading `gpubind bench` records back: a JSON field into a C++ value with its range checked, or
// an Error that names the field. Internal to src/bench (record.cpp, ab.cpp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.hpp"

namespace gpubind::bench::json_fields {

using nlohmann::json;

template <typename T>
struct is_vector : std::false_type {};
template <typename U>
struct is_vector<std::vector<U>> : std::true_type {};

// A JSON number into an arithmetic T without wrapping or overflow: an integer field takes a JSON
// integer within T's range (-1 is not 4294967295), a floating one a finite number (1e300 is not a
// float's inf). Anything else goes through nlohmann's own conversion, which throws on a wrong type.
template <typename T>
bool convert(const json& v, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return false;
    out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) {
      auto u = v.get<uint64_t>();
      if (u > uint64_t(std::numeric_limits<T>::max())) return false;
      out = T(u);
    } else if (v.is_number_integer()) {
      auto i = v.get<int64_t>();
      if (i < int64_t(std::numeric_limits<T>::min()) || (i > 0 && uint64_t(i) > uint64_t(std::numeric_limits<T>::max()))) return false;
      out = T(i);
    } else {
      return false;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return false;
    double d = v.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > double(std::numeric_limits<T>::max())) return false;
    out = T(d);
  } else if constexpr (is_vector<T>::value) {
    if (!v.is_array()) return false;
    out.clear();
    for (const json& e : v) {
      typename T::value_type x{};
      if (!convert(e, x)) return false;
      out.push_back(std::move(x));
    }
  } else {
    out = v.get<T>();
  }
  return true;
}

// Reads `key` of `o` into `out`; an Error names the field.
template <typename T>
Status field(const json& o, const char* key, T& out, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end()) return Error{where, std::string("missing field '") + key + "'"};
  try {
    if (!convert(*it, out)) return Error{where, std::string("field '") + key + "' is out of range or of the wrong type"};
  } catch (const json::exception&) {
    return Error{where, std::string("field '") + key + "' has the wrong type"};
  }
  return Ok{};
}

}  // namespace gpubind::bench::json_fields
