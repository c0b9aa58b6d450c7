// gpubind check: what running processes are actually bound to, judged against the topology.
#include <cstdio>

#include "check/check.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "render/json_text.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "probe/probe.hpp"
#include "probe/select.hpp"
#include "render/check_render.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/pattern.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {
std::optional<int> parse_pid(const std::string& text) {
  auto v = parse_uint(text);
  if (!v || *v == 0 || *v > (1u << 30)) return std::nullopt;
  return int(*v);
}
}  // namespace

int cmd_check(const std::vector<std::string>& args) {
  Args app("Read what running processes are bound to (threads' allowed CPUs and last CPU, memory, the GPUs they "
           "hold open) and judge it: OK, UNBOUND, MISPLACED, OVERLAP, REMOTE_MEMORY, DRIFTED, NO_GPU.",
           "gpubind check");
  std::string topology, root_dir, children_of, match;
  std::vector<std::string> pid_args;
  bool self = false, all_gpu = false, numa_maps = false, verbose = false, json = false;
  add_topology_option(app, topology);
  app.option("--pid", pid_args, "Processes to check (repeatable)");
  app.flag("--self", self, "Check this gpubind process (it inherited its parent's binding and environment)");
  app.flag("--all-gpu-procs", all_gpu, "Every process holding a GPU device open (the default)");
  app.option("--children-of", children_of, "Every descendant of this PID (a launcher's ranks)");
  app.option("--match", match, "Processes whose command line matches this regular expression");
  app.option("--root", root_dir, "Read /proc and /sys under this directory (a captured tree) instead of /");
  app.flag("--numa-maps", numa_maps, "Also sum resident pages per NUMA node (costly for big processes)");
  app.flag("--verbose", verbose, "Per-thread detail");
  app.flag("--json", json, "JSON output");
  app.footer(R"(Examples:
  gpubind check --all-gpu-procs                 every process holding a GPU open
  gpubind check --children-of $(pgrep -o torchrun) --json
  gpubind check --match 'python.*train' --verbose)");
  if (int rc = app.parse(args); rc >= 0) return rc;

  // Targets.
  std::vector<int> pids;
  for (const std::string& a : pid_args) {
    auto pid = parse_pid(a);
    if (!pid) return fail(Error{"--pid " + a, "not a process id"}, kExitUsage);
    pids.push_back(*pid);
  }
  std::optional<int> parent;
  if (!children_of.empty()) {
    parent = parse_pid(children_of);
    if (!parent) return fail(Error{"--children-of " + children_of, "not a process id"}, kExitUsage);
  }
  std::optional<Pattern> re;
  if (!match.empty()) {
    auto p = Pattern::compile(match);
    if (!p) return fail(Error{"--match '" + match + "'", "not a valid regular expression (" + p.error().why + ")"}, kExitUsage);
    re = *p;
  }
  if (self && !root_dir.empty()) return fail(Error{"--self", "cannot be used with --root"}, kExitUsage);

  std::string source = topology_source(topology);
  if (!root_dir.empty() && source.empty())
    return fail(Error{"--root " + root_dir, "needs --topology (the machine the captured processes ran on)"}, kExitUsage);
  std::vector<std::string> cache_notes;
  auto topo = source.empty() ? discover::load_live_cached(discover::default_cache_dir(), discover::kDefaultCacheMaxFiles, &cache_notes)
                             : discover::load_topology(source);
  print_warnings(cache_notes, false);
  if (!topo) return fail(topo.error(), kExitFailure);
  auto root = sys::open_fsroot(root_dir.empty() ? "/" : root_dir);
  if (!root) return fail(root.error(), kExitFailure);

  probe::Selection sel;
  sel.pids = pids;
  if (self) sel.pids.push_back(sys::current_pid());
  sel.children_of = parent;
  if (re) sel.match = [&](const std::string& c) { return re->search(c); };
  sel.all_gpu = all_gpu;
  if (root_dir.empty()) sel.exclude = sys::current_pid();
  probe::Probed probed = probe::probe_selected(**root, probe::select_processes(**root, sel), {numa_maps});
  std::vector<probe::ProcessState> states = std::move(probed.states);
  std::vector<Error> errors = std::move(probed.errors);
  check::Report report = check::judge(*topo, std::move(states), errors);
  for (const Error& e : report.errors) fail(e, kExitFailure);
  if (report.processes.empty() && report.errors.empty()) std::fprintf(stderr, "gpubind: no process to check\n");
  std::string out = json ? render::json_text(render::check_json(report)) : render::check_text(report, verbose);
  if (!report.processes.empty() || json) std::fwrite(out.data(), 1, out.size(), stdout);
  if (!report.errors.empty()) return kExitFailure;
  return report.has_findings() ? kExitCheckFindings : kExitOk;
}

}  // namespace gpubind::cli
