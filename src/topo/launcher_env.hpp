#pragma once
// The launchers' variables, named once: which local rank a process is, its global rank, its
// job. `exec`, `launch` and the SPANK plugin read them to bind; `check`, `watch` and the probe
// read them back from running processes. Pure (the environment is passed in as a map), so every
// layer may include it, as topo/binding_env.hpp names the GPUBIND_* variables gpubind exports.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace gpubind::topo {

namespace launcher_env {

struct LocalRankVars {
  const char* rank;
  const char* size;  // nullptr: the launcher gives no local size in a variable of its own
};

// The launchers, in the order they are tried: SLURM_LOCALID (Slurm's srun; its size from
// SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE at SLURM_NODEID), Open MPI, MPICH and Intel
// MPI, PMI, HPE Cray PALS, MVAPICH2, Flux, IBM jsrun, then torchrun (DeepSpeed and accelerate set
// the same two).
inline constexpr LocalRankVars kLocalRank[] = {
    {"SLURM_LOCALID", nullptr},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"},
    {"PALS_LOCAL_RANKID", "PALS_LOCAL_SIZE"},
    {"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},
    {"FLUX_TASK_LOCAL_ID", nullptr},
    {"JSM_NAMESPACE_LOCAL_RANK", "JSM_NAMESPACE_LOCAL_SIZE"},
    {"LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};
// Slurm's per-node task counts and which node this is, for SLURM_LOCALID's size.
inline constexpr const char* kSlurmCounts[] = {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID"};
// A process's global rank, in the order tried.
inline constexpr const char* kGlobalRank[] = {"RANK",     "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",  "PMIX_RANK",
                                             "PMI_RANK", "PALS_RANKID",          "FLUX_TASK_RANK"};
// The job a rank belongs to: Slurm's, else torchrun's run id.
inline constexpr const char* kJob[] = {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"};

}  // namespace launcher_env

struct LocalRank {
  unsigned rank = 0;
  std::optional<unsigned> size;  // local ranks on this node, when the launcher says
  std::string source;            // the variable it came from, e.g. "SLURM_LOCALID"
};

// The first launcher of launcher_env::kLocalRank whose rank variable is set, with one exception:
// a launcher started inside a one-task-per-node Slurm step (srun ... torchrun) gives its workers
// SLURM_LOCALID 0 each, so when Slurm's size here is 1 (or unknown) and a later launcher says
// more than one local rank, that later launcher's variables win. nullopt when none is set; an
// Error when one is set to nonsense.
Result<std::optional<LocalRank>> detect_local_rank(const std::map<std::string, std::string>& env);

// Every variable detect_local_rank reads, for copying them out of a process's environment.
const std::vector<std::string>& local_rank_env_names();

// The job-wide rank from launcher_env::kGlobalRank, or -1 when none says.
long global_rank(const std::map<std::string, std::string>& env);
const std::vector<std::string>& global_rank_env_names();

// Expands Slurm's compressed task counts "2(x3),1" -> {2,2,2,1}; nullopt when malformed or
// when it names more than kMaxSlurmNodes nodes (a 130 KB value could otherwise ask for 4 GB).
inline constexpr size_t kMaxSlurmNodes = 1u << 20;
std::optional<std::vector<unsigned>> expand_slurm_counts(const std::string& s);

}  // namespace gpubind::topo
