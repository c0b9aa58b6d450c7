#pragma once
// Renderings of a Plan: the table people read, JSON for programs, and the formats other
// launchers take (shell env, srun flags, an Open MPI rankfile, numactl command lines).
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace gpubind::render {

inline constexpr int kPlanSchemaVersion = 1;

// POSIX sh quoting: plain when every character is safe, else single quotes.
std::string shell_quote(const std::string& v);
// "K=V K=V", as a shell or `env` takes them (values quoted).
std::string env_words(const std::vector<std::pair<std::string, std::string>>& env);

std::string plan_table(const plan::Plan& p, bool explain);
nlohmann::ordered_json plan_json(const plan::Plan& p, bool explain);
// Shell `export` lines for one rank: plan::rank_environment, what `gpubind exec` sets.
// `kept`: thread-pool sizes (plan::kPoolSizeEnv) the rank's environment already has, which exec
// keeps: shown as comments instead of exports.
std::string plan_env(const plan::Plan& p, unsigned rank, const std::map<std::string, std::string>& kept = {});
// srun flags: --cpu-bind=mask_cpu:..., --gpu-bind=map_gpu:... (mask_gpu with several GPUs per
// rank), --mem-bind=... .
std::string plan_slurm(const plan::Plan& p);
// What --format slurm cannot say as planned: ranks preferring several nodes get their first.
std::vector<std::string> plan_slurm_notes(const plan::Plan& p);
// An Open MPI rankfile for the node's plan on every host of `hosts` (ranks numbered host by host:
// host i's local rank r is rank i*R+r). `logical` false: physical CPU numbers, for Open MPI 4
// (`mpirun --rankfile F --mca rmaps_rank_file_physical 1`); true: hwloc logical core indexes,
// which Open MPI 5 (PRRTE) requires (`mpirun --map-by rankfile:file=F`).
std::string plan_rankfile(const plan::Plan& p, const topo::Topology& t, const std::vector<std::string>& hosts, bool logical);
// One numactl command line per rank.
std::string plan_numactl(const plan::Plan& p);

// A map of the machine's PUs as Open MPI's --report-bindings draws it: one [...] per package,
// its cores separated by '/', one character per PU: 'B' in `cpus`, '.' not.
std::string core_map(const topo::Topology& t, const CpuSet& cpus);

// One rank's binding in the words every report of it uses (exec's and launch's --dry-run and
// --report-bindings, the SPANK plugin's --gpubind=verbose): "GPU 0 (0000:18:00.0, GPU-8f3c...),
// CPUs 0-27, memory preferred 0, NIC mlx5_0". The UUIDs are `t`'s GPUs' where known;
// `memory_note` says what became of the memory policy once applied ("refused by the container").
std::string describe_binding(const plan::RankBinding& rb, const topo::Topology& t, const std::string& memory_note = "");
// One --report-bindings line, as mpirun draws it: "[host:pid] gpubind: rank G (local L of N)
// bound to ...: [BB../....]". `global_rank` < 0: unknown ("?").
std::string report_line(const topo::Topology& t, int pid, long global_rank, unsigned local_size, const plan::RankBinding& rb,
                        const std::string& memory_note);

// Per-score text used by the plan table and by compare.
std::string format_share(const std::optional<double>& v);

}  // namespace gpubind::render
