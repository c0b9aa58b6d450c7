// gpubind check: what running processes are actually bound to, judged against the topology.
#include <algorithm>
#include <cstdio>

#include "check/check.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "render/json_text.hpp"
#include "render/node_svg.hpp"
#include "discover/gpu_runtime.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "probe/probe.hpp"
#include "probe/select.hpp"
#include "render/check_render.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

int cmd_check(const std::vector<std::string>& args) {
  Args app("Read what running processes are bound to (threads' allowed CPUs and last CPU, memory, the GPUs they "
           "hold open) and judge it: OK, UNBOUND, MISPLACED, OVERLAP, REMOTE_MEMORY, DRIFTED, NO_GPU.",
           "gpubind check");
  std::string topology, root_dir;
  SelectionFlags which;
  bool numa_maps = false, verbose = false, json = false, no_gpu_runtime = false;
  add_topology_option(app, topology);
  add_selection_options(app, which, "check");
  app.option("--root", root_dir, "Read /proc and /sys under this directory (a captured tree) instead of /");
  app.flag("--numa-maps", numa_maps, "Also sum resident pages per NUMA node (costly for big processes)");
  app.flag("--verbose", verbose, "Per-thread detail");
  app.flag("--json", json, "JSON output (same as --format json)");
  std::string format = "text";
  app.option("--format", format, "text, json, svg (the node drawn with each process on it, findings in red)")
      .one_of({"text", "json", "svg"});
  app.flag("--no-gpu-runtime", no_gpu_runtime,
           "Do not ask NVML / ROCm SMI which processes have a context on which GPU (judge by open device files)");
  app.footer(R"(Examples:
  gpubind check --all-gpu-procs                 every process holding a GPU open
  gpubind check --children-of $(pgrep -o torchrun) --json
  gpubind check --match 'python.*train' --verbose)");
  if (int rc = app.parse(args); rc >= 0) return rc;

  auto sel = make_selection(which, root_dir.empty());
  if (!sel) return fail(sel.error());

  std::string source = topology_source(topology);
  if (!root_dir.empty() && source.empty())
    return fail(Error{"--root " + root_dir, "needs --topology (the machine the captured processes ran on)", ErrorKind::usage});
  std::vector<std::string> cache_notes;
  auto topo = source.empty() ? discover::load_live_cached(discover::default_cache_dir(), discover::kDefaultCacheMaxFiles, &cache_notes)
                             : discover::load_topology(source);
  print_warnings(cache_notes, false);
  if (!topo) return fail(topo.error());
  auto root = sys::open_fsroot(root_dir.empty() ? "/" : root_dir);
  if (!root) return fail(root.error());

  // The GPU libraries know which GPU each process has a context on (CUDA opens every visible
  // GPU's device file): asked for this machine's processes only.
  std::vector<probe::GpuProcess> contexts;
  if (root_dir.empty() && !no_gpu_runtime) {
    discover::GpuRuntimes runtimes = discover::open_gpu_runtimes(*topo, "GPU contexts unknown (judged by open device files)");
    print_warnings(runtimes.notes, false);
    contexts = runtimes.processes();
    for (const probe::GpuProcess& c : contexts) sel->gpu_context_pids.push_back(c.pid);
  }
  probe::Probed probed = probe::probe_selected(**root, probe::select_processes(**root, *sel), {numa_maps});
  std::vector<probe::ProcessState> states = std::move(probed.states);
  for (probe::ProcessState& s : states)
    for (const probe::GpuProcess& c : contexts)
      if (c.pid == s.pid && std::find(s.context_gpus.begin(), s.context_gpus.end(), c.pci) == s.context_gpus.end())
        s.context_gpus.push_back(c.pci);
  std::vector<Error> errors = std::move(probed.errors);
  check::Report report = check::judge(*topo, std::move(states), errors);
  for (const Error& e : report.errors) fail(e);
  if (report.processes.empty() && report.errors.empty()) std::fprintf(stderr, "gpubind: no process to check\n");
  if (json) format = "json";
  std::string out;
  if (format == "json") {
    out = render::json_text(render::check_json(report));
  } else if (format == "svg") {
    render::Overlay o = render::check_overlay(report);
    out = render::node_svg(*topo, &o);
  } else {
    out = render::check_text(report, verbose);
  }
  if (!report.processes.empty() || format != "text") std::fwrite(out.data(), 1, out.size(), stdout);
  if (!report.errors.empty()) return kExitFailure;
  return report.has_findings() ? kExitCheckFindings : kExitOk;
}

}  // namespace gpubind::cli
