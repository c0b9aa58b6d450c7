#include "sys/pod_resources.hpp"

#include "sys/module.hpp"
#include "sys/podresources_api.hpp"

namespace gpubind::sys {

Result<std::string> pod_resources_list(const std::string& socket, int timeout_ms) {
  static constexpr ModuleSpec kSpec{"gpubind-podresources.so", "gpubind_podresources_api_v1", "the pod-resources API",
                                    "the pod-resources API client", "pod-resources",
                                    "the kubelet's checkpoint files are read instead (the Debian package gpubind-k8s installs it)"};
  auto api = module_api<GpubindPodResourcesApi>(kSpec, [](const GpubindPodResourcesApi& a) { return a.abi == 1 && a.list && a.release; });
  if (!api) return api.error();
  char err[512] = "";
  char* json = (*api)->list(socket.c_str(), timeout_ms, err, sizeof err);
  if (!json) return Error{socket, err[0] ? err : "no answer"};
  std::string out(json);
  (*api)->release(json);
  return out;
}

}  // namespace gpubind::sys
