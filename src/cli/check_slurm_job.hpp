#pragma once
// `check --slurm-job JOBID` run from anywhere a Slurm client runs: squeue says how many nodes the
// job has, srun runs `gpubind check --slurm-node JOBID` on each beside the job's steps, and the
// nodes' lines are merged (check/slurm_job.hpp).
#include <string>
#include <vector>

#include "check/slurm_job.hpp"
#include "util/result.hpp"

namespace gpubind::cli {

// `pass`: check's flags every node gets. An Error when the job cannot be checked at all (bad id,
// squeue or srun missing, the job not running); a node that fails is an error in the report.
Result<check::JobReport> check_slurm_job(const std::string& job, const std::vector<std::string>& pass);

}  // namespace gpubind::cli
