#pragma once
// `check --slurm-job JOBID` and `watch --slurm-job JOBID`, run from anywhere a Slurm client runs:
// squeue says how many nodes the running job has, srun runs `gpubind check|watch --slurm-node
// JOBID` on each beside the job's steps, and the nodes' lines are merged (check/slurm_job.hpp).
#include <chrono>
#include <string>
#include <vector>

#include "check/slurm_job.hpp"
#include "util/result.hpp"

namespace gpubind::cli {

// `pass`: the flags every node's command gets. An Error when the job cannot be checked at all
// (bad id, squeue or srun missing, the job not running); a node that fails is an error in the
// report.
Result<check::JobReport> check_slurm_job(const std::string& job, const std::vector<std::string>& pass);

// The same for watch, whose nodes run for `expected` (their --duration or --count) before srun
// returns and their summaries are merged.
Result<check::JobWatchReport> watch_slurm_job(const std::string& job, const std::vector<std::string>& pass,
                                              std::chrono::seconds expected);

}  // namespace gpubind::cli
