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
// #6712); libgomp (GOMP_CPU_AFFINITY: OpenMP threads pinned to the listed CPUs in turn). Pure.
#include <map>
#include <string>
#include <string_view>

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
    {"GOMP_CPU_AFFINITY", "libgomp (OpenMP)",
     "unset GOMP_CPU_AFFINITY (OMP_PLACES=cores with OMP_PROC_BIND=close pin within the rank's CPUs)"},
};

// Whether a knob is on in `env`: set to something other than "", "0", "false", "no" or "off" for
// the switches (NCCL_IGNORE_CPU_AFFINITY, AMD_CPU_AFFINITY); set at all for the CPU lists.
bool on(const std::map<std::string, std::string>& env, std::string_view name);

}  // namespace gpubind::topo::pinning_env
