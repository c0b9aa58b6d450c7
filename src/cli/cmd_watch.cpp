// gpubind watch: what running ranks do over time — migrations, CPU time off their GPU's node,
// drift, remote memory, overlap and imbalance — one judged interval after another.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "check/slurm_job.hpp"
#include "cli/check_slurm_job.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/gpu_runtime.hpp"
#include "rebind/move.hpp"
#include "render/check_render.hpp"
#include "render/json_text.hpp"
#include "render/metrics.hpp"
#include "render/rebind_render.hpp"
#include "render/watch_render.hpp"
#include "sys/clock.hpp"
#include "sys/environment.hpp"
#include "sys/fsroot.hpp"
#include "sys/metrics_endpoint.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"
#include "watch/run.hpp"
#include "watch/sampler.hpp"

namespace gpubind::cli {

namespace {

struct WatchFlags {
  std::string topology, textfile, listen, slurm_node, slurm_job, summary_file, node_name, enforce;
  double enforce_gap = 10;
  std::vector<std::string> roots;
  SelectionFlags which;
  bool json = false, once = false, no_tty = false, quiet = false, summary_pieces = false;
  watch::Schedule schedule;
  unsigned mem_every = 10;
  watch::Thresholds th;
};

void add_watch_options(Args& app, WatchFlags& f) {
  add_topology_option(app, f.topology);
  add_selection_options(app, f.which, "watch", true);
  app.option("--interval", f.schedule.interval, "Seconds between samples (default 1)").range(0.01, 3600.0);
  app.option("--count", f.schedule.count, "Stop after this many intervals").range(1, 1000000000);
  app.option("--duration", f.schedule.duration, "Stop after this many seconds").range(0.0, 31536000.0);
  app.flag("--once", f.once, "One interval (two samples), then the summary");
  app.option("--mem-every", f.mem_every, "Read numa_maps (remote memory) every Nth sample; 0 never (default 10)").range(0, 1000000);
  app.option("--max-migrations", f.th.migrations_per_second, "MIGRATING above this many migrations per second per rank (default 1)")
      .range(0.0, 1e9);
  app.option("--max-cross-numa", f.th.cross_numa, "CROSS_NUMA/CROSS_SOCKET above this share of CPU time, 0-1 (default 0.1)")
      .range(0.0, 1.0);
  app.option("--max-remote-memory", f.th.remote_memory, "REMOTE_MEMORY above this share of resident pages, 0-1 (default 0.2)")
      .range(0.0, 1.0);
  app.option("--max-imbalance", f.th.imbalance, "IMBALANCE above this spread of the ranks' CPU time, 0-1 (default 0.25)").range(0.0, 1.0);
  app.option("--max-runnable", f.th.oversubscribed,
             "OVERSUBSCRIBED above this many threads running or waiting for a CPU per allowed CPU, the rank's and its children's, "
             "over 8 intervals (default 1.25)")
      .range(0.0, 1e6);
  app.option("--max-throttled", f.th.throttled, "THROTTLED above this share of the CPU quota's periods throttled, 0-1 (default 0.25)")
      .range(0.0, 1.0);
  app.option("--drift-hold", f.th.drift_hold, "DRIFTED holds this many seconds after a thread's allowed CPUs changed (default 30)")
      .range(0.0, 86400.0);
  app.option("--node-name", f.node_name,
             "The node label of every record and metric (default: Slurm's node name under --slurm-node, else $NODE_NAME "
             "(Kubernetes' downward API), else the hostname)");
  app.option("--root", f.roots, "Read /proc and /sys under this directory instead of /; repeated: a recorded sequence, one tree per "
                                "sample, replayed without waiting (by default one interval per tree after the first)");
  app.flag("--json", f.json, "JSON lines: one object per interval, then the summary");
  app.flag("--summary-pieces", f.summary_pieces,
           "With --slurm-node: no interval lines, and the summary as numbered pieces of at most 512 bytes, one per line, as "
           "watch --slurm-job asks of each node (srun cuts lines of 1024 bytes or more and may interleave two nodes' parts)");
  app.flag("--no-tty", f.no_tty, "Append each interval's table even on a terminal (default there: redraw in place, like top)");
  app.option("--listen", f.listen,
             "Serve /metrics (Prometheus text format) and /healthz on [ADDR:]PORT; ADDR defaults to 127.0.0.1, any other "
             "only when given");
  app.option("--slurm-node", f.slurm_node,
             "This node's tasks of this Slurm job, including those that start later (a Prolog's watch; "
             "deploy/slurm/gpubind-prolog.sh)");
  app.option("--slurm-job", f.slurm_job,
             "Every node of this running Slurm job, through srun --overlap, for --duration or --count: the nodes' "
             "summaries as one table (--json: one object)");
  app.option("--enforce", f.enforce,
             "Put a rank's thread that drifts off its CPUs back (--enforce), or only log it (--enforce=report); each "
             "action a log line and gpubind_rank_repins_total (docs/cli.md)")
      .one_of({"on", "report"});
  app.option("--enforce-gap", f.enforce_gap, "With --enforce: at most one round of repins per rank every this many seconds (default 10)")
      .range(0.0, 86400.0);
  add_quiet_option(app, f.quiet);
  app.option("--summary", f.summary_file, "At the end, also write the summary as text to FILE (replaced whole)");
  app.option("--textfile", f.textfile,
             "After every interval, replace FILE with the metrics in Prometheus' text format (node_exporter's textfile "
             "collector reads DIR/*.prom)");
  app.footer(R"(Examples:
  gpubind watch --children-of $(pgrep -o torchrun)          a launcher's ranks, every second
  gpubind watch --match 'train\.py' --interval 5 --json     JSON lines for a log
  gpubind watch --once                                    every GPU process, one interval)");
}

// The trees the samples read: / on the live system, else the recorded sequence.
Result<std::vector<std::unique_ptr<sys::FsRoot>>> open_roots(const std::vector<std::string>& roots) {
  std::vector<std::unique_ptr<sys::FsRoot>> opened;
  for (const std::string& r : roots.empty() ? std::vector<std::string>{"/"} : roots) {
    auto root = sys::open_fsroot(r);
    if (!root) return root.error();
    opened.push_back(std::move(*root));
  }
  return opened;
}

// /metrics and /healthz on --listen's address, serving an empty exposition until the first
// interval; none without --listen.
Result<std::unique_ptr<sys::MetricsEndpoint>> start_endpoint(const std::string& listen, const std::string& node,
                                                             const topo::Topology& t) {
  if (listen.empty()) return std::unique_ptr<sys::MetricsEndpoint>();
  auto where = sys::parse_listen_address(listen);
  if (!where) return where.error();
  auto e = sys::MetricsEndpoint::start(where->first, where->second);
  if (!e) return e.error();
  (*e)->publish(render::metrics_text({node, &t, nullptr, nullptr, 0}));
  return std::move(*e);
}

// Each interval to stdout (on a terminal the latest replaces the one before, as top does; into a
// pipe or a file every interval is appended), /metrics and the --textfile.
class Outputs final : public watch::Sink {
 public:
  Outputs(const WatchFlags& f, std::string node, const topo::Topology& t, sys::MetricsEndpoint* endpoint)
      : m_f(f), m_node(std::move(node)), m_topo(t), m_endpoint(endpoint),
        m_redraw(!f.json && !f.no_tty && f.roots.empty() && sys::stdout_is_terminal()) {}

  void sampled(const watch::Taken& t, unsigned index) override {
    for (const Error& e : t.errors) fail(e);
    print_warnings(t.notes, m_f.quiet);
    if (index == 0 && t.snapshot.processes.empty()) std::fprintf(stderr, "gpubind: watch: no process matches yet; watching for one\n");
  }

  Status interval(const watch::Interval& iv, const watch::Watcher& watcher, double cost_seconds) override {
    std::string out = m_f.summary_pieces ? std::string()  // only the summary goes back through srun
                      : m_f.json         ? render::json_line(render::interval_json(iv, m_node, sys::utc_timestamp()))
                                         : render::interval_text(iv) + "\n";
    if (m_redraw) {
      char head[160];
      std::snprintf(head, sizeof head, "\x1b[H\x1b[2Jgpubind watch on %s, every %g s (Ctrl-C stops)\n\n", one_line(m_node).c_str(),
                    m_f.schedule.interval);
      out = head + out;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    if (m_f.textfile.empty() && !m_endpoint) return Ok{};
    watch::Summary so_far = watcher.summary();
    render::MetricsInput in{m_node, &m_topo, &so_far, &iv, cost_seconds};
    if (enforcer) {
      in.repins = &enforcer->totals();
      in.enforce_mode = enforcer->acts() ? "enforce" : "report";
    }
    std::string metrics = render::metrics_text(in);
    if (m_endpoint) m_endpoint->publish(metrics);
    if (m_f.textfile.empty()) return Ok{};
    if (Status s = sys::replace_file(m_f.textfile, metrics); !s) return Error{"--textfile", s.error().message()};
    return Ok{};
  }

  const rebind::Enforcer* enforcer = nullptr;  // --enforce: its counts go into the metrics

 private:
  const WatchFlags& m_f;
  std::string m_node;
  const topo::Topology& m_topo;
  sys::MetricsEndpoint* m_endpoint;
  bool m_redraw;
};

// gpubind.conf's off-switch (`binding = off`), read again at every sample: an operator who turns
// binding off during an incident expects gpubind to stop moving threads on the node at once, and
// to be told so. Each change is said once; a file that cannot be read keeps the last state.
class OffSwitch {
 public:
  explicit OffSwitch(bool quiet) : m_quiet(quiet) {}
  // Whether enforce stands back now.
  bool off() {
    auto cfg = load_config();
    if (!cfg) {
      if (!m_unreadable && !m_quiet) std::fprintf(stderr, "gpubind: warning: enforce: %s: kept %s\n", one_line(cfg.error().message()).c_str(), m_off ? "standing back" : "enforcing");
      m_unreadable = true;
      return m_off;
    }
    m_unreadable = false;
    bool now = !cfg->binding;
    if (now != m_off && !m_quiet)
      std::fprintf(stderr, now ? "gpubind: note: enforce: binding = off in %s: standing back, no thread is moved (the watch goes on)\n"
                               : "gpubind: note: enforce: binding is on again in %s: enforcing\n",
                   cfg->path.empty() ? bind::kDefaultConfigPath : cfg->path.c_str());
    m_off = now;
    return m_off;
  }

 private:
  bool m_quiet, m_off = false, m_unreadable = false;
};

// --enforce: after each sample, rebind's round (the threads of its ranks that drifted off their
// CPUs put back, or reported), each action said in one line (a JSON line on stdout with --json,
// else on stderr); the rest goes to the outputs. No round while the off-switch is off.
class Enforcing final : public watch::Sink {
 public:
  Enforcing(Outputs& out, rebind::Enforcer& e, const topo::Topology& t, const sys::FsRoot& root, const WatchFlags& f, std::string node)
      : m_out(out), m_e(e), m_topo(t), m_root(root), m_json(f.json), m_quiet(f.quiet), m_node(std::move(node)), m_mover(sys::real_task_mover()),
        m_switch(f.quiet) {
    m_out.enforcer = &m_e;
  }

  void sampled(const watch::Taken& t, unsigned index) override {
    m_out.sampled(t, index);
    if (m_switch.off()) return;
    rebind::EnforceRound round = rebind::enforce_round(m_e, m_topo, m_root, t.snapshot.processes, t.snapshot.t, *m_mover);
    print_warnings(round.notes, m_quiet);
    for (const rebind::Repin& r : round.repins) {
      if (m_json) {
        std::string line = render::json_line(render::repin_json(r, m_node, sys::utc_timestamp()));
        std::fwrite(line.data(), 1, line.size(), stdout);
      } else {
        std::fprintf(stderr, "gpubind: enforce: %s\n", render::repin_text(r).c_str());
      }
    }
    std::fflush(stdout);
  }

  Status interval(const watch::Interval& iv, const watch::Watcher& watcher, double cost_seconds) override {
    return m_out.interval(iv, watcher, cost_seconds);
  }

 private:
  Outputs& m_out;
  rebind::Enforcer& m_e;
  const topo::Topology& m_topo;
  const sys::FsRoot& m_root;
  bool m_json, m_quiet;
  std::string m_node;
  std::unique_ptr<sys::TaskMover> m_mover;
  OffSwitch m_switch;
};

// GPU utilization and contexts from NVML and ROCm SMI, on the live system, for the vendors it has;
// a library missing (or failing) is one note, and the rest works. The libraries' UUIDs go into the
// topology: the UUID label that joins dcgm-exporter's series. Where they disagree with it is
// `gpubind topo`'s to say, not each watch's.
discover::GpuRuntimes use_gpu_runtimes(topo::Topology& t, bool quiet) {
  discover::GpuRuntimes runtimes = discover::open_gpu_runtimes(t, "GPU utilization unknown");
  print_warnings(runtimes.notes, quiet);
  discover::adopt_runtime_view(t, runtimes);
  return runtimes;
}

// --slurm-job: each node watches the job's tasks for the whole --duration or --count, then srun
// returns and their summaries are merged into one table (--json: one object).
int watch_job(const WatchFlags& f) {
  if (!f.schedule.count && f.schedule.duration == 0)
    return fail(Error{"--slurm-job " + f.slurm_job, "needs --duration or --count: the nodes' summaries are merged when they end",
                      ErrorKind::usage});
  if (!f.roots.empty() || f.which.any() || !f.slurm_node.empty() || !f.listen.empty() || !f.textfile.empty() || !f.summary_file.empty() ||
      !f.enforce.empty())
    return fail(Error{"--slurm-job " + f.slurm_job, "selects the job's tasks on every node by itself: --root, --pid, --self, --all-gpu-procs, "
                                                    "--children-of, --match, --slurm-node, --listen, --textfile, --summary and --enforce "
                                                    "do not combine with it", ErrorKind::usage});
  auto number = [](double v) { char b[32]; std::snprintf(b, sizeof b, "%g", v); return std::string(b); };
  std::vector<std::string> pass = {"--summary-pieces",    "--no-tty",
                                   "--interval",          number(f.schedule.interval),
                                   "--mem-every",         std::to_string(f.mem_every),
                                   "--max-migrations",    number(f.th.migrations_per_second),
                                   "--max-cross-numa",    number(f.th.cross_numa),
                                   "--max-remote-memory", number(f.th.remote_memory),
                                   "--max-imbalance",     number(f.th.imbalance),
                                   "--max-runnable",      number(f.th.oversubscribed),
                                   "--max-throttled",     number(f.th.throttled)};
  if (f.schedule.count) pass.insert(pass.end(), {"--count", std::to_string(*f.schedule.count)});
  if (f.schedule.duration > 0) pass.insert(pass.end(), {"--duration", number(f.schedule.duration)});
  double expected = f.schedule.duration > 0 ? f.schedule.duration : f.schedule.interval * *f.schedule.count;
  auto report = watch_slurm_job(f.slurm_job, pass, std::chrono::seconds(long(expected) + 1));
  if (!report) return fail(report.error());
  for (const std::string& e : report->errors) fail(Error{"--slurm-job " + f.slurm_job, e});
  std::string out = f.json ? render::json_line(render::job_watch_json(*report)) : render::job_watch_text(*report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!report->errors.empty()) return kExitFailure;
  return report->any_finding ? kExitCheckFindings : kExitOk;
}

// The machine watched, and --enforce's Enforcer (nullptr without it). --enforce moves threads
// by this machine's plan: its topology or an admin's copy of it (acquire_topology for binding),
// planned as rebind plans (gpubind.conf's policy, mem and reserve; the file read once for both).
struct Watched {
  topo::Topology topology;
  std::unique_ptr<rebind::Enforcer> enforcer;
};
Result<Watched> watched_machine(const WatchFlags& f) {
  bool enforce = !f.enforce.empty();
  if (enforce && !f.roots.empty())
    return Error{"--enforce", "moves this machine's processes: --root does not combine with it", ErrorKind::usage};
  std::optional<bind::Config> cfg;
  if (enforce) {
    auto read = load_config();
    if (!read) return read.error();
    cfg = std::move(*read);
  }
  auto topo = acquire_topology({.use = enforce ? TopologyUse::binding : TopologyUse::processes,
                                .flag = f.topology,
                                .root = f.roots.empty() ? "" : f.roots[0],
                                .recorded = "recorded",
                                .config = cfg ? &*cfg : nullptr,
                                .quiet = f.quiet});
  if (!topo) return topo.error();
  Watched w{std::move(*topo), nullptr};
  if (!enforce) return w;
  bind::PlanOptions po;
  bind::apply_config(*cfg, po, {});
  auto base = bind::make_request(po, w.topology, AllowedFrom::topology, {}, {});
  if (!base) return base.error();
  w.enforcer = std::make_unique<rebind::Enforcer>(
      rebind::EnforceOptions{f.enforce != "report", f.enforce_gap, rebind::Options{*base, false, false, false}});
  return w;
}

// The watch's sampling: the selection, numa_maps every --mem-every samples, each NUMA node's CPUs
// (the light probe's), GPU use and contexts from the runtimes when there are any.
watch::SamplerOptions sampler_options(const probe::Selection& sel, const WatchFlags& f, const topo::Topology& t,
                                      discover::GpuRuntimes& runtimes) {
  watch::SamplerOptions sampling{sel, f.mem_every, {}, {}, {}};
  for (const topo::NumaNode& n : t.numa_nodes)
    if (!n.cpus.empty()) sampling.numa_cpus.push_back(n.cpus);
  if (!runtimes.empty()) {
    sampling.gpu_usage = [&runtimes] { return runtimes.usage(); };
    sampling.gpu_contexts = [&runtimes] { return runtimes.processes(); };
  }
  return sampling;
}

// "--enforce" alone means --enforce=on (its value is optional; --enforce=report gives one).
std::vector<std::string> enforce_spelled(std::vector<std::string> args) {
  for (std::string& a : args) {
    if (a == "--") break;
    if (a == "--enforce") a = "--enforce=on";
  }
  return args;
}

}  // namespace

int cmd_watch(const std::vector<std::string>& args) {
  Args app(
      "Sample running processes over time and judge each interval: MIGRATING, CROSS_NUMA, CROSS_SOCKET, DRIFTED, "
      "REMOTE_MEMORY, OVERLAP, OVERSUBSCRIBED, THROTTLED, IMBALANCE (docs/cli.md has each rule).",
      "gpubind watch");
  WatchFlags f;
  add_watch_options(app, f);
  if (int rc = app.parse(enforce_spelled(args)); rc >= 0) return rc;

  if (!f.slurm_job.empty()) return watch_job(f);
  if (f.summary_pieces && f.slurm_node.empty())
    return fail(Error{"--summary-pieces", "is what watch --slurm-job asks of each node: it needs --slurm-node", ErrorKind::usage});
  // The selection is found again at every sample: ranks that start, restart or exit are followed.
  auto sel = make_selection(f.which, f.roots.empty());
  if (!sel) return fail(sel.error());
  if (!f.slurm_node.empty()) sel->slurm_job = probe::SlurmTasks{f.slurm_node, sys::env_value("SLURMD_NODENAME").value_or(""), ""};
  if (f.once) f.schedule.count = 1;
  // A recorded sequence ends with its last tree (one tree: one interval), never replays for ever.
  if (!f.schedule.count && f.schedule.duration == 0 && !f.roots.empty())
    f.schedule.count = unsigned(std::max<size_t>(f.roots.size() - 1, 1));
  auto watched = watched_machine(f);
  if (!watched) return fail(watched.error());
  topo::Topology* topo = &watched->topology;
  rebind::Enforcer* enforcer = watched->enforcer.get();
  auto opened = open_roots(f.roots);
  if (!opened) return fail(opened.error());
  std::vector<const sys::FsRoot*> tree;
  for (const auto& r : *opened) tree.push_back(r.get());
  // A recorded sequence replays on a clock that moves only by the interval.
  // Live, SIGINT, SIGTERM and SIGHUP end the watch at its next wait, with its summary and status
  // (a service's stop); made before the HTTP server's threads, which inherit the blocked mask.
  watch::StepClock replay_clock;
  auto live_clock = f.roots.empty() ? sys::InterruptibleClock::create() : std::unique_ptr<sys::InterruptibleClock>();
  if (!live_clock) return fail(live_clock.error());
  const sys::Clock& clock = *live_clock ? static_cast<const sys::Clock&>(**live_clock) : replay_clock;
  std::string node = node_name(f.node_name, sel->slurm_job ? sel->slurm_job->node : "", *topo);
  auto endpoint = start_endpoint(f.listen, node, *topo);
  if (!endpoint) return fail(endpoint.error());

  discover::GpuRuntimes runtimes;
  if (f.roots.empty()) runtimes = use_gpu_runtimes(*topo, f.quiet);
  watch::Sampler sampler(tree, clock, sampler_options(*sel, f, *topo, runtimes));
  watch::Watcher watcher(*topo, f.th);
  Outputs outputs(f, node, *topo, endpoint->get());
  std::optional<Enforcing> enforcing;
  if (enforcer) enforcing.emplace(outputs, *enforcer, *topo, *tree[0], f, node);
  watch::Outcome o = watch::run(sampler, watcher, clock, f.schedule, enforcing ? static_cast<watch::Sink&>(*enforcing) : outputs,
                                [&live_clock] { return *live_clock && (*live_clock)->stopped_by() != 0; });
  if (o.stopped) return fail(*o.stopped);
  std::string out = f.json || f.summary_pieces ? render::json_line(render::summary_json(o.summary, node, sys::utc_timestamp()))
                                               : render::summary_text(o.summary);
  if (f.summary_pieces) out = check::summary_pieces(node, out);
  std::fwrite(out.data(), 1, out.size(), stdout);
  Status kept = f.summary_file.empty() ? Status(Ok{}) : sys::replace_file(f.summary_file, render::summary_text(o.summary));
  if (!kept) return fail(Error{"--summary", kept.error().message()});
  if (!o.seen_any) return fail(Error{"watch", "no process to watch (none matched at any sample)"});
  if (o.errors) return kExitFailure;
  return o.summary.any_finding ? kExitCheckFindings : kExitOk;
}

}  // namespace gpubind::cli
