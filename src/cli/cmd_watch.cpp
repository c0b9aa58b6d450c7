// gpubind watch: what running ranks do over time — migrations, CPU time off their GPU's node,
// drift, remote memory, overlap and imbalance — one judged interval after another.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "discover/gpu_runtime.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "render/json_text.hpp"
#include "render/metrics.hpp"
#include "render/watch_render.hpp"
#include "sys/fsroot.hpp"
#include "sys/metrics_endpoint.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"
#include "watch/sampler.hpp"

namespace gpubind::cli {

int cmd_watch(const std::vector<std::string>& args) {
  Args app("Sample running processes over time and judge each interval: MIGRATING, CROSS_NUMA, CROSS_SOCKET, DRIFTED, "
           "REMOTE_MEMORY, OVERLAP, IMBALANCE (docs/cli.md has each rule).",
           "gpubind watch");
  std::string topology, textfile, listen;
  std::vector<std::string> roots;
  SelectionFlags which;
  bool json = false, once = false, no_tty = false;
  double interval = 1, duration = 0;
  std::optional<unsigned> count;
  unsigned mem_every = 10;
  watch::Thresholds th;
  add_topology_option(app, topology);
  add_selection_options(app, which, "watch");
  app.option("--interval", interval, "Seconds between samples (default 1)").range(0.01, 3600.0);
  app.option("--count", count, "Stop after this many intervals").range(1, 1000000000);
  app.option("--duration", duration, "Stop after this many seconds").range(0.0, 31536000.0);
  app.flag("--once", once, "One interval (two samples), then the summary");
  app.option("--mem-every", mem_every, "Read numa_maps (remote memory) every Nth sample; 0 never (default 10)").range(0, 1000000);
  app.option("--max-migrations", th.migrations_per_second, "MIGRATING above this many migrations per second per rank (default 1)")
      .range(0.0, 1e9);
  app.option("--max-cross-numa", th.cross_numa, "CROSS_NUMA/CROSS_SOCKET above this share of CPU time, 0-1 (default 0.1)").range(0.0, 1.0);
  app.option("--max-remote-memory", th.remote_memory, "REMOTE_MEMORY above this share of resident pages, 0-1 (default 0.2)")
      .range(0.0, 1.0);
  app.option("--max-imbalance", th.imbalance, "IMBALANCE above this spread of the ranks' CPU time, 0-1 (default 0.25)").range(0.0, 1.0);
  app.option("--root", roots, "Read /proc and /sys under this directory instead of /; repeated: a recorded sequence, one tree per "
                              "sample, replayed without waiting (by default one interval per tree after the first)");
  app.flag("--json", json, "JSON lines: one object per interval, then the summary");
  app.flag("--no-tty", no_tty, "Append each interval's table even on a terminal (default there: redraw in place, like top)");
  app.option("--listen", listen,
             "Serve /metrics (Prometheus text format) and /healthz on [ADDR:]PORT; ADDR defaults to 127.0.0.1, any other "
             "only when given");
  app.option("--textfile", textfile,
             "After every interval, replace FILE with the metrics in Prometheus' text format (node_exporter's textfile "
             "collector reads DIR/*.prom)");
  app.footer(R"(Examples:
  gpubind watch --children-of $(pgrep -o torchrun)          a launcher's ranks, every second
  gpubind watch --match 'train\.py' --interval 5 --json     JSON lines for a log
  gpubind watch --once                                    every GPU process, one interval)");
  if (int rc = app.parse(args); rc >= 0) return rc;

  // The selection is found again at every sample: ranks that start, restart or exit are followed.
  auto sel = make_selection(which, roots.empty());
  if (!sel) return fail(sel.error(), kExitUsage);
  if (once) count = 1;
  // A recorded sequence ends with its last tree (one tree: one interval), never replays for ever.
  if (!count && duration == 0 && !roots.empty()) count = unsigned(std::max<size_t>(roots.size() - 1, 1));

  std::string source = topology_source(topology);
  if (!roots.empty() && source.empty())
    return fail(Error{"--root " + roots[0], "needs --topology (the machine the recorded processes ran on)"}, kExitUsage);
  std::vector<std::string> cache_notes;
  auto topo = source.empty() ? discover::load_live_cached(discover::default_cache_dir(), discover::kDefaultCacheMaxFiles, &cache_notes)
                             : discover::load_topology(source);
  print_warnings(cache_notes, false);
  if (!topo) return fail(topo.error(), kExitFailure);
  std::vector<std::unique_ptr<sys::FsRoot>> opened;
  std::vector<const sys::FsRoot*> tree;
  for (const std::string& r : roots.empty() ? std::vector<std::string>{"/"} : roots) {
    auto root = sys::open_fsroot(r);
    if (!root) return fail(root.error(), kExitFailure);
    tree.push_back(root->get());
    opened.push_back(std::move(*root));
  }
  // A recorded sequence replays on a clock that moves only by the interval.
  watch::StepClock replay_clock;
  const sys::Clock& clock = roots.empty() ? sys::steady_clock() : static_cast<const sys::Clock&>(replay_clock);
  std::string node = topo->hostname.empty() ? sys::hostname() : topo->hostname;

  std::unique_ptr<sys::MetricsEndpoint> endpoint;
  if (!listen.empty()) {
    auto where = sys::parse_listen_address(listen);
    if (!where) return fail(where.error(), kExitUsage);
    auto e = sys::MetricsEndpoint::start(where->first, where->second);
    if (!e) return fail(e.error(), kExitFailure);
    endpoint = std::move(*e);
    endpoint->publish(render::metrics_text({node, nullptr, nullptr, 0}));
  }

  // GPU utilization from NVML and ROCm SMI, on the live system, for the vendors it has; a library
  // missing (or failing) is one note, and the rest works.
  watch::SamplerOptions sampling{*sel, mem_every, {}};
  discover::GpuRuntimes runtimes;
  if (roots.empty()) {
    runtimes = discover::open_gpu_runtimes(*topo, "GPU utilization unknown");
    print_warnings(runtimes.notes, false);
    if (!runtimes.empty()) sampling.gpu_usage = [&runtimes] { return runtimes.usage(); };
  }
  watch::Sampler sampler(tree, clock, std::move(sampling));
  watch::Watcher watcher(*topo, th);
  // On a terminal the latest interval replaces the one before (clear and home, as top does);
  // into a pipe or a file every interval is appended.
  bool redraw = !json && !no_tty && roots.empty() && sys::stdout_is_terminal();
  auto step = std::chrono::milliseconds(long(interval * 1000 + 0.5));
  bool errors = false, seen_any = false;
  for (unsigned taken = 0;; ++taken) {
    watch::Taken t = sampler.take();
    for (const Error& e : t.errors) {
      fail(e, kExitFailure);
      errors = true;
    }
    print_warnings(t.notes, false);
    seen_any = seen_any || !t.snapshot.processes.empty();
    if (taken == 0 && t.snapshot.processes.empty())
      std::fprintf(stderr, "gpubind: watch: no process matches yet; watching for one\n");
    double now = t.snapshot.t;
    if (auto iv = watcher.observe(std::move(t.snapshot))) {
      std::string out = json ? render::json_line(render::interval_json(*iv, node)) : render::interval_text(*iv) + "\n";
      if (redraw) {
        char head[160];
        std::snprintf(head, sizeof head, "\x1b[H\x1b[2Jgpubind watch on %s, every %g s (Ctrl-C stops)\n\n", one_line(node).c_str(),
                      interval);
        out = head + out;
      }
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
      if (!textfile.empty() || endpoint) {
        watch::Summary so_far = watcher.summary();
        std::string metrics = render::metrics_text({node, &so_far, &*iv, t.cost_seconds});
        if (endpoint) endpoint->publish(metrics);
        if (!textfile.empty())
          if (Status s = sys::replace_file(textfile, metrics); !s) {
            fail(Error{"--textfile", s.error().message()}, kExitFailure);
            return kExitFailure;
          }
      }
    }
    if (count && taken >= *count) break;
    // The last interval is the one that ends by the duration, give or take half an interval (the
    // samples drift by their own cost).
    if (duration > 0 && now + interval > duration + interval / 2) break;
    clock.sleep_for(step);
  }
  watch::Summary s = watcher.summary();
  std::string out = json ? render::json_line(render::summary_json(s, node)) : render::summary_text(s);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!seen_any) return fail(Error{"watch", "no process to watch (none matched at any sample)"}, kExitFailure);
  if (errors) return kExitFailure;
  return s.any_finding ? kExitCheckFindings : kExitOk;
}

}  // namespace gpubind::cli
