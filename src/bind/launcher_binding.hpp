#pragma once
// What a launcher (mpirun --bind-to, a rankfile, srun --cpu-bind) already did to this rank's
// CPUs, and what `gpubind exec` does about it. Pure: the CPUs are passed in.
#include <map>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "topo/topology.hpp"
#include "util/cpuset.hpp"

namespace gpubind::bind {

struct LauncherBinding {
  enum class Kind {
    unpinned,  // the launcher left the rank on every allowed CPU: nothing to report
    same,      // the launcher's CPUs are the plan's
    kept,      // --keep-launcher-binding: on the GPU's node(s) and at least as many cores
    narrowed,  // gpubind binds to a subset of the launcher's CPUs
    widened,   // gpubind binds to a superset of them (within the node's allowed CPUs)
    replaced,  // gpubind binds elsewhere
  };
  Kind kind = Kind::unpinned;
  CpuSet launcher;      // the CPUs the launcher gave
  std::string note;     // one line for stderr; "" for unpinned and same
};

// `rb` is this rank's planned binding; `launcher` the rank's affinity when exec started;
// `allowed` what the node allows (cgroup). With `keep`, a launcher binding that lies on the
// rank's GPU node(s) and has at least the planned number of cores replaces the planned CPUs in
// `rb` (and its OMP_NUM_THREADS).
LauncherBinding judge_launcher_binding(const topo::Topology& t, plan::RankBinding& rb, const CpuSet& launcher,
                                       const CpuSet& allowed, bool keep);

// True when the launcher pinned this rank to whole NUMA nodes (every allowed CPU of each node it
// touches, not the whole allowed set): `mpirun --bind-to numa`, `srun --cpu-bind=ldoms`. The ranks
// of such a job each expect a node's worth of cores; exec then plans socket-split (every core of
// the GPU's package, disjoint) instead of halving a GPU node between its ranks.
bool pinned_to_whole_numa_nodes(const topo::Topology& t, const CpuSet& launcher, const CpuSet& allowed);

}  // namespace gpubind::bind
