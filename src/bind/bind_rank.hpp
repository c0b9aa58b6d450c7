#pragma once
// Binding one rank: the sequence `gpubind exec` and the SPANK plugin share, after each has found
// the topology (a file, the cache, the admin's) and which local rank it binds:
//   request (options, GPU variables, where the allowed CPUs come from) -> a launcher that pinned
//   whole NUMA nodes turns closest into socket-split -> plan -> this rank's row -> the launcher's
//   binding judged (kept on request) -> applied, all or nothing, through a sys::Binder.
// Pure apart from the Binder: what Linux says (the machine's state, what the process may use)
// comes in with the request.
#include <map>
#include <string>
#include <vector>

#include "bind/apply.hpp"
#include "topo/launcher_env.hpp"
#include "bind/request.hpp"
#include "plan/plan.hpp"
#include "sys/binder.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::bind {

struct RankRequest {
  PlanOptions options;  // `ranks` the node's local ranks
  topo::LocalRank local;
  AllowedFrom from = AllowedFrom::cgroup;
  std::map<std::string, std::string> gpu_env;  // the GPU-selection variables (plan::gpu_env_names())
  MachineState machine;                        // what Linux says now, or a dry run's stand-in
  // What the process may use (probe::this_process_allowance), planned within unless `from` is
  // the topology; a test's stand-in reads nothing of the host.
  probe::ProcessAllowance allowance;
  // A launcher may have pinned the rank (srun, mpirun): judge that binding against the plan,
  // and keep it when `keep_launcher` and it is as good.
  bool launcher_pinned = false;
  bool keep_launcher = false;
  // Nobody chose the policy: a launcher that pinned ranks to whole NUMA nodes (mpirun --bind-to
  // numa, srun --cpu-bind=ldoms) gets socket-split instead of closest.
  bool policy_open = false;
  bool apply = true;  // false: plan only (a dry run)
  std::string hint;   // what the user can do when the launcher started more ranks than were planned
  BestEffort best_effort = BestEffort::no;
  MemRefused mem_refused = MemRefused::warn;  // --require-mem-policy: error
};

struct BoundRank {
  plan::Request request;
  plan::Plan plan;
  plan::RankBinding binding;
  bool split_sockets = false;               // closest became socket-split for the launcher's NUMA pinning
  std::string launcher_note;                // what became of the launcher's binding, or ""
  std::vector<std::string> plan_warnings;   // the plan's, for this rank
  std::vector<std::string> apply_warnings;  // best effort's
  Result<Applied> applied = Applied{};       // apply_binding's result; nothing applied when nothing was to be
};

// An Error when no binding can be planned for the rank (bad options, too few ranks planned);
// a binding planned but not applied is BoundRank::applied's error, with the rest filled in.
Result<BoundRank> bind_rank(const topo::Topology& t, const RankRequest& r, sys::Binder& binder);

}  // namespace gpubind::bind
