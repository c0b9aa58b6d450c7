#include "bench/runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "bench/workload.hpp"
#include "bind/apply.hpp"
#include "discover/gpu_measure.hpp"
#include "probe/probe.hpp"
#include "probe/select.hpp"
#include "sys/binder.hpp"
#include "sys/clock.hpp"
#include "sys/fsroot.hpp"
#include "sys/node_memory.hpp"
#include "sys/process.hpp"
#include "sys/shared_memory.hpp"
#include "sys/task_mover.hpp"
#include "util/strings.hpp"

namespace gpubind::bench {

namespace {

using namespace workload;

class Children {
 public:
  ~Children() {
    for (pid_t p : m_pids) {
      sys::kill_child(p);
      sys::reap_child(p, true);
    }
  }
  void add(pid_t p) { m_pids.push_back(p); }
  const std::vector<pid_t>& pids() const { return m_pids; }
  // Reaps them all (they are expected to end); returns the first that failed.
  std::optional<std::pair<size_t, sys::ChildExit>> reap_all() {
    std::optional<std::pair<size_t, sys::ChildExit>> bad;
    for (size_t i = 0; i < m_pids.size(); ++i) {
      auto e = sys::reap_child(m_pids[i], true);
      if (e && (e->signal || e->exit_code) && !bad) bad = std::make_pair(i, *e);
    }
    m_pids.clear();
    return bad;
  }

 private:
  std::vector<pid_t> m_pids;
};

std::string exit_text(const sys::ChildExit& e) {
  if (e.stopped) return "signal " + std::to_string(e.stopped) + ": a stopped rank never reaches the next step";
  return e.signal ? "killed by signal " + std::to_string(e.signal) : "exit " + std::to_string(e.exit_code);
}

// Waits until `counter` reaches `want`; an Error when a rank failed or died first.
Status wait_count(const Shared& sh, std::atomic<uint32_t>& counter, uint32_t want, Children& ranks, const char* stage) {
  for (;;) {
    if (sh.control->failed.load() > 0) return Error{"bench", std::string(sh.control->error)};
    uint32_t v = counter.load(std::memory_order_acquire);
    if (v >= want) return Ok{};
    for (size_t r = 0; r < ranks.pids().size(); ++r)
      if (auto e = sys::reap_child(ranks.pids()[r], false))
        return Error{"bench", "rank " + std::to_string(r) + (e->stopped ? " was stopped " : " ended ") + stage + " (" + exit_text(*e) + ")"};
    sys::futex_wait(counter, v, std::chrono::milliseconds(100));
  }
}

// Each thread's se.nr_migrations, read as `check` reads it.
struct Probed {
  std::map<int, uint64_t> migrations;  // by thread id
  bool migrations_known = true;
};

Result<Probed> probe_rank(const sys::FsRoot& root, pid_t pid) {
  auto ps = probe::probe_process(root, pid, {});
  if (!ps) return ps.error();
  Probed out;
  for (const probe::ThreadState& t : ps->threads) {
    if (t.migrations) out.migrations[t.tid] = *t.migrations;
    else out.migrations_known = false;
  }
  return out;
}

std::vector<unsigned> home_nodes(const topo::Topology& t, const plan::RankBinding& rb, const plan::RankBinding* closest) {
  for (const plan::GpuRef& g : rb.gpus)
    if (const topo::Gpu* gpu = topo::find_gpu(t, g.pci); gpu && gpu->numa) {
      auto nodes = topo::nodes_with_cpus(t, *gpu->numa);
      if (!nodes.empty()) return nodes;
    }
  if (closest) {
    if (!closest->mem_nodes.empty()) return closest->mem_nodes;
    std::set<unsigned> nodes;
    for (unsigned cpu : closest->cpus.ids())
      if (const topo::NumaNode* n = topo::numa_of_pu(t, cpu)) nodes.insert(n->os_index);
    return {nodes.begin(), nodes.end()};
  }
  return {};
}

// What one run of a strategy measured, added to its record (all rounds together).
void add_run(const topo::Topology& t, const plan::Plan& p, const RunShape& s, const Shared& sh,
             const std::vector<std::vector<unsigned>>& homes, const std::vector<Probed>& before,
             const std::vector<Probed>& after, double measured_s, StrategyRecord& out) {
  for (unsigned i = 0; i < s.steps; ++i) out.step_ms.push_back(double(sh.release[i + 1] - sh.release[i]) / 1e6);
  if (out.ranks.empty()) out.ranks.resize(p.ranks.size());
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    const plan::RankBinding& rb = p.ranks[r];
    RankRecord& rr = out.ranks[r];
    rr.rank = rb.local_rank;
    rr.gpu = rb.gpus.empty() ? "" : rb.gpus.front().pci;
    rr.cpus = rb.cpus;
    rr.mem_nodes = rb.mem_policy == plan::MemPolicy::none ? std::vector<unsigned>{} : rb.mem_nodes;
    rr.mem_policy = plan::to_string(rb.mem_policy);
    rr.home_nodes = homes[r];
    CpuSet home = topo::cpus_of_nodes(t, rr.home_nodes);
    rr.measured_s += measured_s;
    for (unsigned i = 0; i < s.steps; ++i) {
      double step = double(sh.release[i + 1] - sh.release[i]) / 1e9, busy = 0;
      for (unsigned th = 0; th < s.threads; ++th) {
        const StepRecord& rec = sh.record(s, unsigned(r), th, i);
        double work = double(rec.work_ns) / 1e9;
        busy = std::max(busy, work);
        rr.work_s += work;
        if (s.gpu && th == 0) {
          rr.copy_s += double(rec.copy_ms) / 1e3;
          rr.copy_bytes += s.doubles * sizeof(double);
        }
        for (int cpu : {rec.cpu_start, rec.cpu_end})
          if (cpu >= 0 && !home.empty() && !home.test(unsigned(cpu))) rr.off_home_s += work / 2;
      }
      rr.step_s += step;
      rr.busy_s += busy;
    }
    uint64_t moved = 0;
    bool known = before[r].migrations_known && after[r].migrations_known;
    for (const auto& [tid, n] : after[r].migrations)
      if (auto it = before[r].migrations.find(tid); it != before[r].migrations.end() && n >= it->second) moved += n - it->second;
    if (known) rr.migrations = rr.migrations.value_or(0) + moved;
    for (unsigned th = 0; th < s.threads; ++th) {
      rr.pages += sh.page_record(s, unsigned(r), th).pages;
      rr.remote_pages += sh.page_record(s, unsigned(r), th).remote;
    }
  }
}

// One strategy's ranks, started (confined to `confine` first when not empty), stepped and measured once;
// adds to `out`, and sets `warning` to the first warning of the ranks' binding (else empty).
Status run_once(const topo::Topology& t, const plan::Plan& p, const plan::Plan& closest, const RunShape& s,
                const bind::MachineState& m, const sys::FsRoot& root, const CpuSet& confine, StrategyRecord& out,
                std::string& warning) {
  auto mem = sys::shared_memory(Shared::bytes(s));
  if (!mem) return mem.error();
  Shared sh = Shared::in(mem->data(), s);
  Children ranks;
  std::vector<std::vector<unsigned>> homes;
  for (size_t r = 0; r < p.ranks.size(); ++r)
    homes.push_back(home_nodes(t, p.ranks[r], r < closest.ranks.size() ? &closest.ranks[r] : nullptr));
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    CpuSet home;
    for (unsigned n : homes[r]) home.set(n);
    auto pid = sys::fork_call([&] { return rank_main(s, sh, p, p.ranks[r], m, home, confine); });
    if (!pid) return pid.error();
    ranks.add(*pid);
  }
  uint32_t parties = s.ranks * s.threads;
  if (auto st = wait_count(sh, sh.control->ready, parties, ranks, "before its first step"); !st) return st;

  std::vector<Probed> before;
  for (pid_t pid : ranks.pids()) {
    auto pr = probe_rank(root, pid);
    if (!pr) return pr.error();
    before.push_back(std::move(*pr));
  }
  int64_t start = now_ns();
  sh.control->phase.store(1, std::memory_order_release);
  sys::futex_wake_all(sh.control->phase);
  if (auto st = wait_count(sh, sh.control->done, parties, ranks, "while stepping"); !st) return st;
  int64_t end = now_ns();
  std::vector<Probed> after;
  for (pid_t pid : ranks.pids()) {
    auto pr = probe_rank(root, pid);
    if (!pr) return pr.error();
    after.push_back(std::move(*pr));
  }
  sh.control->phase.store(2, std::memory_order_release);
  sys::futex_wake_all(sh.control->phase);
  if (auto bad = ranks.reap_all())
    return Error{"bench", "rank " + std::to_string(bad->first) + " failed (" + exit_text(bad->second) + ")"};

  add_run(t, p, s, sh, homes, before, after, double(end - start) / 1e9, out);
  warning = sh.control->warned.load() ? std::string(sh.control->warning) : "";
  return Ok{};
}

// One strategy under one noise placement: what one entry of the record runs.
struct Entry {
  size_t spec = 0;  // in RunOptions::strategies
  NoisePlacement noise = NoisePlacement::roaming;
  plan::Plan plan;
};

// `base` for a placement: under reserved, the ranks planned around the housekeeping CPUs.
plan::Request placed(const plan::Request& base, NoisePlacement noise, const CpuSet& reserved) {
  plan::Request r = base;
  if (noise == NoisePlacement::reserved) r.reserve |= reserved;
  return r;
}

// Every strategy planned under every placement (placement-major), its policy replacing base's; an
// Error of kind usage when one cannot be planned, or with `gpu` when a rank has no NVIDIA or AMD
// GPU to copy to.
Result<std::vector<Entry>> plan_entries(const topo::Topology& t, const plan::Request& base, const RunOptions& o, const CpuSet& reserved) {
  std::vector<Entry> entries;
  for (NoisePlacement noise : o.placements)
    for (size_t i = 0; i < o.strategies.size(); ++i) {
      const StrategySpec& s = o.strategies[i];
      plan::Request r = placed(base, noise, reserved);
      r.policy = s.policy;
      auto p = plan::make_plan(t, r);
      std::string what = "strategy " + s.name + (o.placements.size() > 1 ? std::string(" (noise ") + to_string(noise) + ")" : "");
      if (!p) return Error{what, p.error().message(), p.error().kind};
      if (o.gpu)
        for (const plan::RankBinding& rb : p->ranks)
          if (rb.gpus.empty() || (rb.gpus.front().vendor != topo::Vendor::nvidia && rb.gpus.front().vendor != topo::Vendor::amd))
            return Error{"--gpu",
                         "rank " + std::to_string(rb.local_rank) + " has no NVIDIA or AMD GPU to copy to" +
                             (t.gpus.empty() ? " (this machine has no GPU)" : ""),
                         ErrorKind::usage};
      entries.push_back({i, noise, std::move(*p)});
    }
  return entries;
}

}  // namespace

uint64_t default_buffer_bytes(const topo::Topology& t, unsigned total_threads) {
  uint64_t l3 = 0;
  for (const topo::L3Domain& d : t.l3_domains) l3 += d.size_bytes;
  if (l3 == 0) return 4 * kMiB;
  uint64_t share = l3 / 2 / std::max(1u, total_threads);
  return std::clamp<uint64_t>(share / kMiB * kMiB, kMiB, 8 * kMiB);
}

MachineInfo machine_info(const topo::Topology& t, const plan::Request& r) {
  MachineInfo m;
  m.name = t.hostname.empty() ? t.origin : t.hostname;
  m.packages = unsigned(t.packages.size());
  for (const topo::NumaNode& n : t.numa_nodes) (n.cpus.empty() ? m.memory_nodes : m.numa_nodes)++;
  m.cpus = t.cpus.count();
  m.allowed_cpus = plan::allowed_cpus(t, r).count();
  m.gpus = unsigned(t.gpus.size());
  return m;
}

LoadWatch::LoadWatch(const sys::FsRoot& root) : m_root(root) {
  if (auto la = root.read("proc/loadavg")) m_load = parse_load_average(*la);
  if (auto st = root.read("proc/stat")) m_ticks = parse_cpu_ticks(*st);
  int self = sys::current_pid();
  m_sampler = std::thread([this, self] {
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_wake.wait_for(lock, std::chrono::seconds(1), [this] { return m_stop; })) {
      lock.unlock();
      unsigned n = probe::runnable_threads_outside(m_root, self);
      lock.lock();
      m_runnable.push_back(n);
    }
  });
}

LoadWatch::~LoadWatch() { stop(); }

void LoadWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  if (m_sampler.joinable()) m_sampler.join();
}

void LoadWatch::finish(MachineInfo& m) {
  stop();
  m_runnable.push_back(probe::runnable_threads_outside(m_root, sys::current_pid()));
  double sum = 0;
  for (unsigned n : m_runnable) sum += n;
  m.runnable_outside_mean = sum / double(m_runnable.size());
  m.runnable_outside_max = *std::max_element(m_runnable.begin(), m_runnable.end());
  m.load_before = m_load;
  if (auto st = m_root.read("proc/stat"); st && m_ticks)
    if (auto after = parse_cpu_ticks(*st); after && after->total > m_ticks->total)
      m.steal_share = double(after->steal - std::min(after->steal, m_ticks->steal)) / double(after->total - m_ticks->total);
}

Result<Record> run_bench(const topo::Topology& t, const plan::Request& base, const RunOptions& o) {
  if (o.strategies.empty()) return Error{"--strategies", "no strategy to run", ErrorKind::usage};
  if (o.placements.empty()) return Error{"--noise-on", "no noise placement to run", ErrorKind::usage};
  CpuSet reserved;
  if (std::find(o.placements.begin(), o.placements.end(), NoisePlacement::reserved) != o.placements.end()) {
    if (o.noise == 0)
      return Error{"--noise-on reserved", "places the noise processes: give --noise N as well", ErrorKind::usage};
    reserved = housekeeping_cpus(t, base);
    if (reserved.empty())
      return Error{"--noise-on reserved", "no allowed CPU to keep for the noise (name them with --reserve)", ErrorKind::usage};
  }
  auto entries = plan_entries(t, base, o, reserved);
  if (!entries) return entries.error();
  // closest under each placement: every rank's home node, and the default thread count.
  std::map<NoisePlacement, plan::Plan> closest;
  for (NoisePlacement noise : o.placements) {
    plan::Request cr = placed(base, noise, reserved);
    cr.policy = plan::Policy::closest;
    auto p = plan::make_plan(t, cr);
    if (!p) return Error{p.error().what, p.error().why, ErrorKind::usage};
    closest.emplace(noise, std::move(*p));
  }

  Record rec;
  rec.machine = machine_info(t, base);
  Config& c = rec.config;
  c.ranks = unsigned(closest.begin()->second.ranks.size());
  unsigned min_cores = ~0u;
  for (const auto& [noise, p] : closest) min_cores = std::min(min_cores, p.score.min_cores);
  for (const Entry& e : *entries)
    if (e.plan.ranks.size() != c.ranks) return Error{"bench", "the strategies plan different numbers of ranks"};
  c.threads = o.threads ? o.threads : std::clamp(min_cores, 1u, 8u);
  c.steps = o.steps;
  c.rounds = std::clamp(o.rounds, 1u, std::max(1u, o.steps));
  c.warmup = o.warmup;
  c.noise = o.noise;
  c.reserved = reserved;
  c.buffer_bytes = o.buffer_bytes ? o.buffer_bytes : default_buffer_bytes(t, c.ranks * c.threads);
  c.compute = o.compute;
  c.gpu = o.gpu;
  rec.warnings = closest.begin()->second.warnings;
  // Every rank's threads hold a buffer of buffer_bytes x batch: more than the machine's memory is
  // refused here, not found by the ranks as an allocation that fails or an OOM kill.
  uint64_t machine_memory = 0, max_batch = 1;
  for (const topo::NumaNode& n : t.numa_nodes) machine_memory += n.memory_bytes;
  for (const StrategySpec& s : o.strategies) max_batch = std::max<uint64_t>(max_batch, s.batch);
  long double footprint = (long double)c.ranks * c.threads * c.buffer_bytes * max_batch;
  if (machine_memory && footprint > 0.9L * machine_memory)
    return Error{"--buffer-mib " + std::to_string(c.buffer_bytes >> 20),
                 "the ranks' buffers would take " + human_bytes(uint64_t(std::min<long double>(footprint, 1e19L))) + " (" +
                     std::to_string(c.ranks) + " ranks x " + std::to_string(c.threads) + " threads x batch " + std::to_string(max_batch) +
                     "), more than 90% of the machine's " + human_bytes(machine_memory),
                 ErrorKind::usage};
  // A run keeps every thread's step records in shared memory: bounded, so a request too big is
  // refused before anything starts.
  uint64_t record_bytes = uint64_t(c.ranks) * c.threads * ((c.steps + c.rounds - 1) / c.rounds) * sizeof(StepRecord);
  if (record_bytes > (1ull << 30))
    return Error{"--steps " + std::to_string(c.steps),
                 "one round's step records would take " + human_bytes(record_bytes) +
                     " (at most 1 GiB: fewer steps, more --rounds, or fewer threads)",
                 ErrorKind::usage};

  auto m = bind::live_machine_state();
  if (!m) return m.error();
  auto root = sys::open_fsroot("/");
  if (!root) return root.error();

  // Other load before the ranks start, and the CPU time stolen from this VM while they run.
  LoadWatch load(**root);
  for (const Entry& e : *entries) {
    const StrategySpec& s = o.strategies[e.spec];
    rec.strategies.push_back({s.name, s.policy, s.batch, {}, {}, e.noise});
  }
  rec.machine.load_before = load.load_before();
  if (o.notice)
    for (const std::string& n : node_notes(rec)) o.notice(n);
  Children noise;
  for (unsigned i = 0; i < o.noise; ++i) {
    auto pid = sys::fork_call([i]() -> int { noise_main(i); });
    if (!pid) return pid.error();
    noise.add(*pid);
  }
  auto mover = sys::real_task_mover();
  CpuSet everywhere = plan::allowed_cpus(t, base);
  auto order = round_order(entries->size(), c.rounds);
  auto steps = steps_per_round(c.steps, c.rounds);
  for (unsigned round = 0; round < c.rounds; ++round) {
    if (steps[round] == 0) continue;
    for (size_t i : order[round]) {
      const Entry& e = (*entries)[i];
      const StrategySpec& spec = o.strategies[e.spec];
      // The noise goes where this placement keeps it (each is one thread: its PID is its TID).
      for (pid_t pid : noise.pids())
        if (auto st = mover->set_affinity(pid, e.noise == NoisePlacement::reserved ? reserved : everywhere); !st)
          return Error{"noise process " + std::to_string(pid), st.error().message()};
      RunShape shape{c.ranks, c.threads, steps[round], c.warmup, spec.batch, c.compute,
                     size_t(c.buffer_bytes * spec.batch / sizeof(double)), o.gpu};
      CpuSet confine = e.noise == NoisePlacement::reserved ? everywhere - reserved : CpuSet{};
      std::string warning;
      if (auto st = run_once(t, e.plan, closest.at(e.noise), shape, *m, **root, confine, rec.strategies[i], warning); !st)
        return Error{st.error().what + ": " + spec.name, st.error().why};
      if (!warning.empty()) keep_warning(rec.warnings, ranks_warning(warning, "ranks"), o.warning);
      if (o.progress) o.progress(spec.name, round);
    }
  }
  load.finish(rec.machine);
  return rec;
}

}  // namespace gpubind::bench
