#pragma once
// The local launcher behind `gpubind launch`: starts N ranks with torchrun's environment
// contract, each bound by the plan, and supervises them like a launcher people trust: signals
// forwarded, fail-fast with a grace period, the first failure's status, no orphans.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "bind/apply.hpp"
#include "plan/plan.hpp"

namespace gpubind::bind {

struct LaunchSpec {
  std::vector<std::string> command;
  unsigned nnodes = 1;
  unsigned node_rank = 0;
  std::string master_addr = "127.0.0.1";
  unsigned master_port = 29500;
  std::string run_id = "gpubind";
  bool bind = true;               // false: --no-bind (environment contract only)
  bool tag_output = false;        // prefix every output line with "[RANK] "
  std::chrono::milliseconds grace{10000};  // SIGTERM -> SIGKILL
  BestEffort best_effort = BestEffort::no;
  bool quiet = false;             // no warnings on stderr
};

struct RankOutcome {
  unsigned local_rank = 0;
  unsigned global_rank = 0;
  int pid = -1;
  int exit_code = 0;  // the rank's status as a shell reports it: code, or 128+signal
  int signal = 0;
  bool started = false;
  double wall_seconds = 0;
};

struct LaunchResult {
  int exit_code = 0;                   // the first failing rank's, else 0
  std::optional<unsigned> first_failure;  // local rank
  int forwarded_signal = 0;            // a signal launch received and passed on
  std::vector<RankOutcome> ranks;
};

// The environment one rank gets from the launcher (torchrun's names).
std::vector<std::pair<std::string, std::string>> launcher_environment(const LaunchSpec& spec, unsigned local_rank,
                                                                      unsigned local_size);

Result<LaunchResult> launch(const plan::Plan& plan, const MachineState& machine, const LaunchSpec& spec);

}  // namespace gpubind::bind
