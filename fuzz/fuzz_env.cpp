// The launcher environment (local rank and size variables of every family) and the GPU identity
// variables (CUDA_VISIBLE_DEVICES, ROCR/HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK, SLURM_STEP_GPUS...),
// one NAME=VALUE per line, resolved on an embedded 8-GPU machine and planned.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "topo/launcher_env.hpp"
#include "discover/source.hpp"
#include "fuzz_util.hpp"
#include "util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const gpubind::topo::Topology machine = *gpubind::discover::load_topology("example:dgx-h100");
  std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> env;
  for (std::string_view line : gpubind::split(text, '\n')) {
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  (void)gpubind::topo::detect_local_rank(env);
  for (const auto& [k, v] : env) gpubind::topo::expand_slurm_counts(v);
  gpubind::plan::Request req;
  for (const std::string& name : gpubind::plan::gpu_env_names())
    if (auto it = env.find(name); it != env.end()) req.env[name] = it->second;
  gpubind::fuzz::check_plan(machine, req);
  return 0;
}
