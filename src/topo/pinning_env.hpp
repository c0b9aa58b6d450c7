#pragma once
// The variables with which libraries inside a rank set its threads' CPUs themselves (issue 55),
// named once: `exec` and `launch` say what each will do to a rank's binding (bind/pinning.hpp),
// `watch` names the library and the variable behind a thread whose CPUs changed. Each was read in
// its library's source: NCCL's src/graph/topo.cc (ncclTopoGetCpuAffinity: its threads get the
// process's CPUs within the GPU's, or with NCCL_IGNORE_CPU_AFFINITY the GPU's CPUs whatever the
// process's; "empty, ignoring" when the two share none) and src/proxy.cc (NCCL_PROXY_CPUSET, from
// 2.28: its proxy service threads and the progress threads they start get that list); ROCm clr
// (AMD_CPU_AFFINITY: the HIP runtime pins the thread that initializes it to its GPU's nearest NUMA
// node, and every process that thread forks inherits it; default off again since rocm-systems PR
// #6712), and AMD_GRAPH_CPU_AFFINITY (rocm-systems PR #6855, 2026-06: the thread launching a HIP
// graph pinned to its GPU's nearest NUMA node for each launch, or held there with
// AMD_GRAPH_CPU_AFFINITY_HOLD=1); libgomp (GOMP_CPU_AFFINITY: OpenMP threads pinned to the listed
// CPUs in turn). Pure.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/cpuset.hpp"

namespace gpubind::topo::pinning_env {

struct Knob {
  const char* name;
  const char* library;
  const char* stop;  // what keeps the library's threads within the rank's CPUs
};

inline constexpr Knob kKnobs[] = {
    {"NCCL_IGNORE_CPU_AFFINITY", "NCCL", "unset NCCL_IGNORE_CPU_AFFINITY (or set it to 0)"},
    {"NCCL_PROXY_CPUSET", "NCCL", "unset NCCL_PROXY_CPUSET, or list CPUs of the rank's in it"},
    {"AMD_CPU_AFFINITY", "the HIP runtime", "set AMD_CPU_AFFINITY=0"},
    {"AMD_GRAPH_CPU_AFFINITY", "the HIP runtime", "unset AMD_GRAPH_CPU_AFFINITY (or set it to 0)"},
    {"GOMP_CPU_AFFINITY", "libgomp (OpenMP)",
     "unset GOMP_CPU_AFFINITY (OMP_PLACES=cores with OMP_PROC_BIND=close pin within the rank's CPUs)"},
};

// Read beside the knobs for exec's and launch's notes: a knob's modifier, and a runtime's memory
// placement (AMD_GRAPH_NUMA_BIND, rocm-systems PR #6738: a HIP graph's host-side packet buffers
// placed on the GPU's nearest NUMA node, mbind preferred; no thread pinned).
inline constexpr const char* kAlsoRead[] = {"AMD_GRAPH_CPU_AFFINITY_HOLD", "AMD_GRAPH_NUMA_BIND"};
// Every variable the notes read: the knobs', then kAlsoRead.
std::vector<std::string> names_read();

// Whether a knob is on in `env`: set to something other than "", "0", "false", "no" or "off" for
// the switches (NCCL_IGNORE_CPU_AFFINITY, AMD_CPU_AFFINITY); set at all for the CPU lists.
bool on(const std::map<std::string, std::string>& env, std::string_view name);

// A CPU list as NCCL reads NCCL_PROXY_CPUSET (ncclStrListToCpuset, src/include/cpuset.h, 2.28 to
// 2.30): the tokens between commas, empty ones skipped, each strtoull(token, NULL, 0): "0x10" is
// 16, "010" is 8, "0-3" is 0 (no ranges), a token without digits 0. Ids past topo::kMaxCpuId are
// left out: NCCL's set has no room for them.
CpuSet nccl_cpu_list(std::string_view text);

}  // namespace gpubind::topo::pinning_env
