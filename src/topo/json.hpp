#pragma once
// gpubind's own JSON form of a Topology (docs/cli.md "Topology JSON"). It is what
// `gpubind topo --format json` prints and a valid --topology source; to_json(from_json(x)) == x
// for any x that to_json produced.
#include <nlohmann/json.hpp>

#include "topo/cross_check.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::topo {

inline constexpr int kTopologySchemaVersion = 1;

nlohmann::ordered_json to_json(const Topology& t);
Result<Topology> from_json(const nlohmann::json& j);

// A GPU runtime library's view (`gpubind topo --gpu-runtime --json`, field gpu_runtime).
nlohmann::ordered_json to_json(const RuntimeView& v);

// Helpers shared with the other JSON renderings (plan, check): a NUMA list or null, a cpulist or null.
nlohmann::ordered_json numa_to_json(const std::optional<std::vector<unsigned>>& numa);
nlohmann::ordered_json cpus_to_json(const std::optional<CpuSet>& cpus);

}  // namespace gpubind::topo
