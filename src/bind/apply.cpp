#include "bind/apply.hpp"

#include <algorithm>
#include <optional>

#include "sys/affinity.hpp"
#include "topo/binding_env.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

using plan::MemPolicy;

Result<MachineState> current_machine_state(const sys::FsRoot& root) {
  if (!root.is_this_system())
    return Error{"binding", "refused under " + root.describe() + ": a binding is applied to this machine (root /) only"};
  auto online = sys::online_cpus(root);
  auto allowed = sys::current_affinity();
  auto nodes = sys::online_numa_nodes(root);
  if (!online) return online.error();
  if (!allowed) return allowed.error();
  if (!nodes) return nodes.error();
  return MachineState{*online, *allowed, *nodes};
}

Result<MachineState> live_machine_state() {
  auto root = sys::open_fsroot("/");
  if (!root) return root.error();
  return current_machine_state(**root);
}

std::string memory_applied_note(MemoryApplied m) {
  switch (m) {
    case MemoryApplied::refused: return "refused by the container";
    case MemoryApplied::one_node: return "not set: one NUMA node";
    case MemoryApplied::unchanged:
    case MemoryApplied::set: break;
  }
  return "";
}

Result<Applied> apply_binding(const plan::Plan& p, const plan::RankBinding& rb, const MachineState& m, sys::Binder& binder,
                              BestEffort best_effort, MemRefused refused, std::vector<std::string>& warnings) {
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

  // 2. Apply. In best-effort mode an unusable part is narrowed to what can be applied. Without
  // it, a step that fails undoes the steps before it (all or nothing: a process told "unbound"
  // must not stay pinned, nor carry GPUBIND_* variables that describe a binding it lacks).
  bool cpus_changed = false;
  bool mem_changed = false;
  std::vector<std::pair<std::string, std::optional<std::string>>> env_before;  // variables set so far
  auto undo = [&](const Error& failure) -> Error {
    std::vector<std::string> left;
    for (auto it = env_before.rbegin(); it != env_before.rend(); ++it) {
      Status s = it->second ? binder.set_env(it->first, *it->second) : binder.unset_env(it->first);
      if (!s) left.push_back("the environment");
    }
    if (mem_changed && !binder.reset_memory_policy()) left.push_back("the memory policy");
    if (cpus_changed && (m.allowed_cpus.empty() || !binder.set_cpu_affinity(m.allowed_cpus))) left.push_back("the CPU affinity");
    if (left.empty()) return failure;
    left.erase(std::unique(left.begin(), left.end()), left.end());
    return Error{failure.what, failure.why + "; " + join(left, " and ") + " already set could not be undone"};
  };
  if (p.policy != plan::Policy::none) {
    CpuSet usable = lenient ? cpus & m.online_cpus & m.allowed_cpus : cpus;
    if (usable.empty()) {
      warnings.push_back("no usable CPU left in " + cpus.to_list() + ": CPU affinity left unchanged");
    } else if (Status s = binder.set_cpu_affinity(usable); !s) {
      if (!lenient) return s.error();
      warnings.push_back(s.error().message());
    } else {
      cpus_changed = true;
    }
  }
  Applied applied;
  if (rb.mem_policy != MemPolicy::none && !nodes.empty()) {
    CpuSet usable = lenient ? nodes & m.online_nodes : nodes;
    sys::MemMode mode = rb.mem_policy == MemPolicy::bind         ? sys::MemMode::bind
                        : rb.mem_policy == MemPolicy::interleave ? sys::MemMode::interleave
                                                                 : sys::MemMode::preferred;
    if (usable.empty()) {
      warnings.push_back("no online node left in " + nodes.to_list() + ": memory policy left unchanged");
    } else if (m.online_nodes.count() == 1 && usable == m.online_nodes) {
      applied.memory = MemoryApplied::one_node;  // every page is on that node whatever the policy
    } else if (Status s = binder.set_memory_policy(mode, usable); !s) {
      // A container's seccomp profile (Docker's, containerd's: set_mempolicy only with
      // CAP_SYS_NICE) answers EPERM or ENOSYS; the CPU binding still holds.
      bool refusal = s.error().kind == ErrorKind::permission || s.error().kind == ErrorKind::unsupported;
      if (refusal && refused == MemRefused::warn) {
        applied.memory = MemoryApplied::refused;
        warnings.push_back("local rank " + std::to_string(rb.local_rank) + ": memory policy refused by the container (" +
                           s.error().message() + "): CPUs " + (cpus_changed ? "bound" : "as they were") +
                           ", pages placed by first touch (CAP_SYS_NICE or a seccomp profile that allows set_mempolicy "
                           "lifts this; --require-mem-policy, in plugstack.conf require-mem-policy, makes it an error)");
      } else if (!lenient || refusal) {
        return undo(s.error());
      } else {
        warnings.push_back(s.error().message());
      }
    } else {
      mem_changed = true;
      applied.memory = MemoryApplied::set;
    }
  }
  for (const auto& [k, v] : plan::rank_environment(p, rb)) {
    std::optional<std::string> before = binder.get_env(k);
    if (plan::is_pool_size_env(k)) {
      applied.pool_size = unsigned(parse_uint(v).value_or(0));
      (before ? applied.pools_kept : applied.pools_set).emplace_back(k, before ? *before : v);
    }
    if (k == plan::kNcclProxyCpusetEnv) applied.proxy_cpuset = std::make_pair(before ? *before : v, before.has_value());
    if (plan::is_user_kept_env(k) && before) continue;  // the user's (or the launcher's) value stands
    bool was_refused = k == topo::binding_env::kMemPolicy && applied.memory == MemoryApplied::refused;
    if (Status s = binder.set_env(k, was_refused ? "refused" : v); !s) return undo(s.error());
    env_before.emplace_back(k, std::move(before));
  }
  return applied;
}

std::string pools_note(const Applied& a) {
  unsigned cores = a.pool_size;
  auto words = [](const std::vector<std::pair<std::string, std::string>>& vars) {
    std::vector<std::string> out;
    for (const auto& [k, v] : vars) out.push_back(k + "=" + one_line(v));
    return join(out, ", ");
  };
  std::vector<std::string> parts;
  if (!a.pools_set.empty()) parts.push_back(words(a.pools_set) + " set to its " + std::to_string(cores) + " core(s)");
  if (!a.pools_kept.empty()) {
    bool over = std::any_of(a.pools_kept.begin(), a.pools_kept.end(), [&](const auto& kv) {
      auto n = parse_uint(kv.second);
      return n && *n > cores;
    });
    parts.push_back(words(a.pools_kept) + " kept (set before gpubind" +
                    (over ? ", over its " + std::to_string(cores) + " core(s): its pools will wait for CPUs" : std::string()) + ")");
  }
  std::string out = parts.empty() ? "" : "thread pools: " + join(parts, "; ");
  if (a.proxy_cpuset)
    out += std::string(out.empty() ? "" : "; ") + plan::kNcclProxyCpusetEnv + "=" + one_line(a.proxy_cpuset->first) +
           (a.proxy_cpuset->second ? " kept (set before gpubind)" : " set to its last core");
  return out;
}

}  // namespace gpubind::bind
