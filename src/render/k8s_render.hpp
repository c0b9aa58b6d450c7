#pragma once
// Renderings of a k8s::Report (k8s check): the kubelet's configuration, one line per container
// given GPUs, the findings' reasons, the node's findings; and JSON.
#include <nlohmann/json.hpp>
#include <string>

#include "k8s/judge.hpp"

namespace gpubind::render {

inline constexpr int kK8sSchemaVersion = 1;
std::string k8s_text(const k8s::Report& r);
nlohmann::ordered_json k8s_json(const k8s::Report& r);

}  // namespace gpubind::render
