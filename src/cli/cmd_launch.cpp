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
#include "sys/affinity.hpp"
#include "sys/process.hpp"
#include "sys/spawner.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"
#include "sys/environment.hpp"

namespace gpubind::cli {

namespace {

std::string status_text(const bind::RankOutcome& r) {
  if (!r.started) return "not started";
  if (r.signal) return "killed by signal " + std::to_string(r.signal) + " (" + std::to_string(r.exit_code) + ")";
  return "exit " + std::to_string(r.exit_code);
}

std::optional<unsigned> env_number(const std::string& name) {
  auto v = sys::env_value(name);
  if (!v) return std::nullopt;
  auto n = parse_uint(*v);
  return n ? std::optional<unsigned>(unsigned(*n)) : std::nullopt;
}

}  // namespace

int cmd_launch(const std::vector<std::string>& args) {
  Args app("Start N local ranks with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR...), each "
           "bound to its GPU's CPUs, memory and NIC, and supervise them. Usage: gpubind launch -n N [options] -- CMD "
           "[ARGS...], or as torchrun: gpubind launch --nproc-per-node N [torchrun options] SCRIPT.py [ARGS...]",
           "gpubind launch");
  PlanOptions o;
  std::optional<unsigned> node_rank, master_port, max_restarts;
  std::string nproc, nnodes_s, master_addr, rdzv_backend = "static", rdzv_endpoint, rdzv_id, rdzv_conf, role = "default";
  std::string log_dir, redirects_s, tee_s, start_method = "spawn";
  double monitor_interval = 5;
  bool tag_output = false, no_bind = false, best_effort = false, no_cache = false, standalone = false, module = false,
       no_python = false, run_path = false;
  double grace_seconds = 10;
  add_plan_options(app, o);
  app.option("--nproc-per-node,--nproc_per_node", nproc, "torchrun: ranks on this node: N, gpu, cpu or auto (same as -n)");
  app.option("--nnodes", nnodes_s, "Nodes in the job: N or MIN:MAX with MIN == MAX (default 1, or SLURM_NNODES under srun)");
  app.option("--node-rank,--node_rank", node_rank, "This node's rank (default 0, or SLURM_NODEID under srun)");
  app.option("--master-addr,--master_addr", master_addr,
             "Rendezvous host (default 127.0.0.1, or the first host of SLURM_JOB_NODELIST)");
  app.option("--master-port,--master_port", master_port, "Rendezvous port (default: a free port on one node, 29500 on several)")
      .range(1, 65535);
  app.flag("--standalone", standalone, "torchrun: one node, rendezvous on localhost at a free port");
  app.option("--rdzv-backend,--rdzv_backend", rdzv_backend, "torchrun: static (default) or c10d (with a known node rank)");
  app.option("--rdzv-endpoint,--rdzv_endpoint", rdzv_endpoint, "torchrun: HOST[:PORT] of the rendezvous (node 0)");
  app.option("--rdzv-id,--rdzv_id", rdzv_id, "torchrun: the job id (TORCHELASTIC_RUN_ID)");
  app.option("--rdzv-conf,--rdzv_conf", rdzv_conf, "torchrun: KEY=VALUE,... ; join_timeout (or timeout) in seconds is honoured");
  app.option("--max-restarts,--max_restarts", max_restarts, "Restart the worker group this many times when a rank fails (default 0)");
  app.option("--monitor-interval,--monitor_interval", monitor_interval,
             "torchrun: seconds between worker checks; gpubind notices every exit at once, within any interval")
      .range(0.0, 86400.0);
  app.option("--start-method,--start_method", start_method, "torchrun: spawn, fork or forkserver (scripts always run as new processes)")
      .one_of({"spawn", "fork", "forkserver"});
  app.option("--role", role, "torchrun: the workers' role (ROLE_NAME, default 'default')");
  app.flag("-m,--module", module, "torchrun: run SCRIPT as a Python module (python -m)");
  app.flag("--no-python,--no_python", no_python, "torchrun: run SCRIPT directly, not with python");
  app.flag("--run-path,--run_path", run_path, "torchrun: not supported (see docs/cli.md)");
  app.option("--log-dir,--log_dir", log_dir, "Per-rank logs in DIR/RUN_ID/attempt_N/LOCAL_RANK/{stdout,stderr}.log");
  app.option("-r,--redirects", redirects_s, "Streams to the log files only: 0-3 (1 stdout, 2 stderr, 3 both) or RANK:N,...");
  app.option("-t,--tee", tee_s, "Streams to the log files and the console: 0-3 or RANK:N,...");
  app.flag("--tag-output", tag_output, "Prefix every output line with its global rank");
  app.option("--grace", grace_seconds, "Seconds between SIGTERM and SIGKILL when stopping ranks (default 10)")
      .range(0.0, 86400.0);
  app.flag("--no-bind", no_bind, "Set the environment only; bind nothing");
  app.flag("--best-effort", best_effort, "Start ranks even when part of a binding cannot be applied");
  app.flag("--no-cache", no_cache, "Discover this machine afresh instead of using the topology cache");
  // The command starts at the first argument that is not an option: "-- CMD ARGS" (run as given)
  // or torchrun's "SCRIPT ARGS" (run with python unless --no-python).
  app.prefix_command();

  bind::LaunchSpec spec;
  app.footer(R"(Examples:
  gpubind launch -n 8 -- python train.py        8 bound ranks, torchrun's environment
  gpubind launch --standalone --nproc_per_node=8 train.py --epochs 1     torchrun's own command line
  srun -N4 --ntasks-per-node=1 gpubind launch --nproc-per-node 8 train.py)");
  if (int rc = app.parse(args); rc >= 0) return rc;
  std::vector<std::string> rest = app.remaining();
  bool torchrun_form = true;
  if (!rest.empty() && rest[0] == "--") {
    rest.erase(rest.begin());
    torchrun_form = false;
  } else if (!rest.empty() && rest[0].starts_with("-")) {
    return fail(Error{"launch", "unknown option " + rest[0], ErrorKind::usage});
  }
  if (rest.empty())
    return fail(Error{"launch", "no command (gpubind launch [options] -- CMD [ARGS...], or gpubind launch [options] SCRIPT.py)", ErrorKind::usage});

  auto cfg = load_config();
  if (!cfg) return fail(cfg.error());
  apply_config(app, *cfg, o);
  if (!cfg->binding && !no_bind) {
    if (!o.quiet) std::fprintf(stderr, "gpubind: note: binding = off in %s: ranks start unbound\n", cfg->path.c_str());
    no_bind = true;
  }

  // Flags that cannot be honoured are refused by name, never ignored.
  if (run_path)
    return fail(Error{"--run-path", "not supported: gpubind starts each worker as its own process (python SCRIPT), never "
                                    "inside the launcher's interpreter", ErrorKind::usage});
  if (!torchrun_form && (module || no_python))
    return fail(Error{module ? "--module" : "--no-python", "applies to torchrun's SCRIPT form, not to '-- CMD'", ErrorKind::usage});
  if (rdzv_backend != "static" && rdzv_backend != "c10d")
    return fail(Error{"--rdzv-backend " + rdzv_backend, "not supported: gpubind rendezvous is static (MASTER_ADDR:MASTER_PORT, "
                                                        "node ranks known); c10d is accepted when the node rank is known", ErrorKind::usage});
  if ((!redirects_s.empty() || !tee_s.empty()) && log_dir.empty())
    return fail(Error{redirects_s.empty() ? "--tee" : "--redirects", "needs --log-dir DIR (where the per-rank files go)", ErrorKind::usage});

  // Ranks on this node: -n or --nproc-per-node (N, gpu, cpu, auto).
  if (!nproc.empty()) {
    if (o.ranks) return fail(Error{"--nproc-per-node", "give -n or --nproc-per-node, not both", ErrorKind::usage});
    if (auto v = parse_uint(nproc); v && *v > 0 && *v <= 65536) o.ranks = unsigned(*v);
    else if (nproc != "gpu" && nproc != "cpu" && nproc != "auto")
      return fail(Error{"--nproc-per-node " + nproc, "expected a number, gpu, cpu or auto", ErrorKind::usage});
  }

  spec.bind = !no_bind;
  spec.tag_output = tag_output;
  if (!(grace_seconds >= 0 && grace_seconds <= 86400))  // NaN fails every comparison
    return fail(Error{"--grace", "expected seconds from 0 to 86400", ErrorKind::usage});
  spec.grace = std::chrono::milliseconds(long(grace_seconds * 1000));
  spec.best_effort = best_effort ? bind::BestEffort::yes : bind::BestEffort::no;
  spec.quiet = o.quiet;
  spec.role = role;
  spec.max_restarts = max_restarts.value_or(0);
  if (auto v = sys::env_value("TORCH_NCCL_ASYNC_ERROR_HANDLING")) spec.nccl_async_error_handling = *v;
  else if (auto w = sys::env_value("NCCL_ASYNC_ERROR_HANDLING")) spec.nccl_async_error_handling = *w;
  spec.log_dir = log_dir;
  if (!redirects_s.empty()) {
    auto r = bind::parse_stream_selection("--redirects", redirects_s);
    if (!r) return fail(r.error());
    spec.redirects = *r;
  }
  if (!tee_s.empty()) {
    auto t = bind::parse_stream_selection("--tee", tee_s);
    if (!t) return fail(t.error());
    spec.tee = *t;
  }
  auto conf = bind::parse_key_values("--rdzv-conf", rdzv_conf);
  if (!conf) return fail(conf.error());
  double join_timeout = 600;  // torchrun's default join timeout
  for (const auto& [k, v] : *conf) {
    if (k != "join_timeout" && k != "timeout")
      return fail(Error{"--rdzv-conf " + k, "not supported (only join_timeout / timeout, in seconds)", ErrorKind::usage});
    auto secs = parse_uint(v);
    if (!secs || *secs > 86400) return fail(Error{"--rdzv-conf " + k + "=" + v, "expected seconds (0-86400)", ErrorKind::usage});
    join_timeout = double(*secs);
  }

  // Under srun with one launch per node, the job's shape comes from Slurm.
  bool under_srun = sys::env_value("SLURM_STEP_ID") && sys::env_value("SLURM_NNODES") && sys::env_value("SLURM_NODEID");
  bind::NodeRange nodes{1, 1};
  if (!nnodes_s.empty()) {
    auto r = bind::parse_nnodes(nnodes_s);
    if (!r) return fail(r.error());
    nodes = *r;
    if (nodes.min != nodes.max)
      return fail(Error{"--nnodes " + nnodes_s, "elastic membership (MIN < MAX) is not supported: give a fixed node count", ErrorKind::usage});
  } else if (under_srun) {
    nodes.min = nodes.max = env_number("SLURM_NNODES").value_or(1);
  }
  if (standalone && nodes.max > 1) return fail(Error{"--standalone", "is a single-node job; --nnodes says " + nnodes_s, ErrorKind::usage});
  spec.nnodes = nodes.max;
  if (!node_rank && under_srun) node_rank = env_number("SLURM_NODEID");
  if (rdzv_backend == "c10d" && spec.nnodes > 1 && !node_rank)
    return fail(Error{"--rdzv-backend c10d", "node ranks are assigned by gpubind statically: give --node-rank (or run under srun)", ErrorKind::usage});
  spec.node_rank = node_rank.value_or(0);
  if (spec.node_rank >= spec.nnodes)
    return fail(Error{"--node-rank " + std::to_string(spec.node_rank), "not below --nnodes " + std::to_string(spec.nnodes), ErrorKind::usage});
  if (!rdzv_endpoint.empty() && !standalone) {
    // HOST[:PORT]; torchrun's c10d default port is 29400.
    size_t colon = rdzv_endpoint.rfind(':');
    std::string host = colon == std::string::npos ? rdzv_endpoint : rdzv_endpoint.substr(0, colon);
    if (!master_addr.empty() || master_port)
      return fail(Error{"--rdzv-endpoint", "give it or --master-addr/--master-port, not both", ErrorKind::usage});
    master_addr = host;
    if (colon != std::string::npos) {
      auto p = parse_uint(rdzv_endpoint.substr(colon + 1));
      if (!p || *p > 65535) return fail(Error{"--rdzv-endpoint " + rdzv_endpoint, "expected HOST[:PORT] with a port up to 65535", ErrorKind::usage});
      if (*p) master_port = unsigned(*p);
    } else if (spec.nnodes > 1) {
      master_port = 29400;
    }
  }
  if (standalone) {
    master_addr = "127.0.0.1";
    master_port.reset();
  }
  if (!master_addr.empty()) {
    spec.master_addr = master_addr;
  } else if (under_srun && spec.nnodes > 1) {
    auto list = sys::env_value("SLURM_JOB_NODELIST");
    auto host = list ? bind::first_host(*list) : std::nullopt;
    if (!host) return fail(Error{"SLURM_JOB_NODELIST", "cannot find the first host; give --master-addr", ErrorKind::usage});
    spec.master_addr = *host;
  } else if (spec.nnodes > 1) {
    return fail(Error{"--nnodes " + std::to_string(spec.nnodes), "several nodes need --master-addr", ErrorKind::usage});
  }
  if (master_port) {
    spec.master_port = *master_port;
  } else if (spec.nnodes == 1) {
    auto port = sys::free_tcp_port();
    if (!port) return fail(port.error());
    spec.master_port = *port;
  }
  if (!rdzv_id.empty()) spec.run_id = rdzv_id;
  else if (auto job = sys::env_value("SLURM_JOB_ID")) spec.run_id = "slurm-" + *job;

  // The command: as given after "--"; torchrun's form runs SCRIPT with python (-u, unbuffered,
  // as torchrun does), or -m MODULE, or SCRIPT itself with --no-python.
  if (torchrun_form && !no_python) {
    auto py = sys::env_value("GPUBIND_PYTHON");
    std::vector<std::string> cmd = {py && !py->empty() ? *py : "python3", "-u"};
    if (module) cmd.push_back("-m");
    rest.insert(rest.begin(), cmd.begin(), cmd.end());
  }
  spec.command = rest;
  spec.substitute_local_rank = torchrun_form;

  // This machine, or an admin's corrected copy of it ($GPUBIND_TOPOLOGY) when it matches.
  std::string source = topology_source("");
  std::vector<std::string> cache_notes;
  auto topo = discover::load_for_binding(source, "GPUBIND_TOPOLOGY=" + source,
                                         no_cache ? "" : discover::default_cache_dir(cfg->cache_dir.value_or("")),
                                         cfg->cache_max_files, &cache_notes);
  print_warnings(cache_notes, o.quiet);
  if (!topo) return fail(topo.error());
  add_runtime_identity(*topo, o.quiet, true);  // this machine's GPUs by UUID (once per node, not per rank)
  if (nproc == "gpu" && topo->gpus.empty()) return fail(Error{"--nproc-per-node gpu", "this machine has no GPU", ErrorKind::usage});
  if (nproc == "cpu" || (nproc == "auto" && topo->gpus.empty())) {
    auto cpus = sys::current_affinity();
    if (!cpus) return fail(cpus.error());
    o.ranks = unsigned(cpus->count());
  }
  auto req = make_request(o, *topo, AllowedFrom::affinity);
  if (!req) return fail(req.error());
  auto plan = plan::make_plan(*topo, *req);
  if (!plan) return fail(plan.error());
  if (spec.bind) print_warnings(plan->warnings, o.quiet);

  auto machine = bind::live_machine_state();
  if (!machine) return fail(machine.error());
  // Nodes other than 0 wait for node 0's rank 0 to host the store, at most join_timeout.
  if (spec.node_rank > 0)
    if (Status s = bind::wait_for_master(spec.master_addr, spec.master_port, std::chrono::milliseconds(long(join_timeout * 1000)), sys::steady_clock()); !s)
      return fail(s.error());
  auto spawner = sys::real_spawner();
  if (!spawner) return fail(spawner.error());
  auto result = bind::launch(*plan, *machine, spec, **spawner, sys::steady_clock());
  if (!result) return fail(result.error());

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
  std::fprintf(stderr, "gpubind launch: %zu rank(s) on node %u of %u, exit %d%s%s\n%s", result->ranks.size(), spec.node_rank,
               spec.nnodes, result->exit_code,
               result->restarts ? (", after " + std::to_string(result->restarts) + " restart(s)").c_str() : "",
               result->first_failure ? (" (first failure: local rank " + std::to_string(*result->first_failure) + ")").c_str() : "",
               t.str().c_str());
  return result->exit_code;
}

}  // namespace gpubind::cli
