#pragma once
// This process's own CPU affinity (what cgroups, taskset, Slurm and Kubernetes allow it).
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

Result<CpuSet> current_affinity();

}  // namespace gpubind::sys
