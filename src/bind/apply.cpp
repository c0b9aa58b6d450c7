#include "bind/apply.hpp"

#include "sys/affinity.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

using plan::MemPolicy;

Result<MachineState> current_machine_state() {
  auto online = sys::online_cpus();
  auto allowed = sys::current_affinity();
  auto nodes = sys::online_numa_nodes();
  if (!online) return online.error();
  if (!allowed) return allowed.error();
  if (!nodes) return nodes.error();
  return MachineState{*online, *allowed, *nodes};
}

Status apply_binding(const plan::Plan& p, const plan::RankBinding& rb, const MachineState& m, sys::Binder& binder,
                     BestEffort best_effort, std::vector<std::string>& warnings) {
  bool lenient = best_effort == BestEffort::yes;
  CpuSet cpus = rb.cpus;
  CpuSet nodes;
  for (unsigned n : rb.mem_nodes) nodes.set(n);

  // 1. Check everything first.
  std::vector<Error> problems;
  if (p.policy != plan::Policy::none) {
    if (!cpus.is_subset_of(m.online_cpus))
      problems.push_back({"CPUs " + (cpus - m.online_cpus).to_list(), "offline or not present (online: " + m.online_cpus.to_list() + ")"});
    if (!cpus.is_subset_of(m.allowed_cpus))
      problems.push_back({"CPUs " + (cpus - m.allowed_cpus).to_list(),
                          "outside this process's allowed CPUs " + m.allowed_cpus.to_list() + " (cgroup, taskset or Slurm)"});
  }
  if (rb.mem_policy != MemPolicy::none && !nodes.is_subset_of(m.online_nodes))
    problems.push_back({"NUMA node(s) " + (nodes - m.online_nodes).to_list(), "not online (online: " + m.online_nodes.to_list() + ")"});
  if (!problems.empty() && !lenient) return problems.front();
  for (const Error& e : problems) warnings.push_back(e.message());

  // 2. Apply. In best-effort mode an unusable part is narrowed to what can be applied.
  bool cpus_changed = false;
  if (p.policy != plan::Policy::none) {
    CpuSet usable = lenient ? cpus & m.online_cpus & m.allowed_cpus : cpus;
    if (usable.empty()) {
      warnings.push_back("no usable CPU left in " + cpus.to_list() + ": CPU affinity left unchanged");
    } else if (Status s = binder.set_cpu_affinity(usable); !s) {
      if (!lenient) return s;
      warnings.push_back(s.error().message());
    } else {
      cpus_changed = true;
    }
  }
  if (rb.mem_policy != MemPolicy::none && !nodes.empty()) {
    CpuSet usable = lenient ? nodes & m.online_nodes : nodes;
    sys::MemMode mode = rb.mem_policy == MemPolicy::bind         ? sys::MemMode::bind
                        : rb.mem_policy == MemPolicy::interleave ? sys::MemMode::interleave
                                                                 : sys::MemMode::preferred;
    if (usable.empty()) {
      warnings.push_back("no online node left in " + nodes.to_list() + ": memory policy left unchanged");
    } else if (Status s = binder.set_memory_policy(mode, usable); !s) {
      if (!lenient) {
        // All or nothing: a process told "unbound" must not stay pinned to the CPUs.
        if (cpus_changed && !m.allowed_cpus.empty() && !binder.set_cpu_affinity(m.allowed_cpus))
          return Error{s.error().what, s.error().why + "; the CPU affinity already set could not be undone"};
        return s;
      }
      warnings.push_back(s.error().message());
    }
  }
  for (const auto& [k, v] : plan::rank_environment(p, rb))
    if (Status s = binder.set_env(k, v); !s) return s;
  return Ok{};
}

}  // namespace gpubind::bind
