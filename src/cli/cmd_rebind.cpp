// gpubind rebind: a running job's ranks moved, every thread and their pages, onto the CPUs and
// memory node the plan gives each rank's GPU.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "probe/probe.hpp"
#include "probe/select.hpp"
#include "rebind/move.hpp"
#include "render/json_text.hpp"
#include "render/rebind_render.hpp"
#include "sys/clock.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

namespace {

struct RebindFlags {
  PlanOptions plan;
  std::string root_dir, node_name;
  SelectionFlags which;
  bool dry_run = false, all_threads = false, no_memory = false, json = false, verbose = false, no_gpu_runtime = false;
};

void add_rebind_options(Args& app, RebindFlags& f) {
  add_topology_option(app, f.plan.topology);
  add_selection_options(app, f.which, "rebind", false);
  add_policy_and_mem_options(app, f.plan, "Memory policy the pages follow: preferred (default), bind, interleave, none (pages stay)");
  app.flag("--no-smt,!--smt", f.plan.no_smt, "One PU per core");
  app.option("--reserve", f.plan.reserve, "CPUs never to use (cpulist)");
  app.flag("--dry-run", f.dry_run, "Show what would move, change nothing");
  app.flag("--all-threads", f.all_threads, "Also move threads already pinned within their rank's CPUs (NCCL's, a library's own)");
  app.flag("--no-memory", f.no_memory, "Move threads only; leave pages where they are");
  app.option("--root", f.root_dir, "Read /proc and /sys under this directory (a captured tree; with --dry-run only)");
  app.flag("--no-gpu-runtime", f.no_gpu_runtime, "Do not ask NVML / ROCm SMI which processes have a context on which GPU");
  app.flag("--json", f.json, "JSON output");
  app.flag("--verbose", f.verbose, "Every thread, and where each rank's GPU was told from");
  add_quiet_option(app, f.plan.quiet);
  app.option("--node-name", f.node_name, "The node named in --json (default: Slurm's node name, $NODE_NAME, the hostname)");
  app.footer(R"(Exit codes: 0 every rank where its plan puts it; 1 a change failed part-way (the report says what moved);
2 usage; 4 refused, nothing changed: a rank or its GPU cannot be told; 5 no permission for a process (others moved).
Examples:
  gpubind rebind --children-of $(pgrep -o torchrun) --dry-run
  gpubind rebind --match 'python.*train' --json)");
}

Result<rebind::Options> rebind_options(const Args& app, const bind::Config& cfg, RebindFlags& f, const topo::Topology& t) {
  apply_config(app, cfg, f.plan);
  auto base = bind::make_request(f.plan, t, AllowedFrom::topology, {}, {});
  if (!base) return base.error();
  return rebind::Options{*base, f.all_threads, !f.no_memory, false};
}

}  // namespace

int cmd_rebind(const std::vector<std::string>& args) {
  Args app("Move a running job's ranks in place: every thread of each rank onto the CPUs its GPU's plan gives it, its "
           "pages onto the planned memory node. Ranks are found as check finds them.", "gpubind rebind");
  RebindFlags f;
  add_rebind_options(app, f);
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (!f.which.any()) return fail(Error{"rebind", "name the job's processes: --pid, --children-of, --match or --all-gpu-procs", ErrorKind::usage});
  if (!f.root_dir.empty() && !f.dry_run) return fail(Error{"--root " + f.root_dir, "a captured tree can only be shown: add --dry-run", ErrorKind::usage});
  auto sel = make_selection(f.which, f.root_dir.empty());
  if (!sel) return fail(sel.error());
  auto cfg = load_config();
  if (!cfg) return fail(cfg.error());
  // Moving needs this machine's plan: its topology, or an admin's copy of it; a dry run shows any.
  auto topo = acquire_topology({.use = f.dry_run ? TopologyUse::processes : TopologyUse::binding,
                                .flag = f.plan.topology,
                                .root = f.root_dir,
                                .config = &*cfg,
                                .quiet = f.plan.quiet});
  if (!topo) return fail(topo.error());
  // The node's off-switch: an operator who turned binding off expects nothing moved.
  if (!cfg->binding && !f.dry_run)
    return fail_with(Error{"rebind", "binding = off in " + cfg->path + ": nothing moved (the node's off-switch; --dry-run shows the plan)"},
                     kExitRebindRefused);
  auto options = rebind_options(app, *cfg, f, *topo);
  if (!options) return fail(options.error());
  auto root = sys::open_fsroot(f.root_dir.empty() ? "/" : f.root_dir);
  if (!root) return fail(root.error());
  std::optional<std::vector<probe::GpuProcess>> contexts;
  if (f.root_dir.empty() && !f.no_gpu_runtime) contexts = gpu_contexts(*topo, *sel, "GPU contexts unknown (ranks told by device files and rank variables)", f.plan.quiet);
  // Pages per node: the dry run shows them as probed; a move reads them itself, before and after.
  probe::Probed probed = probe::probe_selected(**root, probe::select_processes(**root, *sel), {f.dry_run});
  if (contexts) probe::add_context_gpus(probed.states, *contexts);
  for (const Error& e : probed.errors) fail(e);
  if (!probed.errors.empty()) return kExitFailure;
  if (probed.states.empty()) return fail(Error{"rebind", "no process found to rebind", ErrorKind::not_found});
  options->contexts_known = contexts.has_value();
  rebind::Planned planned = rebind::make_plan(*topo, probed.states, rebind::cgroup_cpus(**root, probed.states), *options);
  for (const Error& e : planned.refusals) fail_with(e, kExitRebindRefused);
  if (!planned.refusals.empty()) return kExitRebindRefused;
  print_warnings(planned.plan.warnings, f.plan.quiet);
  auto mover = sys::real_task_mover();
  rebind::Outcome out = rebind::move(planned.plan, **root, mover.get(), f.dry_run);
  std::string text = f.json ? render::json_text(render::rebind_json(out, planned.plan.skipped, node_name(f.node_name, "", *topo), sys::utc_timestamp()))
                            : render::rebind_text(out, planned.plan.skipped, f.verbose);
  std::fwrite(text.data(), 1, text.size(), stdout);
  print_warnings(out.warnings(), f.plan.quiet);
  print_warnings(rebind::keep_records(out), f.plan.quiet);
  for (const Error& e : out.errors()) fail(e);
  for (const Error& e : planned.denied) fail(e);
  return out.failed ? kExitFailure : out.refused || !planned.denied.empty() ? kExitRebindNoPermission : kExitOk;
}

}  // namespace gpubind::cli
