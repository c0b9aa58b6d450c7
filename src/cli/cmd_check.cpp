// gpubind check: what running processes are actually bound to, judged against the topology.
#include <cstdio>

#include "check/check.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "render/json_text.hpp"
#include "render/node_svg.hpp"
#include "discover/gpu_runtime.hpp"
#include "probe/probe.hpp"
#include "probe/select.hpp"
#include "render/check_render.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

struct CheckFlags {
  std::string topology, root_dir, format = "text";
  SelectionFlags which;
  bool numa_maps = false, verbose = false, json = false, no_gpu_runtime = false;
};

void add_check_options(Args& app, CheckFlags& f) {
  add_topology_option(app, f.topology);
  add_selection_options(app, f.which, "check");
  app.option("--root", f.root_dir, "Read /proc and /sys under this directory (a captured tree) instead of /");
  app.flag("--numa-maps", f.numa_maps, "Also sum resident pages per NUMA node (costly for big processes)");
  app.flag("--verbose", f.verbose, "Per-thread detail");
  app.flag("--json", f.json, "JSON output (same as --format json)");
  app.same_as("--json", "--format", "json");
  app.option("--format", f.format, "text, json, svg (the node drawn with each process on it, findings in red)")
      .one_of({"text", "json", "svg"});
  app.flag("--no-gpu-runtime", f.no_gpu_runtime,
           "Do not ask NVML / ROCm SMI which processes have a context on which GPU (judge by open device files)");
  app.footer(R"(Examples:
  gpubind check --all-gpu-procs                 every process holding a GPU open
  gpubind check --children-of $(pgrep -o torchrun) --json
  gpubind check --match 'python.*train' --verbose)");
}

// The GPU libraries know which GPU each process has a context on (CUDA opens every visible GPU's
// device file): asked for this machine's processes only. They count as GPU processes too.
std::vector<probe::GpuProcess> gpu_contexts(const topo::Topology& t, probe::Selection& sel) {
  discover::GpuRuntimes runtimes = discover::open_gpu_runtimes(t, "GPU contexts unknown (judged by open device files)");
  print_warnings(runtimes.notes, false);
  std::vector<probe::GpuProcess> contexts = runtimes.processes();
  for (const probe::GpuProcess& c : contexts) sel.gpu_context_pids.push_back(c.pid);
  return contexts;
}

std::string render_check(const check::Report& report, const topo::Topology& t, const CheckFlags& f) {
  if (f.format == "json") return render::json_text(render::check_json(report));
  if (f.format == "svg") {
    render::Overlay o = render::check_overlay(report);
    return render::node_svg(t, &o);
  }
  return render::check_text(report, f.verbose);
}

}  // namespace

int cmd_check(const std::vector<std::string>& args) {
  Args app("Read what running processes are bound to (threads' allowed CPUs and last CPU, memory, the GPUs they "
           "hold open) and judge it: OK, UNBOUND, MISPLACED, OVERLAP, REMOTE_MEMORY, DRIFTED, NO_GPU.",
           "gpubind check");
  CheckFlags f;
  add_check_options(app, f);
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (f.json) f.format = "json";
  auto sel = make_selection(f.which, f.root_dir.empty());
  if (!sel) return fail(sel.error());
  auto topo = topology_of_processes(f.topology, f.root_dir, "captured");
  if (!topo) return fail(topo.error());
  auto root = sys::open_fsroot(f.root_dir.empty() ? "/" : f.root_dir);
  if (!root) return fail(root.error());
  std::vector<probe::GpuProcess> contexts;
  if (f.root_dir.empty() && !f.no_gpu_runtime) contexts = gpu_contexts(*topo, *sel);
  probe::Selected selected = probe::select_processes(**root, *sel);
  // A parent that is not there and has no descendant (a captured tree may hold children only).
  if (sel->children_of && selected.pids.empty() && !(*root)->exists("proc/" + std::to_string(*sel->children_of)))
    return fail(Error{"--children-of " + std::to_string(*sel->children_of), "no such process", ErrorKind::not_found});
  probe::Probed probed = probe::probe_selected(**root, selected, {f.numa_maps});
  probe::add_context_gpus(probed.states, contexts);
  check::Report report = check::judge(*topo, std::move(probed.states), std::move(probed.errors));
  for (const Error& e : report.errors) fail(e);
  if (report.processes.empty() && report.errors.empty()) std::fprintf(stderr, "gpubind: no process to check\n");
  std::string out = render_check(report, *topo, f);
  if (!report.processes.empty() || f.format != "text") std::fwrite(out.data(), 1, out.size(), stdout);
  if (!report.errors.empty()) return kExitFailure;
  return report.has_findings() ? kExitCheckFindings : kExitOk;
}

}  // namespace gpubind::cli
