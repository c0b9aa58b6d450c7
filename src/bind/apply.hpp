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

// Checks and applies CPU affinity, memory policy and environment (plan::rank_environment).
// Unless best effort, a failed step undoes the ones before it (the CPU affinity back to
// m.allowed_cpus, the default memory policy, the variables as they were) and its Error says
// if any of that failed. Warnings (best effort) are appended to `warnings`.
Status apply_binding(const plan::Plan& p, const plan::RankBinding& rb, const MachineState& m, sys::Binder& binder,
                     BestEffort best_effort, std::vector<std::string>& warnings);

}  // namespace gpubind::bind
