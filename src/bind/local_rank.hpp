#pragma once
// Which local rank this process is, from the launcher's environment. Pure: the environment is
// passed in as a map.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace gpubind::bind {

struct LocalRank {
  unsigned rank = 0;
  std::optional<unsigned> size;  // local ranks on this node, when the launcher says
  std::string source;            // the variable it came from, e.g. "SLURM_LOCALID"
};

// First match wins, in this order: SLURM_LOCALID (size from SLURM_STEP_TASKS_PER_NODE or
// SLURM_TASKS_PER_NODE at SLURM_NODEID), OMPI_COMM_WORLD_LOCAL_RANK/SIZE (Open MPI),
// MPI_LOCALRANKID/MPI_LOCALNRANKS (MPICH, Intel MPI), PMI_LOCAL_RANK/SIZE, PALS_LOCAL_RANKID/SIZE
// (HPE Cray PALS), MV2_COMM_WORLD_LOCAL_RANK/SIZE (MVAPICH2), FLUX_TASK_LOCAL_ID (Flux),
// JSM_NAMESPACE_LOCAL_RANK/SIZE (IBM jsrun), LOCAL_RANK/LOCAL_WORLD_SIZE (torchrun, DeepSpeed,
// accelerate). nullopt when none is set; an Error when one is set to nonsense.
Result<std::optional<LocalRank>> detect_local_rank(const std::map<std::string, std::string>& env);

// The variables detect_local_rank reads, for copying them out of the process environment.
const std::vector<std::string>& local_rank_env_names();

// Expands Slurm's compressed task counts "2(x3),1" -> {2,2,2,1}; nullopt when malformed or
// when it names more than kMaxSlurmNodes nodes (a 130 KB value could otherwise ask for 4 GB).
inline constexpr size_t kMaxSlurmNodes = 1u << 20;
std::optional<std::vector<unsigned>> expand_slurm_counts(const std::string& s);

}  // namespace gpubind::bind
