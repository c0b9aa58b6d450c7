#include "sys/yaml.hpp"

#include "sys/module.hpp"
#include "sys/yaml_api.hpp"

namespace gpubind::sys {

Result<std::string> yaml_to_json(const std::string& text, const std::string& what) {
  static constexpr ModuleSpec kSpec{"gpubind-yaml.so", "gpubind_yaml_api_v1", "YAML", "the YAML reader", "YAML",
                                    "every command but k8s check works without it; the Debian package gpubind-k8s installs it"};
  auto api = module_api<GpubindYamlApi>(kSpec, [](const GpubindYamlApi& a) { return a.abi == 1 && a.to_json && a.release; });
  if (!api) return api.error();
  char err[512] = "";
  char* json = (*api)->to_json(text.data(), long(text.size()), err, sizeof err);
  if (!json) return Error{what, err[0] ? err : "not YAML"};
  std::string out(json);
  (*api)->release(json);
  return out;
}

}  // namespace gpubind::sys
