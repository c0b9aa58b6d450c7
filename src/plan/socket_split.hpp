#pragma once
// Policy `socket-split`: every allowed core of a package is given to the ranks whose GPUs sit on
// that package, disjointly and in equal shares, each rank filling its share from its GPU's own
// NUMA node first and then from the package's nearest nodes (GPU-less nodes included). On a
// DGX A100 in NPS4 mode `closest` gives each rank 8 cores of its GPU's node and leaves the four
// GPU-less nodes idle; this policy gives each rank 16: the same 8 plus 8 of a neighbour node.
#include <optional>
#include <string>
#include <vector>

#include "plan/cpu_split.hpp"
#include "topo/topology.hpp"
#include "util/cpuset.hpp"

namespace gpubind::plan {

// `home[r]` is rank r's NUMA node (its GPU's, or the fallback node the planner chose). Returns one
// CPU set per rank, or nullopt when some package has fewer cores than ranks (the caller then
// splits as `closest` does). Steps go to `explain`.
std::optional<std::vector<CpuSet>> split_sockets(const topo::Topology& t, const CoreTable& table,
                                                 const std::vector<unsigned>& home, bool balanced,
                                                 std::vector<std::string>& explain);

}  // namespace gpubind::plan
