// gpubind exec: inside a launcher, bind this rank to its GPU's CPUs, memory and NIC, then exec.
#include <cstdio>

#include "bind/bind_rank.hpp"
#include "bind/launcher_binding.hpp"
#include "bind/request.hpp"
#include "bind/slurm_step.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "probe/probe.hpp"
#include "render/plan_render.hpp"
#include "sys/binder.hpp"
#include "sys/process.hpp"
#include "topo/launcher_env.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

struct ExecFlags {
  PlanOptions o;
  std::optional<unsigned> local_rank, local_size;
  bool dry_run = false, verbose = false, best_effort = false, no_cache = false, report = false, keep_launcher = false;
  bool require_mem_policy = false, explain = false;
  std::vector<std::string> command;
};

void add_exec_options(Args& app, ExecFlags& f) {
  add_topology_option(app, f.o.topology);
  add_plan_options(app, f.o);
  app.option("--local-rank", f.local_rank, "This process's local rank (default: from the launcher's environment)");
  app.option("--local-size", f.local_size, "Local ranks on this node (default: from the launcher, else -n, else GPUs)");
  app.flag("--dry-run", f.dry_run, "Print the binding and the command; run nothing");
  app.flag("--verbose", f.verbose, "Say which launcher variable gave the local rank and what was applied");
  app.flag("--best-effort", f.best_effort, "Apply what can be applied and run the command anyway, with warnings");
  app.flag("--require-mem-policy", f.require_mem_policy,
           "A memory policy the container refuses (seccomp, no CAP_SYS_NICE) is an error (125) instead of a warning "
           "with the CPU binding kept");
  app.flag("--no-cache", f.no_cache, "Discover this machine afresh instead of using the topology cache");
  app.flag("--report-bindings", f.report,
           "Print one line per rank on stderr, as mpirun --report-bindings does: host, rank, GPU, CPUs as a core map, "
           "memory, NIC");
  app.flag("--explain", f.explain,
           "Print every step of the GPU resolution and the CPU choice on stderr (the pod's DRA device metadata where read)");
  app.flag("--keep-launcher-binding", f.keep_launcher,
           "Keep CPUs the launcher already bound this rank to when they lie on its GPU's NUMA node and are at least "
           "as many cores as the plan's");
  app.footer(R"(Examples:
  srun --ntasks-per-node=8 gpubind exec -- python train.py
  mpirun -np 8 gpubind exec --report-bindings -- ./app
  LOCAL_RANK=1 LOCAL_WORLD_SIZE=8 gpubind exec --topology example:dgx-h100 --dry-run -- ./app)");
}

// The command as it is, unbound (--dry-run: printed); what exec returns.
int exec_command(sys::Binder& binder, const ExecFlags& f) {
  if (f.dry_run) {
    std::printf("exec %s\n", join(f.command, " ").c_str());
    return kExitOk;
  }
  std::fflush(stdout);
  sys::ExecFailure failed = binder.exec(f.command);
  std::fprintf(stderr, "gpubind: error: %s\n", one_line(failed.message).c_str());
  return failed.exit_code;
}

// Which local rank this process is: --local-rank, else the launcher's variables.
Result<topo::LocalRank> local_rank_of(const ExecFlags& f) {
  topo::LocalRank lr;
  if (f.local_rank) {
    lr.rank = *f.local_rank;
    lr.source = "--local-rank";
  } else {
    auto found = topo::detect_local_rank(environment_of(topo::local_rank_env_names()));
    if (!found) return found.error();
    if (!*found)
      return Error{"exec", "cannot tell this process's local rank: no launcher variable (SLURM_LOCALID, "
                           "OMPI_COMM_WORLD_LOCAL_RANK, LOCAL_RANK...) is set; give --local-rank N"};
    lr = **found;
  }
  if (f.local_size) lr.size = f.local_size;
  return lr;
}

// The machine: this one. A topology file (an admin's corrected copy of this machine) may be
// bound with when it describes this machine; any other only previewed with --dry-run.
Result<topo::Topology> machine_topology(const ExecFlags& f, const bind::Config& cfg, bool preview) {
  auto topo = acquire_topology(
      {.use = TopologyUse::binding, .flag = f.o.topology, .preview = preview, .no_cache = f.no_cache, .config = &cfg, .quiet = f.o.quiet});
  if (topo && !preview) add_runtime_identity(*topo, f.o.quiet);  // this machine's GPUs by UUID
  return topo;
}

// The same plan `gpubind plan` makes, for this node's ranks, applied unless a dry run.
Result<bind::RankRequest> rank_request(const ExecFlags& f, const topo::LocalRank& lr, const topo::Topology& t, bool preview,
                                       bool policy_open) {
  bind::RankRequest r;
  r.options = f.o;
  if (!r.options.ranks && lr.size) r.options.ranks = lr.size;
  r.local = lr;
  // MPI launchers and srun may have pinned this rank already; plan over the node's (cgroup's)
  // CPUs so every rank of the node sees the same set. torchrun-style launchers do not pin.
  bool launcher_pins = lr.source != "LOCAL_RANK" && lr.source != "--local-rank";
  r.from = preview ? AllowedFrom::topology : launcher_pins ? AllowedFrom::cgroup : AllowedFrom::affinity;
  r.gpu_env = environment_of(plan::gpu_env_names());
  // srun --gpus-per-task / --gpu-bind narrowed this task's GPUs: planned over the step's, each task
  // on its own, as the SPANK plugin plans it (bind::exec_task_gpus).
  if (lr.source == "SLURM_LOCALID" && lr.size && r.options.rank_gpus.empty()) {
    auto slurm = environment_of({"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURMD_TRES_BIND", "SLURM_TRES_BIND", "SLURM_GPUS_PER_TASK"});
    if (auto gpus = bind::exec_task_gpus(slurm, *lr.size, lr.rank, r.gpu_env)) {
      r.options.rank_gpus = gpus->rows;
      if (!gpus->exact) print_warnings({gpus->how + ": tasks sharing a NUMA node may overlap"}, f.o.quiet);
    }
  }
  // The launcher's binding, read before anything is applied.
  auto machine = f.dry_run ? Result<bind::MachineState>(bind::MachineState{t.cpus, t.allowed_cpus, CpuSet::range(0, 4095)})
                           : bind::live_machine_state();
  if (!machine) return machine.error();
  r.machine = *machine;
  if (r.from != AllowedFrom::topology) {
    auto live = probe::this_process_allowance(t, r.gpu_env);
    if (!live) return live.error();
    r.allowance = std::move(*live);
  }
  r.launcher_pinned = r.from == AllowedFrom::cgroup && !f.dry_run;
  r.keep_launcher = f.keep_launcher;
  r.policy_open = policy_open;
  r.apply = !f.dry_run;
  r.best_effort = f.best_effort ? bind::BestEffort::yes : bind::BestEffort::no;
  r.mem_refused = f.require_mem_policy ? bind::MemRefused::error : bind::MemRefused::warn;
  r.hint = "give --local-size or -n";
  return r;
}

// What the launcher already did to this rank's CPUs (mpirun --bind-to, a rankfile, srun
// --cpu-bind): kept on request, otherwise replaced with a note, never silently.
void print_notes(const ExecFlags& f, const bind::BoundRank& b, unsigned local_rank) {
  print_warnings(b.plan_warnings, f.o.quiet);
  print_explain(f.explain ? b.plan.explain : std::vector<std::string>{});
  if (b.split_sockets && !f.o.quiet)
    std::fprintf(stderr, "gpubind: note: local rank %u: the launcher bound ranks to whole NUMA nodes; planned socket-split so "
                         "no rank gets fewer cores than a node's share (--policy closest overrides)\n", local_rank);
  if (!b.launcher_note.empty() && !f.o.quiet) std::fprintf(stderr, "gpubind: note: %s\n", one_line(b.launcher_note).c_str());
}

// The thread pools' sizes gpubind set or kept (bind::pools_note), once applied.
void print_pools(const bind::BoundRank& b) {
  if (std::string note = b.applied ? bind::pools_note(*b.applied) : ""; !note.empty())
    std::fprintf(stderr, "gpubind: local rank %u: %s\n", b.binding.local_rank, note.c_str());
}

// --report-bindings' line, once the binding is applied (or previewed): what the rank has.
void print_report(const ExecFlags& f, const topo::Topology& t, const bind::BoundRank& b) {
  if (!f.report) return;
  bind::MemoryApplied memory = b.applied ? b.applied->memory : bind::MemoryApplied::unchanged;
  long g = topo::global_rank(environment_of(topo::global_rank_env_names()));
  std::fprintf(
      stderr, "%s\n",
      render::report_line(t, sys::current_pid(), g, unsigned(b.plan.ranks.size()), b.binding, bind::memory_applied_note(memory)).c_str());
  print_pools(b);
}

void print_applied(const bind::RankRequest& r, const topo::Topology& t, const bind::BoundRank& b) {
  std::fprintf(
      stderr, "gpubind: local rank %u of %zu (from %s), planned over %s CPUs %s: %s\n", r.local.rank, b.plan.ranks.size(),
      r.local.source.c_str(), r.from == AllowedFrom::cgroup ? "the node's (cgroup)" : "this process's",
      plan::allowed_cpus(t, b.request).to_list().c_str(),
      render::describe_binding(b.binding, t, bind::memory_applied_note(b.applied ? b.applied->memory : bind::MemoryApplied::unchanged))
          .c_str());
  print_pools(b);
}

}  // namespace

int cmd_exec(const std::vector<std::string>& args) {
  Args app("Bind this process (one rank under srun, mpirun, torchrun, flux...) to its GPU's CPUs, memory node and "
           "NIC, then run the command. Usage: gpubind exec [options] -- CMD [ARGS...]",
           "gpubind exec");
  ExecFlags f;
  add_exec_options(app, f);
  if (int rc = app.parse_with_command(args, kExitExecFailed, f.command); rc >= 0) return rc;

  // The site's configuration: defaults for flags not given, the cache, the off-switch.
  auto cfg = load_config();
  if (!cfg) return fail_exec(cfg.error());
  apply_config(app, *cfg, f.o);
  auto binder = sys::real_binder();
  if (!cfg->binding) {
    if (!f.o.quiet) std::fprintf(stderr, "gpubind: note: binding = off in %s: running the command unbound\n", cfg->path.c_str());
    return exec_command(*binder, f);
  }
  auto lr = local_rank_of(f);
  if (!lr) return fail_exec(lr.error());
  std::string source = topology_source(f.o.topology);
  bool preview = f.dry_run && !source.empty();
  auto topo = machine_topology(f, *cfg, preview);
  if (!topo) return fail_exec(topo.error());
  auto r = rank_request(f, *lr, *topo, preview, app.count("--policy") == 0 && !cfg->policy);
  if (!r) return fail_exec(r.error());
  auto bound = bind::bind_rank(*topo, *r, *binder);
  if (!bound) return fail_exec(bound.error());
  print_notes(f, *bound, lr->rank);
  print_pinning(*topo, bound->plan, {&bound->binding}, r->machine.allowed_cpus, r->from == AllowedFrom::affinity && !f.dry_run, f.o.quiet);
  if (f.dry_run) {
    print_report(f, *topo, *bound);
    std::printf("local rank %u of %zu (%s): %s\n", lr->rank, bound->plan.ranks.size(), lr->source.c_str(),
                render::describe_binding(bound->binding, *topo).c_str());
    std::fputs(render::plan_env(bound->plan, lr->rank, environment_of(plan::user_kept_env_names())).c_str(), stdout);
    return exec_command(*binder, f);
  }
  if (!bound->applied)
    return fail_exec(Error{"binding local rank " + std::to_string(lr->rank), bound->applied.error().message()});
  print_warnings(bound->apply_warnings, f.o.quiet);
  print_report(f, *topo, *bound);
  if (f.verbose) print_applied(*r, *topo, *bound);
  return exec_command(*binder, f);
}

}  // namespace gpubind::cli
