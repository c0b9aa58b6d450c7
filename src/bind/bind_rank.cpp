#include "bind/bind_rank.hpp"

#include "bind/launcher_binding.hpp"

namespace gpubind::bind {

Result<BoundRank> bind_rank(const topo::Topology& t, const RankRequest& r, sys::Binder& binder) {
  auto req = make_request(r.options, t, r.from, r.gpu_env, r.allowance);
  if (!req) return req.error();
  BoundRank out;
  out.request = std::move(*req);
  auto p = plan::make_plan(t, out.request);
  if (!p) return p.error();
  // A launcher that bound ranks to whole NUMA nodes (--bind-to numa) gets socket-split, so no rank
  // has fewer cores than a node's share; unless the binding is gpubind's own plan for this rank
  // (plan --format rankfile -> mpirun --rankfile -> exec), which is kept as it is.
  if (r.policy_open && r.launcher_pinned && out.request.policy == plan::Policy::closest &&
      pinned_to_whole_numa_nodes(t, r.machine.allowed_cpus, t.allowed_cpus)) {
    auto ours = rank_binding(*p, r.local.rank, r.local.source, r.hint);
    out.split_sockets = !ours || ours->cpus != r.machine.allowed_cpus;
  }
  if (out.split_sockets) {
    out.request.policy = plan::Policy::socket_split;
    p = plan::make_plan(t, out.request);
    if (!p) return p.error();
  }
  out.plan = std::move(*p);
  auto mine = rank_binding(out.plan, r.local.rank, r.local.source, r.hint);
  if (!mine) return mine.error();
  out.binding = std::move(*mine);
  out.plan_warnings = plan::warnings_for_rank(out.plan, r.local.rank);
  if (r.launcher_pinned)
    out.launcher_note = judge_launcher_binding(t, out.binding, r.machine.allowed_cpus, t.allowed_cpus, r.keep_launcher).note;
  if (!r.apply) return out;
  MachineState m = r.machine;
  // sched_setaffinity may widen a launcher's pinning up to the node's (cgroup's) CPUs, never beyond.
  if (r.from == AllowedFrom::cgroup) m.allowed_cpus = t.allowed_cpus;
  out.applied = apply_binding(out.plan, out.binding, m, binder, r.best_effort, r.mem_refused, out.apply_warnings);
  return out;
}

}  // namespace gpubind::bind
