#pragma once
// This process's own CPU affinity (what cgroups, taskset, Slurm and Kubernetes allow it).
#include <optional>
#include <utility>

#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

Result<CpuSet> current_affinity();
// The memory nodes this process may allocate from (cpuset.mems: Mems_allowed_list of
// /proc/self/status), as a set of node OS indexes.
Result<CpuSet> current_mems_allowed();

// The CPU this thread runs on and its initial APIC id as CPUID leaf 1 answers there (EBX bits
// 31-24), read without a migration in between; nullopt off x86, or when the thread kept moving.
std::optional<std::pair<unsigned, unsigned>> current_cpu_apic_id();

}  // namespace gpubind::sys
