#pragma once
// Reading one member of a JSON document that another program or a person wrote (a topology
// file, a bench record, the kubelet's state, another node's watch summary): the one way every
// reader here looks a member up and converts it. A wrong type or a number out of range comes
// back as "no value", which the caller words as it must (an error naming the field, or a default
// for a lenient reader), never as an exception from nlohmann's get<>() nor as a wrapped number:
// -1 is not 4294967295, 1e300 is not a float's inf.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpubind::json_field {

using nlohmann::json;

// Member `key` of `o`; nullptr when `o` is not an object or has no such member.
inline const json* member(const json& o, std::string_view key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

template <typename T>
struct is_vector : std::false_type {};
template <typename U>
struct is_vector<std::vector<U>> : std::true_type {};

// `v` as a T, when it is one: a boolean for bool; an integer within T's range for an integral T;
// a finite number within T's range for a floating T; a string for std::string; an array of such
// for a std::vector. nullopt otherwise.
template <typename T>
std::optional<T> as(const json& v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) {
      auto u = v.get<uint64_t>();
      if (u <= uint64_t(std::numeric_limits<T>::max())) return T(u);
    } else if (v.is_number_integer()) {
      auto i = v.get<int64_t>();
      if (i >= int64_t(std::numeric_limits<T>::min()) && (i <= 0 || uint64_t(i) <= uint64_t(std::numeric_limits<T>::max()))) return T(i);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number()) {
      double d = v.get<double>();
      if (std::isfinite(d) && std::fabs(d) <= double(std::numeric_limits<T>::max())) return T(d);
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (v.is_string()) return v.get<std::string>();
  } else if constexpr (is_vector<T>::value) {
    if (!v.is_array()) return std::nullopt;
    T out;
    for (const json& e : v) {
      auto x = as<typename T::value_type>(e);
      if (!x) return std::nullopt;
      out.push_back(std::move(*x));
    }
    return out;
  } else {
    static_assert(sizeof(T) == 0, "json_field::as: a type it does not read");
  }
  return std::nullopt;
}

// Member `key` of `o` as a T: nullopt when absent, null or not a T.
template <typename T>
std::optional<T> get(const json& o, std::string_view key) {
  const json* m = member(o, key);
  return m ? as<T>(*m) : std::nullopt;
}

}  // namespace gpubind::json_field
