#include "watch/watch.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "check/check.hpp"
#include "check/contention.hpp"
#include "util/strings.hpp"
#include "watch/rules.hpp"

namespace gpubind::watch {

namespace {

using probe::ProcessState;
using probe::ThreadState;

// A process's threads in the previous sample, by thread id; empty for a process new in this one.
using ThreadsById = std::map<int, const ThreadState*>;

ThreadsById threads_by_id(const ProcessState* p) {
  ThreadsById out;
  if (p)
    for (const ThreadState& t : p->threads) out.emplace(t.tid, &t);
  return out;
}

const ThreadState* find_thread(const ThreadsById& threads, int tid) {
  auto it = threads.find(tid);
  return it == threads.end() ? nullptr : it->second;
}

// The CPUs of the packages holding these CPUs.
CpuSet packages_of(const topo::Topology& t, const CpuSet& cpus) {
  CpuSet out;
  for (const topo::Package& p : t.packages)
    if (p.cpus.intersects(cpus)) out |= p.cpus;
  return out;
}

// Where each thread ran in the interval, weighted by the CPU time it used in it: where it last ran
// or, when the light probe did not read that again (a thread confined to one NUMA node), outside
// a domain when its allowed CPUs are, inside when they lie within it.
struct Placement {
  double weight = 0, off_node = 0, off_package = 0;
  bool by_time = true;  // every weight is CPU time (false: some thread counted once, no CPU time)
  std::optional<double> share(double off) const { return weight > 0 ? std::optional<double>(off / weight) : std::nullopt; }
};

Placement placement(const ThreadsById& prev, const ProcessState& cur, const CpuSet& node_cpus, const CpuSet& package_cpus) {
  Placement p;
  for (const ThreadState& t : cur.threads) {
    if (!t.last_cpu) continue;
    const ThreadState* before = find_thread(prev, t.tid);
    double w;
    if (t.run_ns && before && before->run_ns) {
      if (*t.run_ns <= *before->run_ns) continue;  // idle in the interval (or a reused thread id)
      w = double(*t.run_ns - *before->run_ns) / 1e9;
    } else if (!t.run_ns) {
      w = 1;  // no CPU time from this kernel: every thread counts once
      p.by_time = false;
    } else {
      continue;  // new in this interval: no delta yet
    }
    auto outside = [&](const CpuSet& domain) {
      if (t.last_cpu_stale && !t.cpus_allowed.empty() && t.cpus_allowed.is_subset_of(domain)) return false;
      if (t.last_cpu_stale && !t.cpus_allowed.empty() && !t.cpus_allowed.intersects(domain)) return true;
      return !domain.test(*t.last_cpu);
    };
    p.weight += w;
    if (outside(node_cpus)) p.off_node += w;
    if (outside(package_cpus)) p.off_package += w;
  }
  return p;
}

}  // namespace

const char* to_string(Finding f) {
  switch (f) {
    case Finding::migrating: return "MIGRATING";
    case Finding::cross_numa: return "CROSS_NUMA";
    case Finding::cross_socket: return "CROSS_SOCKET";
    case Finding::drifted: return "DRIFTED";
    case Finding::remote_memory: return "REMOTE_MEMORY";
    case Finding::overlap: return "OVERLAP";
    case Finding::oversubscribed: return "OVERSUBSCRIBED";
    case Finding::throttled: return "THROTTLED";
    case Finding::imbalance: return "IMBALANCE";
  }
  return "?";
}

std::string thread_family(const std::string& comm) { return check::name_family(comm); }

uint64_t RankSummary::mask_changes() const {
  uint64_t n = 0;
  for (const auto& [thread, count] : changes_by_thread) n += count;
  return n;
}

bool RankInterval::has(Finding f) const {
  return std::any_of(findings.begin(), findings.end(), [f](const RankFinding& x) { return x.kind == f; });
}

namespace {

// A rank is a process with a GPU or a launcher's rank that was there for the whole interval; a
// launcher or a helper process is not one.
bool is_rank(const RankInterval& r) {
  return !r.started && r.holder.empty() && (!r.gpus.empty() || !r.rank.empty() || !r.local_rank.empty());
}

// One process's measures in the interval: deltas of the threads seen in both snapshots, where its
// threads ran against its GPU's node and package, its pages. `placed` gets the CPU time weighed.
RankInterval measure(const topo::Topology& t, const check::ProcessReport& pr, const ProcessState* prev_process, double seconds,
                     Placement& placed) {
  const ProcessState& cur = pr.state;
  ThreadsById prev = threads_by_id(prev_process);
  RankInterval r;
  r.pid = cur.pid;
  r.comm = cur.comm;
  r.rank = check::global_rank_of(cur);
  r.local_rank = check::local_rank_of(cur);
  r.job = check::job_of(cur);
  auto env = [&cur](const char* name) {
    auto it = cur.env.find(name);
    return it == cur.env.end() ? std::string() : it->second;
  };
  r.slurm_job = env("SLURM_JOB_ID");
  r.slurm_step = env("SLURM_STEP_ID");
  r.run_id = env("TORCHELASTIC_RUN_ID");
  r.kube = cur.kube;
  r.gpus = pr.gpus;
  r.cpus = cur.cpus_allowed;
  r.holder = !pr.apart.empty() ? pr.apart : !pr.wrapper.empty() ? pr.wrapper : pr.holder;  // listed, not judged, any way
  if (!r.holder.empty()) r.holder_verdict = check::verdicts_of(pr);
  r.threads = unsigned(cur.threads.size());
  r.started = prev_process == nullptr;
  for (const ThreadState& th : cur.threads) {
    const ThreadState* before = find_thread(prev, th.tid);
    if (!before) continue;
    if (before->cpus_allowed != th.cpus_allowed) r.mask_changes.push_back({th.tid, th.comm, before->cpus_allowed, th.cpus_allowed});
    if (th.migrations && before->migrations && *th.migrations >= *before->migrations) r.migrations += *th.migrations - *before->migrations;
    if (th.switches && before->switches && *th.switches >= *before->switches) r.context_switches += *th.switches - *before->switches;
    if (th.run_ns && before->run_ns && *th.run_ns >= *before->run_ns) {
      double ran = double(*th.run_ns - *before->run_ns) / 1e9;
      r.cpu_seconds += ran;
      r.busy_threads += ran >= kBusyThread * seconds;
    }
    if (th.run_delay_ns && before->run_delay_ns && *th.run_delay_ns >= *before->run_delay_ns)
      r.run_delay_seconds = r.run_delay_seconds.value_or(0) + double(*th.run_delay_ns - *before->run_delay_ns) / 1e9;
  }
  r.ppid = cur.ppid;
  r.quota = cur.cpu_quota;
  if (const probe::CpuQuota* was = prev_process && prev_process->cpu_quota ? &*prev_process->cpu_quota : nullptr;
      was && r.quota && was->cgroup == r.quota->cgroup && r.quota->periods >= was->periods &&
      r.quota->throttled_periods >= was->throttled_periods && r.quota->throttled_ns >= was->throttled_ns) {
    r.periods = r.quota->periods - was->periods;
    r.throttled_periods = r.quota->throttled_periods - was->throttled_periods;
    r.throttled_seconds = double(r.quota->throttled_ns - was->throttled_ns) / 1e9;
  }
  r.migrations_per_second = double(r.migrations) / seconds;
  r.context_switches_per_second = double(r.context_switches) / seconds;
  if (!pr.gpu_local || pr.gpu_local->empty()) return r;
  placed = placement(prev, cur, *pr.gpu_local, packages_of(t, *pr.gpu_local));
  r.cross_numa = placed.share(placed.off_node);
  r.cross_socket = placed.share(placed.off_package);
  if (placed.by_time) {
    r.cross_numa_seconds = placed.off_node;
    r.cross_socket_seconds = placed.off_package;
  }
  if (cur.pages_per_node && !pr.gpu_nodes.empty()) {
    uint64_t total = 0, remote = 0;
    for (const auto& [node, pages] : *cur.pages_per_node) {
      total += pages;
      if (std::find(pr.gpu_nodes.begin(), pr.gpu_nodes.end(), node) == pr.gpu_nodes.end()) remote += pages;
    }
    if (total) r.remote_memory = double(remote) / double(total);
  }
  return r;
}

// check's findings of the process, as evidence for watch's DRIFTED and OVERLAP.
void add_check_findings(const check::ProcessReport& pr, rules::RankEvidence& e) {
  for (const check::Finding& f : pr.findings) {
    if (f.verdict == check::Verdict::drifted) e.drifted_from_intent = true;
    if (f.verdict == check::Verdict::overlap) e.overlaps.push_back(f.reason);
  }
}

// Each rank's GPUs' mean utilization, where the runtime library gives it, and the utilization of
// the GPUs the ranks hold, by PCI address.
std::vector<std::pair<std::string, double>> gpu_utilization(std::vector<RankInterval>& ranks, const std::vector<probe::GpuUsage>& gpus) {
  std::map<std::string, double> util, held;
  for (const probe::GpuUsage& g : gpus)
    if (g.utilization) util[g.pci] = *g.utilization;
  for (RankInterval& r : ranks) {
    double sum = 0;
    unsigned known = 0;
    for (const std::string& pci : r.gpus)
      if (auto it = util.find(pci); it != util.end()) {
        sum += it->second;
        ++known;
        if (is_rank(r)) held[pci] = it->second;
      }
    if (known) r.gpu_utilization = sum / known;
  }
  return {held.begin(), held.end()};
}

}  // namespace

std::optional<Interval> Watcher::observe(Snapshot s) {
  if (!m_prev) {
    m_first_t = s.t;
    for (const ProcessState& p : s.processes)
      for (const ThreadState& t : p.threads) m_first_allowed.emplace(std::pair{p.pid, t.tid}, t.cpus_allowed);
    m_prev = std::move(s);
    return std::nullopt;
  }
  Interval iv;
  iv.index = ++m_intervals;
  iv.start = m_prev->t;
  iv.end = s.t;
  double seconds = std::max(iv.end - iv.start, 1e-9);
  // check's judgement of this snapshot: GPU locality, intent (GPUBIND_*), overlap. The states move
  // into the report and back into the snapshot at the end (no copy of every thread's state).
  check::Report judged = check::judge(m_topo, std::move(s.processes), {}, {s.contexts_known});
  note_exited(judged, iv);
  std::set<std::pair<int, int>> present;  // (pid, tid) of every thread in this sample
  std::map<int, const ProcessState*> prev_of;  // each process's state in the sample before
  for (const ProcessState& q : m_prev->processes) prev_of[q.pid] = &q;
  for (const check::ProcessReport& pr : judged.processes) {
    auto at = prev_of.find(pr.state.pid);
    const ProcessState* prev_process = at == prev_of.end() ? nullptr : at->second;
    Placement placed;
    iv.ranks.push_back(measure(m_topo, pr, prev_process, seconds, placed));
    Totals& tot = m_totals[pr.state.pid];
    if (tot.summary.exited) {  // the PID was reused by a new process: its totals start afresh
      tot = Totals{};
      std::erase(m_exited, pr.state.pid);
    }
    tot.weight += placed.weight;
    tot.off_weight += placed.off_node;
  }
  std::map<size_t, std::string> pools = judge_load(judged, iv.ranks, seconds, prev_of);
  for (size_t i = 0; i < judged.processes.size(); ++i) {
    auto it = pools.find(i);
    judge_rank(judged.processes[i], iv.ranks[i], iv.end, seconds, it == pools.end() ? "" : it->second, present);
  }
  // Threads that ended take their first-seen CPUs with them: a long watch over short-lived
  // threads stays small.
  std::erase_if(m_first_allowed, [&](const auto& e) { return !present.count(e.first); });

  iv.gpus = s.gpus;
  judge_node(iv, seconds);
  add_totals(iv);
  std::stable_sort(iv.ranks.begin(), iv.ranks.end(), [](const RankInterval& a, const RankInterval& b) {
    if (a.findings.size() != b.findings.size()) return a.findings.size() > b.findings.size();
    return a.cross_numa.value_or(0) > b.cross_numa.value_or(0);
  });
  s.processes.clear();  // moved from above
  for (check::ProcessReport& pr : judged.processes) s.processes.push_back(std::move(pr.state));
  m_prev = std::move(s);
  return iv;
}

void Watcher::note_exited(const check::Report& judged, Interval& iv) {
  for (const ProcessState& p : m_prev->processes)
    if (std::none_of(judged.processes.begin(), judged.processes.end(),
                     [&](const check::ProcessReport& q) { return q.state.pid == p.pid; })) {
      iv.exited.push_back(p.pid);
      if (auto it = m_totals.find(p.pid); it != m_totals.end() && !it->second.summary.exited) {
        it->second.summary.exited = true;
        m_exited.push_back(p.pid);
      }
    }
  while (m_exited.size() > kMaxExitedInSummary) {
    auto it = m_totals.find(m_exited.front());
    m_exited.pop_front();
    if (it == m_totals.end()) continue;
    ++m_dropped;
    m_dropped_with_findings += !it->second.summary.seen.empty();
    m_totals.erase(it);
  }
}

std::map<size_t, std::string> Watcher::judge_load(const check::Report& judged, std::vector<RankInterval>& ranks, double seconds,
                                                  const std::map<int, const ProcessState*>& prev_of) {
  std::map<int, int> parent_of;
  for (const RankInterval& r : ranks) parent_of[r.pid] = r.ppid;
  // Each process's mean runnable threads over its window.
  std::vector<std::optional<Load>> window(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankInterval& r = ranks[i];
    Totals& tot = m_totals[r.pid];
    if (r.started || !r.run_delay_seconds) continue;
    tot.window.push_back({seconds, r.cpu_seconds, *r.run_delay_seconds, r.busy_threads * seconds});
    while (tot.window.size() > kLoadWindow) tot.window.pop_front();
    Load sum;
    for (const Load& l : tot.window) {
      sum.seconds += l.seconds;
      sum.cpu += l.cpu;
      sum.delay += l.delay;
      sum.busy += l.busy;
    }
    window[i] = sum;
    r.runnable_intervals = unsigned(tot.window.size());
    r.runnable = (sum.cpu + sum.delay) / std::max(sum.seconds, 1e-9);
  }
  std::map<size_t, std::string> pools;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankInterval& r = ranks[i];
    if (!window[i]) continue;
    Load pool;
    std::vector<size_t> members;
    for (size_t j = 0; j < ranks.size(); ++j) {
      if (!window[j] || !check::descends_from(ranks[j].pid, r.pid, parent_of)) continue;
      members.push_back(j);
      pool.cpu += window[j]->cpu;
      pool.delay += window[j]->delay;
      pool.busy += window[j]->busy / std::max(window[j]->seconds, 1e-9);
    }
    double span = std::max(window[i]->seconds, 1e-9);
    r.pool_runnable = (pool.cpu + pool.delay) / span;
    r.pool_cpus_used = pool.cpu / span;
    r.pool_busy_threads = pool.busy;
    if (!rules::oversubscribed_pool(r, m_th)) continue;
    // Over the threshold: which threads and children ran in the interval, by name.
    std::map<std::pair<std::string, bool>, unsigned> busy_names;
    for (size_t j : members) {
      const ProcessState& cur = judged.processes[j].state;
      auto at = prev_of.find(cur.pid);
      ThreadsById before = threads_by_id(at == prev_of.end() ? nullptr : at->second);
      unsigned ran = 0;
      for (const ThreadState& t : cur.threads) {
        const ThreadState* b = find_thread(before, t.tid);
        if (!b || !t.run_ns || !b->run_ns || *t.run_ns <= *b->run_ns) continue;
        ++ran;
        if (j == i) ++busy_names[{thread_family(t.comm), false}];
      }
      if (j != i && ran) ++busy_names[{thread_family(cur.comm), true}];
    }
    std::vector<check::BusyName> names;
    for (const auto& [key, n] : busy_names) names.push_back({key.first, n, key.second});
    const ProcessState& me = judged.processes[i].state;
    pools[i] = check::thread_pools(names, me.threads.empty() ? me.comm : thread_family(me.threads.front().comm), me.env);
  }
  return pools;
}

void Watcher::judge_rank(const check::ProcessReport& pr, RankInterval& r, double now, double seconds, const std::string& pools,
                         std::set<std::pair<int, int>>& present) {
  const ProcessState& cur = pr.state;
  Totals& tot = m_totals[cur.pid];
  rules::RankEvidence e{r, seconds, std::nullopt, pr.gpu_nodes, {}, std::nullopt, false, {}, pools, &cur.env};
  if (pr.gpu_local && !pr.gpu_local->empty()) e.gpu_cpus = pr.gpu_local;
  for (const ThreadState& t : cur.threads) {
    present.emplace(cur.pid, t.tid);
    auto [first, is_new] = m_first_allowed.emplace(std::pair{cur.pid, t.tid}, t.cpus_allowed);
    if (!is_new && first->second != t.cpus_allowed) e.drifted_threads.push_back({t.tid, t.comm, first->second, t.cpus_allowed});
  }
  if (!r.mask_changes.empty()) tot.last_change = now;
  if (tot.last_change) e.since_change = now - *tot.last_change;
  add_check_findings(pr, e);
  if (!r.holder.empty()) return;  // a GPU daemon: listed, not judged
  for (rules::RankRule rule : rules::kRankRules)
    if (auto f = rule(e, m_th)) r.findings.push_back(std::move(*f));
}

void Watcher::judge_node(Interval& iv, double seconds) const {
  std::vector<double> cpu;
  for (const RankInterval& r : iv.ranks)
    if (is_rank(r)) cpu.push_back(r.cpu_seconds);
  std::optional<rules::CpuSpread> cpu_spread = rules::cpu_spread(cpu, seconds);
  if (cpu_spread) {
    iv.imbalance = cpu_spread->imbalance;
    iv.cpu_cv = cpu_spread->cv;
  }
  std::optional<rules::GpuSpread> gpu_spread = rules::gpu_spread(gpu_utilization(iv.ranks, iv.gpus));
  if (gpu_spread) iv.gpu_imbalance = gpu_spread->imbalance;
  if (auto reason = rules::imbalance(cpu_spread, gpu_spread, m_th))
    for (RankInterval& r : iv.ranks)
      if (is_rank(r)) r.findings.push_back({Finding::imbalance, *reason});
}

void Watcher::add_totals(const Interval& iv) {
  for (const RankInterval& r : iv.ranks) {
    Totals& tot = m_totals[r.pid];
    RankSummary& sum = tot.summary;
    static_cast<RankIdentity&>(sum) = r;
    ++sum.intervals;
    sum.migrations += r.migrations;
    sum.context_switches += r.context_switches;
    sum.cpu_seconds += r.cpu_seconds;
    auto add = [](std::optional<double>& total, const std::optional<double>& v) {
      if (v) total = total.value_or(0) + *v;
    };
    add(sum.cross_numa_seconds, r.cross_numa_seconds);
    add(sum.cross_socket_seconds, r.cross_socket_seconds);
    add(sum.run_delay_seconds, r.run_delay_seconds);
    sum.periods += r.periods;
    sum.throttled_periods += r.throttled_periods;
    sum.throttled_seconds += r.throttled_seconds;
    sum.quota = sum.quota || r.quota.has_value();
    for (const MaskChange& c : r.mask_changes) {
      std::string name = thread_family(c.thread);
      if (!sum.changes_by_thread.count(name) && sum.changes_by_thread.size() >= kMaxThreadNames) name = kOtherThreads;
      ++sum.changes_by_thread[name];
      sum.last_change = c;
    }
    if (r.remote_memory) sum.remote_memory = r.remote_memory;
    if (tot.weight > 0) sum.cross_numa = tot.off_weight / tot.weight;
    for (const RankFinding& f : r.findings)
      if (std::find(sum.seen.begin(), sum.seen.end(), f.kind) == sum.seen.end()) sum.seen.push_back(f.kind);
    std::sort(sum.seen.begin(), sum.seen.end());
    if (!r.findings.empty() && r.findings.size() > tot.worst_findings) {
      tot.worst_findings = r.findings.size();
      sum.worst_interval = iv.index;
    }
  }
}

Summary Watcher::summary() const {
  Summary s;
  s.intervals = m_intervals;
  s.seconds = m_prev ? m_prev->t - m_first_t : 0;
  for (const auto& [pid, tot] : m_totals) {
    if (tot.summary.intervals == 0) continue;
    s.ranks.push_back(tot.summary);
    s.any_finding = s.any_finding || !tot.summary.seen.empty();
  }
  s.exited_not_listed = m_dropped;
  s.exited_not_listed_with_findings = m_dropped_with_findings;
  s.any_finding = s.any_finding || m_dropped_with_findings > 0;
  return s;
}

}  // namespace gpubind::watch
