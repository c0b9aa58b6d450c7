#include "watch/watch.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "check/check.hpp"
#include "util/strings.hpp"

namespace gpubind::watch {

namespace {

using probe::ProcessState;
using probe::ThreadState;

// Shares are 0-1: rounding by +0.5 keeps libm (lround) out of the binary every `exec` starts.
std::string percent(double share) { return std::to_string(int(share * 100 + 0.5)) + " %"; }

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

// Where each thread ran in the interval, weighted by the CPU time it used in it.
struct Placement {
  double weight = 0, off_node = 0, off_package = 0;
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
    } else {
      continue;  // new in this interval: no delta yet
    }
    p.weight += w;
    if (!node_cpus.test(*t.last_cpu)) p.off_node += w;
    if (!package_cpus.test(*t.last_cpu)) p.off_package += w;
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
    case Finding::imbalance: return "IMBALANCE";
  }
  return "?";
}

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
  check::Report judged = check::judge(m_topo, std::move(s.processes), {});
  std::set<std::pair<int, int>> present;  // (pid, tid) of every thread in this sample
  for (const ProcessState& p : m_prev->processes)
    if (std::none_of(judged.processes.begin(), judged.processes.end(),
                     [&](const check::ProcessReport& q) { return q.state.pid == p.pid; })) {
      iv.exited.push_back(p.pid);
      if (auto it = m_totals.find(p.pid); it != m_totals.end()) it->second.summary.exited = true;
    }

  for (const check::ProcessReport& pr : judged.processes) {
    const ProcessState& cur = pr.state;
    const ProcessState* prev_process = nullptr;
    for (const ProcessState& q : m_prev->processes)
      if (q.pid == cur.pid) prev_process = &q;
    ThreadsById prev = threads_by_id(prev_process);
    RankInterval r;
    r.pid = cur.pid;
    r.comm = cur.comm;
    r.rank = check::global_rank_of(cur);
    r.local_rank = check::local_rank_of(cur);
    r.job = check::job_of(cur);
    r.gpus = pr.gpus;
    r.threads = unsigned(cur.threads.size());
    r.started = prev_process == nullptr;

    // Migrations, context switches and CPU time: deltas of the threads seen in both snapshots.
    for (const ThreadState& t : cur.threads) {
      present.emplace(cur.pid, t.tid);
      const ThreadState* before = find_thread(prev, t.tid);
      if (!before) {
        m_first_allowed.emplace(std::pair{cur.pid, t.tid}, t.cpus_allowed);
        continue;
      }
      if (t.migrations && before->migrations && *t.migrations >= *before->migrations) r.migrations += *t.migrations - *before->migrations;
      if (t.switches && before->switches && *t.switches >= *before->switches) r.context_switches += *t.switches - *before->switches;
      if (t.run_ns && before->run_ns && *t.run_ns >= *before->run_ns) r.cpu_seconds += double(*t.run_ns - *before->run_ns) / 1e9;
    }
    r.migrations_per_second = double(r.migrations) / seconds;
    r.context_switches_per_second = double(r.context_switches) / seconds;
    if (!r.started && r.migrations_per_second > m_th.migrations_per_second) {
      r.findings.push_back(Finding::migrating);
      char line[160];
      std::snprintf(line, sizeof line, "%llu migrations in %.1f s (%.1f/s, threshold %.1f/s)", (unsigned long long)r.migrations,
                    seconds, r.migrations_per_second, m_th.migrations_per_second);
      r.reasons.push_back(line);
    }

    // Where it ran, against its GPU's node(s) and package(s).
    if (pr.gpu_local && !pr.gpu_local->empty()) {
      Placement pl = placement(prev, cur, *pr.gpu_local, packages_of(m_topo, *pr.gpu_local));
      r.cross_numa = pl.share(pl.off_node);
      r.cross_socket = pl.share(pl.off_package);
      Totals& tot = m_totals[cur.pid];
      tot.weight += pl.weight;
      tot.off_weight += pl.off_node;
      if (r.cross_socket && *r.cross_socket > m_th.cross_numa) {
        r.findings.push_back(Finding::cross_socket);
        r.reasons.push_back(percent(*r.cross_socket) + " of its CPU time on another package than its GPU's (CPUs " +
                            pr.gpu_local->to_list() + " are the GPU's node)");
      } else if (r.cross_numa && *r.cross_numa > m_th.cross_numa) {
        r.findings.push_back(Finding::cross_numa);
        r.reasons.push_back(percent(*r.cross_numa) + " of its CPU time off its GPU's NUMA node " + join_numbers(pr.gpu_nodes) +
                            " (CPUs " + pr.gpu_local->to_list() + ")");
      }
      if (cur.pages_per_node && !pr.gpu_nodes.empty()) {
        uint64_t total = 0, remote = 0;
        for (const auto& [node, pages] : *cur.pages_per_node) {
          total += pages;
          if (std::find(pr.gpu_nodes.begin(), pr.gpu_nodes.end(), node) == pr.gpu_nodes.end()) remote += pages;
        }
        if (total) {
          r.remote_memory = double(remote) / double(total);
          if (*r.remote_memory > m_th.remote_memory) {
            r.findings.push_back(Finding::remote_memory);
            r.reasons.push_back(percent(*r.remote_memory) + " of its resident pages off its GPU's node " + join_numbers(pr.gpu_nodes));
          }
        }
      }
    }

    // Drift: since watch first saw each thread, or away from what gpubind applied.
    std::vector<int> drifted;
    for (const ThreadState& t : cur.threads)
      if (auto it = m_first_allowed.find({cur.pid, t.tid}); it != m_first_allowed.end() && it->second != t.cpus_allowed)
        drifted.push_back(t.tid);
    bool intent_drift = std::any_of(pr.findings.begin(), pr.findings.end(),
                                    [](const check::Finding& f) { return f.verdict == check::Verdict::drifted; });
    if (!drifted.empty() || intent_drift) {
      r.findings.push_back(Finding::drifted);
      r.reasons.push_back(!drifted.empty() ? "allowed CPUs of " + std::to_string(drifted.size()) + " thread(s) changed since the first "
                                                "sample (thread " + std::to_string(drifted[0]) + ")"
                                           : "allowed CPUs differ from what gpubind applied (GPUBIND_CPUS)");
    }
    std::vector<std::string> overlaps;
    for (const check::Finding& f : pr.findings)
      if (f.verdict == check::Verdict::overlap) overlaps.push_back(f.reason);
    if (!overlaps.empty()) {
      r.findings.push_back(Finding::overlap);
      r.reasons.push_back(join(overlaps, "; "));
    }
    iv.ranks.push_back(std::move(r));
  }
  // Threads that ended take their first-seen CPUs with them: a long watch over short-lived
  // threads stays small.
  std::erase_if(m_first_allowed, [&](const auto& e) { return !present.count(e.first); });

  // Imbalance across the ranks (processes with a GPU or a launcher's rank) that were there for the
  // whole interval; a launcher or a helper process is not a rank.
  auto is_rank = [](const RankInterval& r) { return !r.started && (!r.gpus.empty() || !r.rank.empty() || !r.local_rank.empty()); };
  std::vector<double> cpu;
  for (const RankInterval& r : iv.ranks)
    if (is_rank(r)) cpu.push_back(r.cpu_seconds);
  if (cpu.size() >= 2) {
    auto [lo, hi] = std::minmax_element(cpu.begin(), cpu.end());
    double mean = 0, var = 0;
    for (double c : cpu) mean += c / double(cpu.size());
    for (double c : cpu) var += (c - mean) * (c - mean) / double(cpu.size());
    // Judged only when the busiest rank ran a tenth of the interval: idle ranks (a job that has
    // not started its steps yet) differ by noise.
    if (*hi >= kMinBusyShare * seconds) {
      iv.imbalance = (*hi - *lo) / *hi;
      iv.cpu_cv = mean > 0 ? std::sqrt(var) / mean : 0.0;
      if (*iv.imbalance > m_th.imbalance)
        for (RankInterval& r : iv.ranks)
          if (is_rank(r)) {
            r.findings.push_back(Finding::imbalance);
            char line[160];
            std::snprintf(line, sizeof line, "ranks' CPU time differs by %d %% of the busiest (%.2f s to %.2f s)",
                          int(*iv.imbalance * 100 + 0.5), *lo, *hi);
            r.reasons.push_back(line);
          }
    }
  }

  // GPU utilization, where the runtime library gives it: each rank's GPUs' mean, and the spread
  // across the GPUs the ranks hold.
  iv.gpus = s.gpus;
  std::map<std::string, double> util;
  for (const probe::GpuUsage& g : s.gpus)
    if (g.utilization) util[g.pci] = *g.utilization;
  std::map<std::string, double> held;
  for (RankInterval& r : iv.ranks) {
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
  if (held.size() >= 2) {
    auto [lo, hi] = std::minmax_element(held.begin(), held.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (hi->second >= kMinBusyShare) {
      iv.gpu_imbalance = hi->second - lo->second;
      if (*iv.gpu_imbalance > m_th.imbalance)
        for (RankInterval& r : iv.ranks)
          if (is_rank(r)) {
            char line[200];
            std::snprintf(line, sizeof line, "GPUs' utilization differs by %d points (%s at %d %%, %s at %d %%)",
                          int(*iv.gpu_imbalance * 100 + 0.5), lo->first.c_str(), int(lo->second * 100 + 0.5), hi->first.c_str(),
                          int(hi->second * 100 + 0.5));
            // One reason per finding: with the CPU time's, both in one line.
            auto at = std::find(r.findings.begin(), r.findings.end(), Finding::imbalance);
            if (at == r.findings.end()) {
              r.findings.push_back(Finding::imbalance);
              r.reasons.push_back(line);
            } else {
              r.reasons[size_t(at - r.findings.begin())] += std::string("; ") + line;
            }
          }
    }
  }

  // Totals for the summary.
  for (const RankInterval& r : iv.ranks) {
    Totals& tot = m_totals[r.pid];
    RankSummary& sum = tot.summary;
    sum.pid = r.pid;
    sum.comm = r.comm;
    sum.rank = r.rank;
    sum.local_rank = r.local_rank;
    sum.job = r.job;
    sum.gpus = r.gpus;
    ++sum.intervals;
    sum.migrations += r.migrations;
    sum.context_switches += r.context_switches;
    sum.cpu_seconds += r.cpu_seconds;
    if (r.remote_memory) sum.remote_memory = r.remote_memory;
    if (tot.weight > 0) sum.cross_numa = tot.off_weight / tot.weight;
    for (Finding f : r.findings)
      if (std::find(sum.seen.begin(), sum.seen.end(), f) == sum.seen.end()) sum.seen.push_back(f);
    std::sort(sum.seen.begin(), sum.seen.end());
    if (!r.findings.empty() && r.findings.size() > tot.worst_findings) {
      tot.worst_findings = r.findings.size();
      sum.worst_interval = iv.index;
    }
  }
  std::stable_sort(iv.ranks.begin(), iv.ranks.end(), [](const RankInterval& a, const RankInterval& b) {
    if (a.findings.size() != b.findings.size()) return a.findings.size() > b.findings.size();
    return a.cross_numa.value_or(0) > b.cross_numa.value_or(0);
  });
  s.processes.clear();  // moved from above
  for (check::ProcessReport& pr : judged.processes) s.processes.push_back(std::move(pr.state));
  m_prev = std::move(s);
  return iv;
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
  return s;
}

}  // namespace gpubind::watch
