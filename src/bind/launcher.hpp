#pragma once
// The local launcher behind `gpubind launch`: starts N ranks with torchrun's environment
// contract, each bound by the plan, and supervises them like a launcher people trust: signals
// forwarded, fail-fast with a grace period, the first failure's status, no orphans.
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bind/apply.hpp"
#include "bind/supervisor.hpp"
#include "bind/torchrun.hpp"
#include "plan/plan.hpp"

namespace gpubind::bind {

struct LaunchSpec {
  std::vector<std::string> command;
  bool substitute_local_rank = false;  // replace "${local_rank}" in the command (torchrun's macro)
  unsigned nnodes = 1;
  unsigned node_rank = 0;
  std::string master_addr = "127.0.0.1";
  unsigned master_port = 29500;
  std::string run_id = "gpubind";
  std::string role = "default";   // ROLE_NAME
  unsigned max_restarts = 0;      // restart the whole worker group this many times on failure
  unsigned restart_count = 0;     // this attempt (set by launch)
  std::string nccl_async_error_handling = "1";  // NCCL_ASYNC_ERROR_HANDLING / TORCH_NCCL_...
  // Per-rank output files, as torchrun: LOG_DIR/RUN_ID/attempt_N/LOCAL_RANK/{stdout,stderr}.log.
  std::string log_dir;
  StreamSelection redirects;      // to the file only
  StreamSelection tee;            // to the file and the console
  bool bind = true;               // false: --no-bind (environment contract only)
  bool tag_output = false;        // prefix every output line with "[GLOBAL_RANK] "
  std::chrono::milliseconds grace{10000};  // SIGTERM -> SIGKILL
  BestEffort best_effort = BestEffort::no;
  MemRefused mem_refused = MemRefused::warn;
  bool quiet = false;             // no warnings on stderr
  // Called in each rank's process once its binding is applied, before the command runs
  // (--report-bindings); empty: nothing.
  std::function<void(const plan::RankBinding&, const Applied&)> on_bound;
};

// The environment one rank gets from the launcher (torchrun's names).
std::vector<std::pair<std::string, std::string>> launcher_environment(const LaunchSpec& spec, unsigned local_rank,
                                                                      unsigned local_size);

// Starts the worker group and supervises it (bind/supervisor.hpp); on a failure (not a signal to
// launch itself) the whole group is restarted up to spec.max_restarts times, as torchrun does.
Result<LaunchResult> launch(const plan::Plan& plan, const MachineState& machine, const LaunchSpec& spec, sys::Spawner& spawner,
                            const sys::Clock& clock);

// For nodes other than node 0 of a multi-node job: waits until MASTER_ADDR:MASTER_PORT accepts
// connections (node 0's rank 0 hosts the store), polling, for at most `timeout`. An unreachable
// master is an error after the timeout, not a hang.
Status wait_for_master(const std::string& host, unsigned port, std::chrono::milliseconds timeout, const sys::Clock& clock);

}  // namespace gpubind::bind
