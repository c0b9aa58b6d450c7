#pragma once
// Applying one rank's binding to this process, all or nothing: everything is checked against
// what Linux reports before the first syscall, so a binding that cannot be applied stops before
// anything changed (unless best effort was asked for).
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "sys/binder.hpp"

namespace gpubind::bind {

enum class BestEffort { no, yes };

struct MachineState {
  CpuSet online_cpus;
  CpuSet allowed_cpus;  // this process's affinity
  CpuSet online_nodes;
};

// What Linux says now: online CPUs and nodes under `root`, and this process's affinity. An
// Error for any root but this system's ("/"): a binding is applied to this machine only, never
// checked against a gathered tree or a fixture.
Result<MachineState> current_machine_state(const sys::FsRoot& root);
// current_machine_state under "/": what exec, launch and the plugin bind against.
Result<MachineState> live_machine_state();

// What became of a rank's memory policy when its binding was applied.
enum class MemoryApplied {
  unchanged,  // nothing to set (policy none, or best effort found no online node)
  set,        // set_mempolicy succeeded
  one_node,   // not called: the machine has one NUMA node, where any policy is the default's
  refused,    // refused by the environment (a container's seccomp profile, no CAP_SYS_NICE): CPUs kept
};
// The words --report-bindings, --verbose and the warnings use: "" for set and unchanged.
std::string memory_applied_note(MemoryApplied m);

// What a refused memory policy does: by default a warning, the CPU binding kept and
// GPUBIND_MEM_POLICY=refused exported; `error` (--require-mem-policy) fails the binding.
enum class MemRefused { warn, error };

struct Applied {
  MemoryApplied memory = MemoryApplied::unchanged;
  // The thread-pool sizes (plan::kPoolSizeEnv) set from the rank's cores, and those its
  // environment already had, kept as the user's (name, value).
  std::vector<std::pair<std::string, std::string>> pools_set, pools_kept;
  unsigned pool_size = 0;  // the size the plan gave them: the rank's cores
  // NCCL_PROXY_CPUSET (--nccl-proxy-cpus) as the rank has it, and whether it was the user's, kept.
  std::optional<std::pair<std::string, bool>> proxy_cpuset;
};

// One clause on the thread pools' sizes, as --report-bindings and --verbose say it: "thread pools:
// OMP_NUM_THREADS=14, MKL_NUM_THREADS=14 set to its 14 core(s); OPENBLAS_NUM_THREADS=32 kept (set
// before gpubind, over its 14 cores)", then NCCL_PROXY_CPUSET's where --nccl-proxy-cpus asked
// for it ("NCCL_PROXY_CPUSET=27,139 set to its last core"); "" when none was set or kept.
std::string pools_note(const Applied& a);

// Checks and applies CPU affinity, memory policy and environment (plan::rank_environment), but a
// thread-pool size (plan::kPoolSizeEnv) the process's environment already has, which is kept.
// Unless best effort, a failed step undoes the ones before it (the CPU affinity back to
// m.allowed_cpus, the default memory policy, the variables as they were) and its Error says
// if any of that failed. A memory policy the environment refuses (EPERM, EACCES, ENOSYS from
// set_mempolicy) is not a failed step unless `refused` is MemRefused::error: the warning says
// so once. On a machine with one online NUMA node set_mempolicy is not called at all.
// Warnings are appended to `warnings`.
Result<Applied> apply_binding(const plan::Plan& p, const plan::RankBinding& rb, const MachineState& m, sys::Binder& binder,
                              BestEffort best_effort, MemRefused refused, std::vector<std::string>& warnings);

}  // namespace gpubind::bind
