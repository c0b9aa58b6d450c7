#pragma once
// `gpubind compare`: the same job planned under every binding strategy people use — the kernel
// default, GPU-unaware pinning, NUMA and socket binding, gpubind's policies, and the peers' own
// rules (torchrun, NVIDIA's gpu_affinity, srun) — each scored the same way. Pure.
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::plan {

struct StrategyOutcome {
  std::string name;         // kernel-default, closest, torchrun-exclusive...
  std::string description;  // what the strategy does, one line
  bool gpubind_policy = false;  // a policy of gpubind's planner (else a peer's rule)
  std::optional<Plan> plan;     // absent when the strategy cannot plan this machine
  std::string error;            // why it cannot (a peer's rule that would fail)
};

struct Comparison {
  std::string topology_origin;
  size_t ranks = 0;
  std::vector<StrategyOutcome> strategies;  // gpubind's policies first, then the peers
  std::vector<std::string> warnings;        // the planner's, once
};

// Plans `req` under every strategy (its policy is ignored). An Error when one of gpubind's
// policies cannot plan the request (a usage error: the same request fails `gpubind plan`).
Result<Comparison> compare_strategies(const topo::Topology& t, const Request& req);

}  // namespace gpubind::plan
