// k8s check's YAML reader (modules/yaml_module.cpp, the module gpubind-yaml.so, on libyaml): any text
// becomes JSON that nlohmann parses, or one error line; aliases cannot blow it up.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_util.hpp"
#include "sys/yaml_api.hpp"

extern "C" const GpubindYamlApi* gpubind_yaml_api_v1();

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const GpubindYamlApi* api = gpubind_yaml_api_v1();
  char err[512] = "";
  char* json = api->to_json(reinterpret_cast<const char*>(data), long(size), err, sizeof err);
  if (!json) {
    gpubind::fuzz::require(err[0] != '\0', "a refusal says why");
    return 0;
  }
  gpubind::fuzz::require(!nlohmann::json::parse(json, nullptr, false).is_discarded(), "the module's JSON parses");
  api->release(json);
  return 0;
}
