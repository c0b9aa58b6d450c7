#pragma once
// The shape of a `gpubind launch` job, a function of its arguments only (no syscall, no
// environment read; the lint's pure set leaves it out because LaunchSpec comes with
// bind/launcher.hpp): launch's flags (torchrun's names and defaults) and the launcher variables of
// its environment (Slurm's under srun) in; this node's part of the job out: nodes, node rank, rendezvous host and port, run id, restarts, logs, the command. Every
// flag that cannot be honoured is an error naming it (ErrorKind::usage), never ignored.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bind/launcher.hpp"
#include "util/result.hpp"

namespace gpubind::bind {

// launch's flags as given; `rest` is what follows the options ("--" CMD ARGS, or torchrun's
// SCRIPT ARGS).
struct LaunchFlags {
  std::optional<unsigned> ranks;  // -n
  std::string nproc;              // --nproc-per-node: N, gpu, cpu or auto
  std::string nnodes;             // N or MIN:MAX
  std::optional<unsigned> node_rank, master_port, max_restarts;
  std::string master_addr, rdzv_backend = "static", rdzv_endpoint, rdzv_id, rdzv_conf, role = "default";
  std::string log_dir, redirects, tee;
  double grace_seconds = 10;
  // Accepted so torchrun's command lines run: gpubind notices every exit at once, and scripts
  // always run as new processes.
  double monitor_interval = 5;
  std::string start_method = "spawn";
  bool standalone = false, module = false, no_python = false, run_path = false;
  bool tag_output = false, no_bind = false, best_effort = false, quiet = false, require_mem_policy = false;
  bool dry_run = false, report = false, explain = false;  // --dry-run, --report-bindings, --explain (the CLI's)
  std::vector<std::string> rest;
};

struct JobShape {
  LaunchSpec spec;
  // No port given on a one-node job: the caller takes a free one (sys::free_tcp_port).
  bool needs_free_port = false;
  std::optional<unsigned> ranks;  // -n or --nproc-per-node N; else `ranks_from` says how
  std::string ranks_from;         // "", "gpu", "cpu" or "auto" (--nproc-per-node)
  double join_timeout_seconds = 600;  // how long a node other than 0 waits for node 0 (--rdzv-conf)
};

// The variables job_shape reads from the environment.
const std::vector<std::string>& job_env_names();

Result<JobShape> job_shape(const LaunchFlags& f, const std::map<std::string, std::string>& env);

}  // namespace gpubind::bind
