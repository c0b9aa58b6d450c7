#include "topo/pinning_env.hpp"

namespace gpubind::topo::pinning_env {

bool on(const std::map<std::string, std::string>& env, std::string_view name) {
  auto it = env.find(std::string(name));
  if (it == env.end()) return false;
  if (name == "NCCL_PROXY_CPUSET" || name == "GOMP_CPU_AFFINITY") return !it->second.empty();
  const std::string& v = it->second;
  return !(v.empty() || v == "0" || v == "false" || v == "no" || v == "off" || v == "FALSE" || v == "False");
}

}  // namespace gpubind::topo::pinning_env
