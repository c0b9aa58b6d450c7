#pragma once
// YAML read through the module gpubind-yaml.so (libyaml), loaded only by the commands that read
// YAML (`k8s check`: the kubelet's config.yaml).
#include <string>

#include "util/result.hpp"

namespace gpubind::sys {

// `text` (one YAML document) as JSON text. `what` names the input in an error: "what: line 3,
// column 5: ...". A missing module is one line saying where it was looked for.
Result<std::string> yaml_to_json(const std::string& text, const std::string& what);

}  // namespace gpubind::sys
