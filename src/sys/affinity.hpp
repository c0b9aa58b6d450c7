#pragma once
// This process's own CPU affinity (what cgroups, taskset, Slurm and Kubernetes allow it).
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

Result<CpuSet> current_affinity();
// The memory nodes this process may allocate from (cpuset.mems: Mems_allowed_list of
// /proc/self/status), as a set of node OS indexes.
Result<CpuSet> current_mems_allowed();

}  // namespace gpubind::sys
