#pragma once
// One JSON object from a file the kubelet or a DRA driver wrote (pure): text that is not JSON, or
// JSON that is not an object, is an Error naming the file (`what`), never an exception.
#include <nlohmann/json.hpp>
#include <string>

#include "util/result.hpp"

namespace gpubind::k8s {

inline Result<nlohmann::json> parse_json_object(const std::string& text, const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{what, "not JSON"};
  if (!j.is_object()) return Error{what, "not a JSON object"};
  return j;
}

}  // namespace gpubind::k8s
