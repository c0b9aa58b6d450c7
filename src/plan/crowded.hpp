#pragma once
// Crowded pools: more ranks than cores near their GPUs. Pure. The rules (planner rule 2's
// fallbacks), each used only when the one before cannot give every rank a CPU of its own:
//   SMT siblings  the pool has at least as many PUs as ranks: ranks get PUs, not shared cores;
//   spill         only the ranks beyond the pool's PUs move, to the nearest free cores (other
//                 pools keep one core per rank), and only when every one of them finds a core;
//   share         otherwise the ranks stay on their node and share its cores.
#include <string>
#include <vector>

#include "plan/cpu_split.hpp"
#include "topo/topology.hpp"
#include "util/cpuset.hpp"

namespace gpubind::plan {

struct CrowdedPool {
  std::vector<size_t> members;  // rank indexes, in order
  CpuSet domain;                // the CPUs they split
  bool by_pu = false;           // split single PUs (SMT siblings to different ranks)
};

// Settles every crowded pool in `pools` (may add pools for spilled ranks and shrink the domains
// that give up spare cores). Steps go to `explain`, fallbacks to `warnings`.
void settle_crowded_pools(const topo::Topology& t, const CoreTable& cores, const CpuSet& allowed, std::vector<CrowdedPool>& pools,
                          std::vector<std::string>& explain, std::vector<std::string>& warnings);

}  // namespace gpubind::plan
