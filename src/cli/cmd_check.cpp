// gpubind check: what running processes are actually bound to, judged against the topology.
#include <cstdio>

#include "bind/request.hpp"
#include "check/check.hpp"
#include "check/nccl_check.hpp"
#include "check/slurm_job.hpp"
#include "cli/check_slurm_job.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/gpu_runtime.hpp"
#include "probe/probe.hpp"
#include "probe/select.hpp"
#include "render/check_render.hpp"
#include "render/json_text.hpp"
#include "render/node_svg.hpp"
#include "sys/clock.hpp"
#include "sys/environment.hpp"
#include "sys/fsroot.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

// The largest NCCL log read whole: NCCL_DEBUG=INFO of a thousand ranks in one stream.
constexpr size_t kMaxNcclLog = size_t(4) << 30;

struct CheckFlags {
  std::string topology, root_dir, format = "text", slurm_job, slurm_node, node_name;
  std::vector<std::string> nccl_logs;
  PlanOptions nccl_plan;  // --policy and --reserve for --nccl-log's plan
  SelectionFlags which;
  bool numa_maps = false, verbose = false, json = false, no_gpu_runtime = false, require_processes = false, quiet = false;
};

void add_check_options(Args& app, CheckFlags& f) {
  add_topology_option(app, f.topology);
  add_selection_options(app, f.which, "check", true);
  app.option("--root", f.root_dir, "Read /proc and /sys under this directory (a captured tree) instead of /");
  app.flag("--numa-maps", f.numa_maps, "Also sum resident pages per NUMA node (costly for big processes)");
  app.flag("--verbose", f.verbose, "Per-thread detail");
  app.flag("--json", f.json, "JSON output (same as --format json)");
  app.same_as("--json", "--format", "json");
  app.option("--format", f.format, "text, json, svg (the node drawn with each process on it, findings in red)")
      .one_of({"text", "json", "svg"});
  app.option("--slurm-job", f.slurm_job,
             "Every node of this running Slurm job, through srun --overlap (one task per node): one table for the job");
  app.option("--slurm-node", f.slurm_node,
             "This node's tasks of this Slurm job, one line each for --slurm-job to merge (what srun runs on every node)");
  app.flag("--no-gpu-runtime", f.no_gpu_runtime,
           "Do not ask NVML / ROCm SMI which processes have a context on which GPU (judge by open device files)");
  app.flag("--require-processes", f.require_processes,
           "Exit 1 when no process is found to check (an epilog notices a check that saw nothing)");
  app.option("--nccl-log", f.nccl_logs,
             "Judge what NCCL (or RCCL) logged with NCCL_DEBUG=INFO (NCCL_DEBUG_FILE per rank, or one stream): each rank's CPU "
             "affinity, NICs and GPU Direct RDMA against the topology and gpubind's plan for the GPUs the ranks used; repeat it or "
             "give several files; - reads standard input");
  add_policy_option(app, f.nccl_plan.policy);
  app.option("--reserve", f.nccl_plan.reserve, "--nccl-log: CPUs the plan never uses (cpulist), as exec and launch were told");
  app.option("--node-name", f.node_name,
             "The node named in --json (default: $NODE_NAME (Kubernetes' downward API), else the hostname)");
  add_quiet_option(app, f.quiet);
  app.footer(R"(Examples:
  gpubind check --all-gpu-procs                 every process holding a GPU open
  gpubind check --children-of $(pgrep -o torchrun) --json
  gpubind check --match 'python.*train' --verbose
  gpubind check --slurm-job 4242               every node of Slurm job 4242, one table
  gpubind check --nccl-log nccl.node01.*.log    what NCCL did in each rank, against the plan)");
}

std::string render_check(const check::Report& report, const topo::Topology& t, const CheckFlags& f) {
  if (f.format == "json") return render::json_text(render::check_json(report, node_name(f.node_name, "", t), sys::utc_timestamp()));
  if (f.format == "svg") {
    render::Overlay o = render::check_overlay(report);
    return render::node_svg(t, &o);
  }
  return render::check_text(report, f.verbose);
}

// --slurm-job: the job's nodes checked through srun and merged; errors on stderr, the table on stdout.
int check_job(const CheckFlags& f) {
  if (!f.root_dir.empty() || f.which.any() || !f.slurm_node.empty() || f.format == "svg")
    return fail(Error{"--slurm-job " + f.slurm_job, "selects the job's tasks on every node by itself: --root, --pid, --self, --all-gpu-procs, --children-of, "
                                                    "--match, --slurm-node and --format svg do not combine with it", ErrorKind::usage});
  std::vector<std::string> pass;
  if (f.no_gpu_runtime) pass.push_back("--no-gpu-runtime");
  if (f.numa_maps) pass.push_back("--numa-maps");
  auto report = check_slurm_job(f.slurm_job, pass);
  if (!report) return fail(report.error());
  for (const std::string& e : report->errors) fail(Error{"--slurm-job " + f.slurm_job, e});
  std::string out = f.format == "json" ? render::json_text(render::job_json(*report)) : render::job_text(*report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!report->errors.empty()) return kExitFailure;
  return report->has_findings() ? kExitCheckFindings : kExitOk;
}

// --nccl-log: the logs read and judged against the plan for the GPUs the ranks used, with the
// policy and reserve given, else gpubind.conf's (what exec, launch and the plugin bound with).
int check_nccl_logs(const Args& app, CheckFlags& f) {
  if (!f.root_dir.empty() || f.which.any() || !f.slurm_job.empty() || !f.slurm_node.empty() || f.format == "svg" || f.numa_maps ||
      f.no_gpu_runtime || f.require_processes || f.verbose || !f.node_name.empty())
    return fail(Error{"--nccl-log",
                      "judges NCCL's own log, not running processes: --root, --pid, --self, --all-gpu-procs, --children-of, "
                      "--match, --slurm-job, --slurm-node, --numa-maps, --no-gpu-runtime, --require-processes, --verbose, "
                      "--node-name and --format svg do not combine with it",
                      ErrorKind::usage});
  auto cfg = load_config();
  if (!cfg) return fail(cfg.error());
  std::vector<std::string> taken = apply_config(app, *cfg, f.nccl_plan);
  std::vector<std::pair<std::string, std::string>> texts;
  for (const std::string& path : f.nccl_logs) {
    auto text = path == "-" ? sys::read_standard_input(kMaxNcclLog) : sys::read_file(path, kMaxNcclLog);
    if (!text) return fail(Error{"--nccl-log " + path, text.error().why, text.error().kind});
    texts.emplace_back(path, std::move(*text));
  }
  check::NcclLog log = check::parse_nccl_logs(texts);
  if (log.processes.empty())
    return fail(Error{"--nccl-log " + join(f.nccl_logs, " "),
                      "no NCCL INFO line with HOST:PID:TID in it (run the job with NCCL_DEBUG=INFO, "
                      "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH or unset)"});
  auto topo = acquire_topology({.flag = f.topology, .config = &*cfg, .quiet = f.quiet});
  if (!topo) return fail(topo.error());
  auto req = bind::make_request(f.nccl_plan, *topo, bind::AllowedFrom::topology, {}, {});
  if (!req) return fail(req.error());
  check::NcclReport report = check::judge_nccl_log(*topo, log, *req);
  std::string origin = topo->origin.empty() ? "this machine" : topo->origin;
  std::string out =
      f.format == "json"
          ? render::json_text(render::nccl_json(report, f.nccl_plan.policy, origin))
          : render::nccl_text(report, "gpubind's plan (policy " + f.nccl_plan.policy +
                                          (taken.empty() ? "" : ", " + join(taken, ", ") + " from " + cfg->path) + ") on " + origin);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return report.has_findings() ? kExitCheckFindings : kExitOk;
}

// --slurm-node: which of this node's processes are the job's tasks (not the step gpubind runs in).
probe::SlurmTasks node_tasks(const std::string& job) {
  return {job, sys::env_value("SLURMD_NODENAME").value_or(""), sys::env_value("SLURM_STEP_ID").value_or("")};
}

}  // namespace

int cmd_check(const std::vector<std::string>& args) {
  Args app(
      "Read what running processes are bound to (threads' allowed CPUs and last CPU, memory, the GPUs they "
      "hold open) and judge it: OK, UNBOUND, MISPLACED, OVERLAP, REMOTE_MEMORY, DRIFTED, OVERSUBSCRIBED, THROTTLED, NO_GPU.",
      "gpubind check");
  CheckFlags f;
  add_check_options(app, f);
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (f.json) f.format = "json";
  if (!f.nccl_logs.empty()) return check_nccl_logs(app, f);
  if (app.count("--policy") || app.count("--reserve"))
    return fail(Error{app.count("--policy") ? "--policy" : "--reserve",
                      "plans for --nccl-log only: check judges running processes "
                      "against the topology and what gpubind applied (GPUBIND_*)",
                      ErrorKind::usage});
  if (!f.slurm_job.empty()) return check_job(f);
  auto sel = make_selection(f.which, f.root_dir.empty());
  if (!sel) return fail(sel.error());
  if (!f.slurm_node.empty()) sel->slurm_job = node_tasks(f.slurm_node);
  auto topo = acquire_topology({.flag = f.topology, .root = f.root_dir, .quiet = f.quiet});
  if (!topo) return fail(topo.error());
  auto root = sys::open_fsroot(f.root_dir.empty() ? "/" : f.root_dir);
  if (!root) return fail(root.error());
  std::optional<std::vector<probe::GpuProcess>> contexts;
  if (f.root_dir.empty() && !f.no_gpu_runtime) contexts = gpu_contexts(*topo, *sel, "GPU contexts unknown (judged by open device files)", f.quiet);
  probe::Selected selected = probe::select_processes(**root, *sel);
  // A parent that is not there and has no descendant (a captured tree may hold children only).
  if (sel->children_of && selected.pids.empty() && !(*root)->exists("proc/" + std::to_string(*sel->children_of)))
    return fail(Error{"--children-of " + std::to_string(*sel->children_of), "no such process", ErrorKind::not_found});
  probe::Probed probed = probe::probe_selected(**root, selected, {f.numa_maps});
  if (contexts) probe::add_context_gpus(probed.states, *contexts);
  check::Report report = check::judge(*topo, std::move(probed.states), std::move(probed.errors), {contexts.has_value()});
  for (const Error& e : report.errors) fail(e);
  bool none = report.processes.empty() && report.errors.empty();
  if (none && f.require_processes) return fail(Error{"check", "no process to check (--require-processes)"});
  if (none && f.slurm_node.empty()) std::fprintf(stderr, "gpubind: no process to check\n");
  std::string out = f.slurm_node.empty() ? render_check(report, *topo, f) : check::node_rows(report, node_tasks(f.slurm_node).node);
  if (!report.processes.empty() || f.format != "text" || !f.slurm_node.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
  if (!report.errors.empty()) return kExitFailure;
  return report.has_findings() ? kExitCheckFindings : kExitOk;
}

}  // namespace gpubind::cli
