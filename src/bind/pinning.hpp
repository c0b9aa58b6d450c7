#pragma once
// What the libraries inside a rank will do to its threads' CPUs, read from its environment before
// it starts (topo/pinning_env.hpp), and whether something narrowed this process's CPUs before
// gpubind planned. Pure: exec and launch print each as a note.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace gpubind::bind {

// One line per knob of `env` that is on, saying where the library will pin its threads against
// the rank's CPUs and the other ranks' (plan `p`), and what stops it when that is outside them:
// "NCCL_IGNORE_CPU_AFFINITY=1: NCCL will pin its threads to GPU 3's 112 CPUs 0-55,112-167, 84 of
// them outside this rank's 42-55,154-167 (local rank(s) 0,1,2's): unset NCCL_IGNORE_CPU_AFFINITY
// (or set it to 0)".
std::vector<std::string> pinning_notes(const topo::Topology& t, const plan::Plan& p, const plan::RankBinding& rb,
                                       const std::map<std::string, std::string>& env);

// When this process may run on fewer CPUs (`affinity`) than its cgroup allows (t.allowed_cpus, a
// live topology's) though no launcher is known to have pinned it: what narrowed it is named where
// the environment says (AMD_CPU_AFFINITY: a HIP runtime a wrapper or the launcher loaded), else
// the mask's shape (one NUMA node's CPUs). gpubind plans within the narrower set.
std::optional<std::string> narrowed_before(const topo::Topology& t, const CpuSet& affinity, const std::map<std::string, std::string>& env);

// libgomp's GOMP_CPU_AFFINITY list ("0 3 1-2 4-15:2", spaces or commas); nullopt for junk.
std::optional<CpuSet> parse_gomp_cpu_list(const std::string& text);

}  // namespace gpubind::bind
