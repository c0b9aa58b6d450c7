// gpubind launch: a torchrun-compatible local launcher whose every rank is bound.
#include <cstdio>
#include <cstdlib>

#include "bind/hostlist.hpp"
#include "bind/launcher.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/live_cache.hpp"
#include "render/table.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

std::string status_text(const bind::RankOutcome& r) {
  if (!r.started) return "not started";
  if (r.signal) return "killed by signal " + std::to_string(r.signal) + " (" + std::to_string(r.exit_code) + ")";
  return "exit " + std::to_string(r.exit_code);
}

std::optional<unsigned> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  auto n = parse_uint(v);
  return n ? std::optional<unsigned>(unsigned(*n)) : std::nullopt;
}

}  // namespace

int cmd_launch(const std::vector<std::string>& args) {
  CLI::App app("Start N local ranks with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR...), each "
               "bound to its GPU's CPUs, memory and NIC, and supervise them. Usage: gpubind launch -n N [options] -- CMD "
               "[ARGS...]",
               "gpubind launch");
  PlanOptions o;
  std::optional<unsigned> nnodes, node_rank, master_port;
  std::string master_addr;
  bool tag_output = false, no_bind = false, best_effort = false, no_cache = false;
  double grace_seconds = 10;
  add_plan_options(app, o);
  app.add_option("--nnodes", nnodes, "Nodes in the job (default 1, or SLURM_NNODES under srun)");
  app.add_option("--node-rank", node_rank, "This node's rank (default 0, or SLURM_NODEID under srun)");
  app.add_option("--master-addr", master_addr, "Rendezvous host (default 127.0.0.1, or the first host of SLURM_JOB_NODELIST)");
  app.add_option("--master-port", master_port, "Rendezvous port (default: a free port on one node, 29500 on several)");
  app.add_flag("--tag-output", tag_output, "Prefix every output line with its rank");
  app.add_option("--grace", grace_seconds, "Seconds between SIGTERM and SIGKILL when stopping ranks (default 10)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_flag("--no-bind", no_bind, "Set the environment only; bind nothing");
  app.add_flag("--best-effort", best_effort, "Start ranks even when part of a binding cannot be applied");
  app.add_flag("--no-cache", no_cache, "Discover this machine afresh instead of using the topology cache");

  bind::LaunchSpec spec;
  if (int rc = parse_with_command(app, args, kExitUsage, spec.command); rc >= 0) return rc;

  spec.bind = !no_bind;
  spec.tag_output = tag_output;
  spec.grace = std::chrono::milliseconds(long(grace_seconds * 1000));
  spec.best_effort = best_effort ? bind::BestEffort::yes : bind::BestEffort::no;
  spec.quiet = o.quiet;

  // Under srun with one launch per node, the job's shape comes from Slurm.
  bool under_srun = std::getenv("SLURM_STEP_ID") && std::getenv("SLURM_NNODES") && std::getenv("SLURM_NODEID");
  spec.nnodes = nnodes.value_or(under_srun ? env_number("SLURM_NNODES").value_or(1) : 1);
  spec.node_rank = node_rank.value_or(under_srun ? env_number("SLURM_NODEID").value_or(0) : 0);
  if (spec.nnodes == 0) return fail(Error{"--nnodes", "must be at least 1"}, kExitUsage);
  if (spec.node_rank >= spec.nnodes)
    return fail(Error{"--node-rank " + std::to_string(spec.node_rank), "not below --nnodes " + std::to_string(spec.nnodes)}, kExitUsage);
  if (!master_addr.empty()) {
    spec.master_addr = master_addr;
  } else if (under_srun && spec.nnodes > 1) {
    const char* list = std::getenv("SLURM_JOB_NODELIST");
    auto host = list ? bind::first_host(list) : std::nullopt;
    if (!host) return fail(Error{"SLURM_JOB_NODELIST", "cannot find the first host; give --master-addr"}, kExitUsage);
    spec.master_addr = *host;
  } else if (spec.nnodes > 1) {
    return fail(Error{"--nnodes " + std::to_string(spec.nnodes), "several nodes need --master-addr"}, kExitUsage);
  }
  if (master_port) {
    spec.master_port = *master_port;
  } else if (spec.nnodes == 1) {
    auto port = sys::free_tcp_port();
    if (!port) return fail(port.error(), kExitFailure);
    spec.master_port = *port;
  }
  if (const char* job = std::getenv("SLURM_JOB_ID")) spec.run_id = std::string("slurm-") + job;

  // This machine, or an admin's corrected copy of it ($GPUBIND_TOPOLOGY) when it matches.
  std::string source = topology_source("");
  auto topo = discover::load_for_binding(source, "GPUBIND_TOPOLOGY=" + source, no_cache ? "" : discover::default_cache_dir());
  if (!topo) return fail(topo.error(), kExitFailure);
  auto req = make_request(o, *topo, AllowedFrom::affinity);
  if (!req) return fail(req.error(), kExitUsage);
  auto plan = plan::make_plan(*topo, *req);
  if (!plan) return fail(plan.error(), kExitUsage);
  if (spec.bind) print_warnings(plan->warnings, o.quiet);

  auto machine = bind::current_machine_state();
  if (!machine) return fail(machine.error(), kExitFailure);
  auto result = bind::launch(*plan, *machine, spec);
  if (!result) return fail(result.error(), kExitFailure);

  // Closing summary, one row per rank.
  render::TextTable t({"RANK", "LOCAL", "PID", "STATUS", "WALL", "CPUS", "GPU"});
  for (const bind::RankOutcome& r : result->ranks) {
    const plan::RankBinding& rb = plan->ranks[r.local_rank];
    std::vector<std::string> gpus;
    for (const auto& g : rb.gpus) gpus.push_back(std::to_string(g.index));
    char wall[32];
    std::snprintf(wall, sizeof wall, "%.2f s", r.wall_seconds);
    t.add({std::to_string(r.global_rank), std::to_string(r.local_rank), r.started ? std::to_string(r.pid) : "-",
           status_text(r), wall, spec.bind ? rb.cpus.to_list() : "unbound", gpus.empty() ? "-" : join(gpus, ",")});
  }
  std::fprintf(stderr, "gpubind launch: %zu rank(s) on node %u of %u, exit %d%s\n%s", result->ranks.size(), spec.node_rank,
               spec.nnodes, result->exit_code,
               result->first_failure ? (" (first failure: local rank " + std::to_string(*result->first_failure) + ")").c_str() : "",
               t.str().c_str());
  return result->exit_code;
}

}  // namespace gpubind::cli
