// gpubind launch: a torchrun-compatible local launcher whose every rank is bound.
#include <cstdio>
#include <cstdlib>

#include "bind/job_shape.hpp"
#include "bind/launcher.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "render/plan_render.hpp"
#include "render/table.hpp"
#include "sys/affinity.hpp"
#include "sys/process.hpp"
#include "sys/spawner.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

std::string status_text(const bind::RankOutcome& r) {
  if (!r.started) return "not started";
  if (r.signal) return "killed by signal " + std::to_string(r.signal) + " (" + std::to_string(r.exit_code) + ")";
  return "exit " + std::to_string(r.exit_code);
}

void add_launch_options(Args& app, bind::LaunchFlags& f, PlanOptions& o) {
  add_plan_options(app, o);
  app.option("--nproc-per-node,--nproc_per_node", f.nproc, "torchrun: ranks on this node: N, gpu, cpu or auto (same as -n)");
  app.option("--nnodes", f.nnodes, "Nodes in the job: N or MIN:MAX with MIN == MAX (default 1, or SLURM_NNODES under srun)");
  app.option("--node-rank,--node_rank", f.node_rank, "This node's rank (default 0, or SLURM_NODEID under srun)");
  app.option("--master-addr,--master_addr", f.master_addr,
             "Rendezvous host (default 127.0.0.1, or the first host of SLURM_JOB_NODELIST)");
  app.option("--master-port,--master_port", f.master_port, "Rendezvous port (default: a free port on one node, 29500 on several)")
      .range(1, 65535);
  app.flag("--standalone", f.standalone, "torchrun: one node, rendezvous on localhost at a free port");
  app.option("--rdzv-backend,--rdzv_backend", f.rdzv_backend, "torchrun: static (default) or c10d (with a known node rank)");
  app.option("--rdzv-endpoint,--rdzv_endpoint", f.rdzv_endpoint, "torchrun: HOST[:PORT] of the rendezvous (node 0)");
  app.option("--rdzv-id,--rdzv_id", f.rdzv_id, "torchrun: the job id (TORCHELASTIC_RUN_ID)");
  app.option("--rdzv-conf,--rdzv_conf", f.rdzv_conf, "torchrun: KEY=VALUE,... ; join_timeout (or timeout) in seconds is honoured");
  app.option("--max-restarts,--max_restarts", f.max_restarts, "Restart the worker group this many times when a rank fails (default 0)");
  app.option("--monitor-interval,--monitor_interval", f.monitor_interval,
             "torchrun: seconds between worker checks; gpubind notices every exit at once, within any interval")
      .range(0.0, 86400.0);
  app.option("--start-method,--start_method", f.start_method, "torchrun: spawn, fork or forkserver (scripts always run as new processes)")
      .one_of({"spawn", "fork", "forkserver"});
  app.option("--role", f.role, "torchrun: the workers' role (ROLE_NAME, default 'default')");
  app.flag("-m,--module", f.module, "torchrun: run SCRIPT as a Python module (python -m)");
  app.flag("--no-python,--no_python", f.no_python, "torchrun: run SCRIPT directly, not with python");
  app.flag("--run-path,--run_path", f.run_path, "torchrun: not supported (see docs/cli.md)");
  app.option("--log-dir,--log_dir", f.log_dir, "Per-rank logs in DIR/RUN_ID/attempt_N/LOCAL_RANK/{stdout,stderr}.log");
  app.option("-r,--redirects", f.redirects, "Streams to the log files only: 0-3 (1 stdout, 2 stderr, 3 both) or RANK:N,...");
  app.option("-t,--tee", f.tee, "Streams to the log files and the console: 0-3 or RANK:N,...");
  app.flag("--tag-output", f.tag_output, "Prefix every output line with its global rank");
  app.option("--grace", f.grace_seconds, "Seconds between SIGTERM and SIGKILL when stopping ranks (default 10)").range(0.0, 86400.0);
  app.flag("--no-bind", f.no_bind, "Set the environment only; bind nothing");
  app.flag("--best-effort", f.best_effort, "Start ranks even when part of a binding cannot be applied");
  app.flag("--require-mem-policy", f.require_mem_policy,
           "A memory policy the container refuses (seccomp, no CAP_SYS_NICE) stops the rank instead of a warning");
  app.flag("--dry-run", f.dry_run,
           "Print the plan and the environment and command each rank would get; start nothing (GPUBIND_TOPOLOGY may then "
           "name any machine's topology)");
  app.flag("--report-bindings", f.report,
           "Print one line per rank on stderr once its binding is applied, as exec --report-bindings (and mpirun) do");
  app.flag("--explain", f.explain,
           "Print every step of the GPU resolution and the CPU choice on stderr (the pod's DRA device metadata where read)");
  // The command starts at the first argument that is not an option: "-- CMD ARGS" (run as given)
  // or torchrun's "SCRIPT ARGS" (run with python unless --no-python).
  app.prefix_command();
  app.footer(R"(Examples:
  gpubind launch -n 8 -- python train.py        8 bound ranks, torchrun's environment
  gpubind launch --standalone --nproc_per_node=8 train.py --epochs 1     torchrun's own command line
  srun -N4 --ntasks-per-node=1 gpubind launch --nproc-per-node 8 train.py)");
}

// This machine, or an admin's corrected copy of it ($GPUBIND_TOPOLOGY) when it matches; a dry
// run previews any machine's.
Result<topo::Topology> launch_topology(const bind::Config& cfg, bool no_cache, bool quiet, bool preview) {
  bool file = !topology_source("").empty();
  auto topo = acquire_topology({.use = TopologyUse::binding, .preview = preview, .no_cache = no_cache, .config = &cfg, .quiet = quiet});
  if (topo && !(preview && file)) add_runtime_identity(*topo, quiet, true);  // this machine's GPUs by UUID (once per node, not per rank)
  return topo;
}

// Ranks on this node when --nproc-per-node said gpu, cpu or auto.
Result<std::optional<unsigned>> ranks_for(const bind::JobShape& shape, const topo::Topology& t) {
  if (shape.ranks_from == "gpu" && t.gpus.empty()) return Error{"--nproc-per-node gpu", "this machine has no GPU", ErrorKind::usage};
  if (shape.ranks_from == "cpu" || (shape.ranks_from == "auto" && t.gpus.empty())) {
    auto cpus = sys::current_affinity();
    if (!cpus) return cpus.error();
    return std::optional<unsigned>(unsigned(cpus->count()));
  }
  return shape.ranks;
}

// The job's shape from the flags and the launcher's environment, with the site's off-switch and
// the free port a one-node job without one takes.
Result<bind::JobShape> launch_shape(const bind::LaunchFlags& f, const bind::Config& cfg) {
  auto shape = bind::job_shape(f, environment_of(bind::job_env_names()));
  if (!shape) return shape.error();
  if (!cfg.binding && shape->spec.bind) shape->spec.bind = false;  // said once the topology is loaded
  if (shape->needs_free_port) {
    auto port = sys::free_tcp_port();
    if (!port) return port.error();
    shape->spec.master_port = *port;
  }
  return shape;
}

Result<plan::Plan> launch_plan(const bind::JobShape& shape, const topo::Topology& t, PlanOptions o, bool preview) {
  auto ranks = ranks_for(shape, t);
  if (!ranks) return ranks.error();
  o.ranks = *ranks;
  auto req = make_request(o, t, preview && !topology_source("").empty() ? AllowedFrom::topology : AllowedFrom::affinity);
  if (!req) return req.error();
  return plan::make_plan(t, *req);
}

std::vector<const plan::RankBinding*> rank_pointers(const plan::Plan& p) {
  std::vector<const plan::RankBinding*> out;
  for (const plan::RankBinding& rb : p.ranks) out.push_back(&rb);
  return out;
}

// --dry-run: the plan, then each rank's environment and command as `env` would run them.
int print_dry_run(const plan::Plan& plan, const bind::LaunchSpec& spec) {
  std::string out = spec.bind ? render::plan_table(plan, false) : "ranks start unbound (--no-bind or binding = off)\n";
  unsigned n = unsigned(plan.ranks.size());
  // Thread-pool sizes (and NCCL_PROXY_CPUSET) launch's own environment has: the ranks inherit them and keep them.
  auto kept = environment_of(plan::user_kept_env_names());
  for (unsigned i = 0; i < n; ++i) {
    auto env = bind::launcher_environment(spec, i, n);
    if (spec.bind) {
      auto own = plan::rank_environment(plan, plan.ranks[i]);
      std::erase_if(own, [&](const auto& kv) { return plan::is_user_kept_env(kv.first) && kept.count(kv.first); });
      env.insert(env.end(), own.begin(), own.end());
    }
    std::vector<std::string> argv = spec.substitute_local_rank ? bind::substitute_local_rank(spec.command, i) : spec.command;
    for (std::string& a : argv) a = render::shell_quote(a);
    out += "\nrank " + std::to_string(spec.node_rank * n + i) + " (local " + std::to_string(i) + " of " + std::to_string(n) +
           "):\n  env " + render::env_words(env) + " " + join(argv, " ") + "\n";
  }
  if (!kept.empty()) out += "\nkept for every rank, set before gpubind: " + render::env_words({kept.begin(), kept.end()}) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

// Closing summary, one row per rank, on stderr. The CPUs are what launch gave each rank when it
// started: `gpubind rebind` or `watch --enforce` may have moved it since (it said "unbound" for a
// rank rebound while it ran).
void print_summary(const bind::LaunchResult& result, const plan::Plan& plan, const bind::LaunchSpec& spec) {
  render::TextTable t({"RANK", "LOCAL", "PID", "STATUS", "WALL", "CPUS AT START", "GPU"});
  for (const bind::RankOutcome& r : result.ranks) {
    const plan::RankBinding& rb = plan.ranks[r.local_rank];
    std::vector<std::string> gpus;
    for (const auto& g : rb.gpus) gpus.push_back(std::to_string(g.index));
    char wall[32];
    std::snprintf(wall, sizeof wall, "%.2f s", r.wall_seconds);
    t.add({std::to_string(r.global_rank), std::to_string(r.local_rank), r.started ? std::to_string(r.pid) : "-",
           status_text(r), wall, spec.bind ? rb.cpus.to_list() : "unbound", gpus.empty() ? "-" : join(gpus, ",")});
  }
  std::fprintf(stderr, "gpubind launch: %zu rank(s) on node %u of %u, exit %d%s%s\n%s", result.ranks.size(), spec.node_rank,
               spec.nnodes, result.exit_code,
               result.restarts ? (", after " + std::to_string(result.restarts) + " restart(s)").c_str() : "",
               result.first_failure ? (" (first failure: local rank " + std::to_string(*result.first_failure) + ")").c_str() : "",
               t.str().c_str());
  for (const bind::RankOutcome& r : result.ranks)
    if (r.log_bytes_lost)
      std::fprintf(stderr, "gpubind launch: rank %u lost %s of output its log files refused (%s)\n", r.global_rank,
                   human_bytes(r.log_bytes_lost).c_str(), one_line(r.log_error).c_str());
}

}  // namespace

int cmd_launch(const std::vector<std::string>& args) {
  Args app("Start N local ranks with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR...), each "
           "bound to its GPU's CPUs, memory and NIC, and supervise them. Usage: gpubind launch -n N [options] -- CMD "
           "[ARGS...], or as torchrun: gpubind launch --nproc-per-node N [torchrun options] SCRIPT.py [ARGS...]",
           "gpubind launch");
  PlanOptions o;
  bind::LaunchFlags f;
  bool no_cache = false;
  add_launch_options(app, f, o);
  app.flag("--no-cache", no_cache, "Discover this machine afresh instead of using the topology cache");
  if (int rc = app.parse(args); rc >= 0) return rc;
  f.rest = app.remaining();
  auto cfg = load_config();
  if (!cfg) return fail(cfg.error());
  apply_config(app, *cfg, o);
  f.ranks = o.ranks;
  f.quiet = o.quiet;
  auto shape = launch_shape(f, *cfg);
  if (!shape) return fail(shape.error());
  bind::LaunchSpec& spec = shape->spec;
  // Nothing is printed before the topology is loaded: the static front hands the whole command to
  // gpubind-full when loading it needs a module (cli/front.hpp).
  auto topo = launch_topology(*cfg, no_cache, o.quiet, f.dry_run);
  if (!topo) return fail(topo.error());
  if (!cfg->binding && !o.quiet) std::fprintf(stderr, "gpubind: note: binding = off in %s: ranks start unbound\n", cfg->path.c_str());
  auto plan = launch_plan(*shape, *topo, o, f.dry_run);
  if (!plan) return fail(plan.error());
  if (spec.bind) print_warnings(plan->warnings, o.quiet);
  print_explain(f.explain ? plan->explain : std::vector<std::string>{});
  if (f.dry_run) return print_dry_run(*plan, spec);
  if (f.report)
    spec.on_bound = [&t = *topo, n = unsigned(plan->ranks.size()), node = spec.node_rank](const plan::RankBinding& rb,
                                                                                          const bind::Applied& a) {
      std::fprintf(
          stderr, "%s\n",
          render::report_line(t, sys::current_pid(), long(node * n + rb.local_rank), n, rb, bind::memory_applied_note(a.memory)).c_str());
      if (std::string note = bind::pools_note(a); !note.empty())
        std::fprintf(stderr, "gpubind: local rank %u: %s\n", rb.local_rank, note.c_str());
    };
  auto machine = bind::live_machine_state();
  if (!machine) return fail(machine.error());
  if (spec.bind) print_pinning(*topo, *plan, rank_pointers(*plan), machine->allowed_cpus, o.allowed.empty(), o.quiet);
  // Nodes other than 0 wait for node 0's rank 0 to host the store, at most join_timeout.
  if (spec.node_rank > 0)
    if (Status s = bind::wait_for_master(spec.master_addr, spec.master_port,
                                         std::chrono::milliseconds(long(shape->join_timeout_seconds * 1000)), sys::steady_clock());
        !s)
      return fail(s.error());
  auto spawner = sys::real_spawner();
  if (!spawner) return fail(spawner.error());
  auto result = bind::launch(*plan, *machine, spec, **spawner, sys::steady_clock());
  if (!result) return fail(result.error());
  print_summary(*result, *plan, spec);
  return result->exit_code;
}

}  // namespace gpubind::cli
