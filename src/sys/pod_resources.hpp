#pragma once
// The kubelet's pod-resources API (List), asked through the module gpubind-podresources.so (gRPC),
// which only `k8s check` loads.
#include <string>

#include "util/result.hpp"

namespace gpubind::sys {

// The answer of the kubelet listening on `socket` (a unix socket path), as JSON text (the shape
// sys/podresources_api.hpp gives), within `timeout_ms`. Errors: the module is not installed (a
// not_found Error), or the call failed (gRPC's status, naming the socket).
Result<std::string> pod_resources_list(const std::string& socket, int timeout_ms);

}  // namespace gpubind::sys
