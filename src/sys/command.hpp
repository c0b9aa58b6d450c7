#pragma once
// Running another program to completion and keeping what it printed: what `check --slurm-job`
// asks of Slurm's own commands (squeue for the job's node count, srun for the fan-out).
#include <chrono>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace gpubind::sys {

struct CommandResult {
  int exit_code = 0;    // 128+N when a signal N ended it
  std::string out;      // its standard output, at most kMaxCommandOutput bytes
  std::string err;      // its standard error, the same
  bool truncated = false;
};

constexpr size_t kMaxCommandOutput = 64u << 20;

// Runs argv[0] (searched in PATH) with this process's environment, stdin from /dev/null. The
// child dies with this process (PR_SET_PDEATHSIG) and is killed after `deadline`, which is an
// Error that says so, as is a program that cannot be started (exit 127 before it printed).
Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::seconds deadline);

}  // namespace gpubind::sys
