#include "bind/request.hpp"

#include "bind/pod_metadata.hpp"

namespace gpubind::bind {

void apply_config(const Config& cfg, PlanOptions& o, GivenExplicitly given) {
  if (cfg.policy && !given.policy) o.policy = *cfg.policy;
  if (cfg.mem && !given.mem) o.mem = *cfg.mem;
  if (cfg.reserve && !given.reserve) o.reserve = *cfg.reserve;
}

Result<plan::Request> make_request(const PlanOptions& o, const topo::Topology& t, AllowedFrom from,
                                   std::map<std::string, std::string> gpu_env, const probe::ProcessAllowance& live) {
  plan::Request r;
  r.ranks = o.ranks;
  r.gpus_per_rank = o.gpus_per_rank;
  r.rank_gpus = o.rank_gpus;
  auto policy = plan::policy_from_string(o.policy);
  if (!policy) return Error{"policy " + o.policy, "expected closest, socket-split, socket, numa, l3, cpu-only or none", ErrorKind::usage};
  r.policy = *policy;
  r.smt = !o.no_smt;
  r.balanced = o.balanced;
  auto mem = plan::mem_policy_from_string(o.mem);
  if (!mem) return Error{"mem " + o.mem, "expected preferred, bind, interleave or none", ErrorKind::usage};
  r.mem = *mem;
  r.mem_node = o.mem_node;
  r.mem_on_gpu = o.mem_on_gpu;
  r.nic_env = o.nic_env;
  r.isolate_gpus = o.isolate_gpus;
  r.spread_gpus = !o.no_spread_gpus;
  r.omp = o.omp;
  r.nccl_proxy_cpus = o.nccl_proxy_cpus;
  r.require_gpu = o.require_gpu;
  if (!o.reserve.empty()) {
    auto s = CpuSet::parse_list(o.reserve);
    if (!s) return Error{"--reserve", s.error().message(), ErrorKind::usage};
    r.reserve = *s;
  }
  if (!o.allowed.empty()) {
    auto s = CpuSet::parse_list(o.allowed);
    if (!s) return Error{"--allowed", s.error().message(), ErrorKind::usage};
    r.allowed = *s;
  } else if (from == AllowedFrom::affinity) {
    // cgroups, taskset, Slurm and Kubernetes cpusets all show up as this process's affinity.
    r.allowed = live.cpus & t.cpus;
  }
  if (!o.allowed_mems.empty()) {
    auto s = CpuSet::parse_list(o.allowed_mems);
    if (!s) return Error{"--allowed-mems", s.error().message(), ErrorKind::usage};
    r.allowed_mems = *s;
  } else if (from != AllowedFrom::topology) {
    r.allowed_mems = live.mems;
  }
  r.env = std::move(gpu_env);
  if (from != AllowedFrom::topology)
    r.pod_metadata = pod_metadata(live.pod_metadata_files, live.pod_metadata_unreadable, t, r.allowed.value_or(t.allowed_cpus));
  if (from != AllowedFrom::topology && !t.gpus.empty()) {
    // Which GPUs this process may open decides how the runtime numbers them.
    r.openable_gpus = live.openable_gpus;
    r.openable_mig_parents = live.openable_mig_parents;
  }
  return r;
}

Result<plan::RankBinding> rank_binding(const plan::Plan& plan, unsigned local_rank, const std::string& rank_source,
                                       const std::string& hint) {
  if (local_rank >= plan.ranks.size())
    return Error{rank_source + "=" + std::to_string(local_rank),
                 "the plan has only " + std::to_string(plan.ranks.size()) + " local ranks" + (hint.empty() ? "" : "; " + hint), ErrorKind::usage};
  return plan.ranks[local_rank];
}

}  // namespace gpubind::bind
