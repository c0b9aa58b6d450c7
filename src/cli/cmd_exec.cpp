// gpubind exec: inside a launcher, bind this rank to its GPU's CPUs, memory and NIC, then exec.
#include <cstdio>

#include "bind/apply.hpp"
#include "bind/launcher_binding.hpp"
#include "bind/local_rank.hpp"
#include "bind/request.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "render/plan_render.hpp"
#include "sys/binder.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

std::string describe(const plan::RankBinding& rb) {
  std::vector<std::string> gpus;
  for (const auto& g : rb.gpus) gpus.push_back(std::to_string(g.index) + " (" + g.pci + ")");
  std::string mem = rb.mem_policy == plan::MemPolicy::none
                        ? "unchanged"
                        : std::string(plan::to_string(rb.mem_policy)) + " " + join_numbers(rb.mem_nodes);
  std::vector<std::string> nics;
  for (const auto& n : rb.nics) nics.push_back(n.name.empty() ? n.pci : n.name);
  return std::string(gpus.size() > 1 ? "GPUs " : "GPU ") + (gpus.empty() ? std::string("none") : join(gpus, ", ")) + ", CPUs " +
         rb.cpus.to_list() + ", memory " + mem + (nics.empty() ? "" : (nics.size() > 1 ? ", NICs " : ", NIC ") + join(nics, "; "));
}

}  // namespace

int cmd_exec(const std::vector<std::string>& args) {
  Args app("Bind this process (one rank under srun, mpirun, torchrun, flux...) to its GPU's CPUs, memory node and "
           "NIC, then run the command. Usage: gpubind exec [options] -- CMD [ARGS...]",
           "gpubind exec");
  PlanOptions o;
  std::optional<unsigned> local_rank, local_size;
  bool dry_run = false, verbose = false, best_effort = false, no_cache = false, report = false, keep_launcher = false;
  add_topology_option(app, o.topology);
  add_plan_options(app, o);
  app.option("--local-rank", local_rank, "This process's local rank (default: from the launcher's environment)");
  app.option("--local-size", local_size, "Local ranks on this node (default: from the launcher, else -n, else GPUs)");
  app.flag("--dry-run", dry_run, "Print the binding and the command; run nothing");
  app.flag("--verbose", verbose, "Say which launcher variable gave the local rank and what was applied");
  app.flag("--best-effort", best_effort, "Apply what can be applied and run the command anyway, with warnings");
  app.flag("--no-cache", no_cache, "Discover this machine afresh instead of using the topology cache");
  app.flag("--report-bindings", report,
           "Print one line per rank on stderr, as mpirun --report-bindings does: host, rank, GPU, CPUs as a core map, "
           "memory, NIC");
  app.flag("--keep-launcher-binding", keep_launcher,
           "Keep CPUs the launcher already bound this rank to when they lie on its GPU's NUMA node and are at least "
           "as many cores as the plan's");

  std::vector<std::string> command;
  app.footer(R"(Examples:
  srun --ntasks-per-node=8 gpubind exec -- python train.py
  mpirun -np 8 gpubind exec --report-bindings -- ./app
  LOCAL_RANK=1 LOCAL_WORLD_SIZE=8 gpubind exec --topology example:dgx-h100 --dry-run -- ./app)");
  if (int rc = app.parse_with_command(args, kExitExecFailed, command); rc >= 0) return rc;

  // 0. The site's configuration: defaults for flags not given, the cache, the off-switch.
  auto cfg = load_config();
  if (!cfg) return fail(cfg.error(), kExitExecFailed);
  apply_config(app, *cfg, o);
  if (!cfg->binding) {
    if (!o.quiet) std::fprintf(stderr, "gpubind: note: binding = off in %s: running the command unbound\n", cfg->path.c_str());
    if (dry_run) {
      std::printf("exec %s\n", join(command, " ").c_str());
      return kExitOk;
    }
    std::fflush(stdout);
    sys::ExecFailure f = sys::real_binder()->exec(command);
    std::fprintf(stderr, "gpubind: error: %s\n", f.message.c_str());
    return f.exit_code;
  }

  // 1. Which local rank this process is.
  bind::LocalRank lr;
  if (local_rank) {
    lr.rank = *local_rank;
    lr.source = "--local-rank";
  } else {
    auto found = bind::detect_local_rank(environment_of(bind::local_rank_env_names()));
    if (!found) return fail(found.error(), kExitExecFailed);
    if (!*found)
      return fail(Error{"exec", "cannot tell this process's local rank: no launcher variable (SLURM_LOCALID, "
                                "OMPI_COMM_WORLD_LOCAL_RANK, LOCAL_RANK...) is set; give --local-rank N"},
                  kExitExecFailed);
    lr = **found;
  }
  if (local_size) lr.size = local_size;

  // 2. The machine: this one. A topology file (an admin's corrected copy of this machine) may
  // be bound with when it describes this machine; any other only previewed with --dry-run.
  std::string source = topology_source(o.topology);
  std::string label = (o.topology.empty() ? "GPUBIND_TOPOLOGY=" : "--topology ") + source;
  std::string cache = no_cache ? "" : discover::default_cache_dir(cfg->cache_dir.value_or(""));
  std::vector<std::string> cache_notes;
  auto topo = dry_run && !source.empty() ? discover::load_topology(source)
                                         : discover::load_for_binding(source, label, cache, cfg->cache_max_files, &cache_notes);
  print_warnings(cache_notes, o.quiet);
  if (!topo) return fail(topo.error(), kExitExecFailed);
  if (!(dry_run && !source.empty())) add_runtime_identity(*topo, o.quiet);  // this machine's GPUs by UUID

  // 3. The same plan `gpubind plan` makes, for this node's ranks.
  if (!o.ranks && lr.size) o.ranks = lr.size;
  // MPI launchers and srun may have pinned this rank already; plan over the node's (cgroup's)
  // CPUs so every rank of the node sees the same set. torchrun-style launchers do not pin.
  bool launcher_pins = lr.source != "LOCAL_RANK" && lr.source != "--local-rank";
  AllowedFrom from = dry_run && !source.empty() ? AllowedFrom::topology
                     : launcher_pins                ? AllowedFrom::cgroup
                                                    : AllowedFrom::affinity;
  auto req = make_request(o, *topo, from);
  if (!req) return fail(req.error(), kExitExecFailed);
  // The launcher's binding, read before anything is applied.
  auto machine = dry_run ? Result<bind::MachineState>(bind::MachineState{topo->cpus, topo->allowed_cpus, CpuSet::range(0, 4095)})
                         : bind::live_machine_state();
  if (!machine) return fail(machine.error(), kExitExecFailed);
  // A launcher that gave every rank whole NUMA nodes (--bind-to numa, --cpu-bind=ldoms) expects a
  // node's worth of cores per rank: plan socket-split rather than halving the GPU's node.
  bool by_numa = from == AllowedFrom::cgroup && !dry_run && req->policy == plan::Policy::closest && app.count("--policy") == 0 &&
                 !cfg->policy && bind::pinned_to_whole_numa_nodes(*topo, machine->allowed_cpus, topo->allowed_cpus);
  if (by_numa) req->policy = plan::Policy::socket_split;
  auto plan = plan::make_plan(*topo, *req);
  if (!plan) return fail(plan.error(), kExitExecFailed);
  auto mine = bind::rank_binding(*plan, lr.rank, lr.source, "give --local-size or -n");
  if (!mine) return fail(mine.error(), kExitExecFailed);
  plan::RankBinding& rb = *mine;  // judge_launcher_binding may keep the launcher's CPUs
  print_warnings(plan::warnings_for_rank(*plan, lr.rank), o.quiet);

  // What the launcher already did to this rank's CPUs (mpirun --bind-to, a rankfile, srun
  // --cpu-bind): kept on request, otherwise replaced with a note, never silently.
  if (by_numa && !o.quiet)
    std::fprintf(stderr, "gpubind: note: local rank %u: the launcher bound ranks to whole NUMA nodes; planned socket-split so "
                         "no rank gets fewer cores than a node's share (--policy closest overrides)\n", lr.rank);
  if (from == AllowedFrom::cgroup && !dry_run) {
    bind::LauncherBinding lb = bind::judge_launcher_binding(*topo, rb, machine->allowed_cpus, topo->allowed_cpus, keep_launcher);
    if (!lb.note.empty() && !o.quiet)
      std::fprintf(stderr, "gpubind: note: %s\n", one_line(lb.note).c_str());
  }
  if (report) {
    auto env = environment_of(bind::global_rank_env_names());
    long g = bind::global_rank(env);
    std::fprintf(stderr, "[%s:%d] gpubind: rank %s (local %u of %zu) bound to %s: %s\n",
                 one_line(topo->hostname.empty() ? "localhost" : topo->hostname).c_str(), sys::current_pid(),
                 g < 0 ? "?" : std::to_string(g).c_str(), lr.rank, plan->ranks.size(), describe(rb).c_str(),
                 render::core_map(*topo, rb.cpus).c_str());
  }

  if (dry_run) {
    std::printf("local rank %u of %zu (%s): %s\n", lr.rank, plan->ranks.size(), lr.source.c_str(), describe(rb).c_str());
    std::string env = render::plan_env(*plan, lr.rank);
    std::fputs(env.c_str(), stdout);
    std::printf("exec %s\n", join(command, " ").c_str());
    return kExitOk;
  }

  // 4. Apply, all or nothing, then exec.
  bind::MachineState m = *machine;
  // sched_setaffinity may widen a launcher's pinning up to the cgroup's CPUs, never beyond.
  if (from == AllowedFrom::cgroup) m.allowed_cpus = topo->allowed_cpus;
  auto binder = sys::real_binder();
  std::vector<std::string> warnings;
  Status applied = bind::apply_binding(*plan, rb, m, *binder, best_effort ? bind::BestEffort::yes : bind::BestEffort::no, warnings);
  if (!applied) return fail(Error{"binding local rank " + std::to_string(lr.rank), applied.error().message()}, kExitExecFailed);
  print_warnings(warnings, o.quiet);
  if (verbose)
    std::fprintf(stderr, "gpubind: local rank %u of %zu (from %s), planned over %s CPUs %s: %s\n", lr.rank,
                 plan->ranks.size(), lr.source.c_str(), from == AllowedFrom::cgroup ? "the node's (cgroup)" : "this process's",
                 (req->allowed ? *req->allowed : topo->allowed_cpus).to_list().c_str(), describe(rb).c_str());
  std::fflush(stdout);
  sys::ExecFailure f = binder->exec(command);
  std::fprintf(stderr, "gpubind: error: %s\n", f.message.c_str());
  return f.exit_code;
}

}  // namespace gpubind::cli
