#pragma once
// The one way from planning options to a bound rank, shared by `exec`, `launch` and the SPANK
// plugin (and by `plan`/`compare`, which stop before binding):
//   options (flags, gpubind.conf, plugstack.conf)  -> make_request -> plan::make_plan
//   -> rank_binding (this local rank's part) -> apply_binding (bind/apply.hpp)
// The options are the same everywhere; only where they come from differs.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bind/config.hpp"
#include "plan/plan.hpp"
#include "probe/state.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::bind {

struct PlanOptions {
  std::optional<unsigned> ranks;
  std::optional<unsigned> gpus_per_rank;
  std::string policy = "closest";
  bool no_smt = false;
  std::string reserve;       // cpulist
  std::string allowed;       // cpulist; "" = from AllowedFrom
  std::string allowed_mems;  // list; "" = from AllowedFrom
  std::string mem = "preferred";
  std::optional<unsigned> mem_node;
  bool mem_on_gpu = false;
  bool nic_env = false;
  bool isolate_gpus = false;
  bool no_spread_gpus = false;
  bool omp = false;
  bool nccl_proxy_cpus = false;
  bool balanced = false;
  bool require_gpu = false;
  // Each rank's GPUs as positions in the visible list (plan::Request::rank_gpus): Slurm's
  // per-task GPU binding, read by the SPANK plugin (bind/slurm_step.hpp).
  std::vector<std::vector<unsigned>> rank_gpus;
};

// Which of policy, mem and reserve the user gave explicitly (they win over gpubind.conf).
struct GivenExplicitly {
  bool policy = false;
  bool mem = false;
  bool reserve = false;
};

// Fills policy, mem and reserve from gpubind.conf where not given explicitly.
void apply_config(const Config& cfg, PlanOptions& o, GivenExplicitly given);

// Where the allowed CPUs come from when PlanOptions::allowed is empty.
enum class AllowedFrom {
  topology,  // a file topology: all its allowed PUs; memory nodes: all
  affinity,  // this process's affinity (taskset, a cgroup): plan, compare, launch, exec under torchrun
  cgroup,    // the topology's allowed set, which live is the cgroup cpuset: exec under a launcher that
             // may already have pinned each rank to a core or two (srun --cpu-bind, mpirun
             // --bind-to core), and the SPANK plugin, so the node's ranks plan over the same set
};

// Builds the Request from the options, the GPU-selection variables `gpu_env` (the process's or
// the task's: plan::gpu_env_names()) and, unless from == topology, what the process may use
// (`live`: its affinity, cpuset.mems and which GPU device files it may open, read by
// probe::this_process_allowance). Pure. Errors name the option.
Result<plan::Request> make_request(const PlanOptions& o, const topo::Topology& t, AllowedFrom from,
                                   std::map<std::string, std::string> gpu_env, const probe::ProcessAllowance& live);

// Local rank `local_rank`'s binding in `plan`; an Error when the plan has fewer ranks (the
// launcher started more than were planned). `rank_source` names where the rank came from
// (SLURM_LOCALID, --local-rank...) for the message, `hint` what the user can do about it.
Result<plan::RankBinding> rank_binding(const plan::Plan& plan, unsigned local_rank, const std::string& rank_source,
                                       const std::string& hint = "");

}  // namespace gpubind::bind
