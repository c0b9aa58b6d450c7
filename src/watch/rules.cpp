#include "watch/rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/strings.hpp"

namespace gpubind::watch::rules {

namespace {

// Shares are 0-1: rounding by +0.5 keeps libm (lround) out of the binary every `exec` starts.
std::string percent(double share) { return std::to_string(int(share * 100 + 0.5)) + " %"; }
int points(double share) { return int(share * 100 + 0.5); }

bool over(const std::optional<double>& share, double threshold) { return share && *share > threshold; }

// "thread 43 'pt_nccl': 0-7 -> 8-15"
std::string thread_change(const MaskChange& c) {
  return "thread " + std::to_string(c.tid) + " '" + c.thread + "': " + c.before.to_list() + " -> " + c.after.to_list();
}

// Where CROSS_SOCKET holds: its GPU's CPUs known and too much CPU time on another package.
bool off_package(const RankEvidence& e, const Thresholds& th) { return e.gpu_cpus && over(e.rank.cross_socket, th.cross_numa); }

}  // namespace

std::optional<RankFinding> migrating(const RankEvidence& e, const Thresholds& th) {
  const RankInterval& r = e.rank;
  if (r.started || r.migrations_per_second <= th.migrations_per_second) return std::nullopt;
  char line[160];
  std::snprintf(line, sizeof line, "%llu migrations in %.1f s (%.1f/s, threshold %.1f/s)", (unsigned long long)r.migrations,
                e.seconds, r.migrations_per_second, th.migrations_per_second);
  return RankFinding{Finding::migrating, line};
}

std::optional<RankFinding> cross_socket(const RankEvidence& e, const Thresholds& th) {
  if (!off_package(e, th)) return std::nullopt;
  return RankFinding{Finding::cross_socket, percent(*e.rank.cross_socket) + " of its CPU time on another package than its GPU's (CPUs " +
                                                e.gpu_cpus->to_list() + " are the GPU's node)"};
}

std::optional<RankFinding> cross_numa(const RankEvidence& e, const Thresholds& th) {
  if (!e.gpu_cpus || !over(e.rank.cross_numa, th.cross_numa) || off_package(e, th)) return std::nullopt;
  return RankFinding{Finding::cross_numa, percent(*e.rank.cross_numa) + " of its CPU time off its GPU's NUMA node " +
                                              join_numbers(e.gpu_nodes) + " (CPUs " + e.gpu_cpus->to_list() + ")"};
}

std::optional<RankFinding> remote_memory(const RankEvidence& e, const Thresholds& th) {
  if (!over(e.rank.remote_memory, th.remote_memory)) return std::nullopt;
  return RankFinding{Finding::remote_memory,
                     percent(*e.rank.remote_memory) + " of its resident pages off its GPU's node " + join_numbers(e.gpu_nodes)};
}

namespace {
// "; likely NCCL: ..." for the thread whose CPUs changed (check::library_behind), or "".
std::string behind(const RankEvidence& e, const MaskChange& c) {
  static const std::map<std::string, std::string> none;
  std::string who = check::library_behind(c.thread, e.env ? *e.env : none);
  return who.empty() ? "" : "; " + who;
}
}  // namespace

std::optional<RankFinding> drifted(const RankEvidence& e, const Thresholds& th) {
  std::string changed;  // the threads allowed elsewhere than when watch first saw them, first named
  if (!e.drifted_threads.empty())
    changed = "allowed CPUs of " + std::to_string(e.drifted_threads.size()) + " thread(s) differ from when watch first saw them (" +
              thread_change(e.drifted_threads[0]) + ")" + behind(e, e.drifted_threads[0]);
  if (e.drifted_from_intent)
    return RankFinding{Finding::drifted, "allowed CPUs differ from what gpubind applied (GPUBIND_CPUS)" + (changed.empty() ? "" : "; " + changed)};
  if (!changed.empty()) return RankFinding{Finding::drifted, changed};
  if (e.since_change && *e.since_change <= th.drift_hold) {
    char held[96];
    std::snprintf(held, sizeof held, " %.0f s ago (DRIFTED holds %.0f s after a change)", *e.since_change, th.drift_hold);
    std::string what = "allowed CPUs changed";
    if (!e.rank.mask_changes.empty()) what += " (" + thread_change(e.rank.mask_changes[0]) + ")" + behind(e, e.rank.mask_changes[0]);
    return RankFinding{Finding::drifted, what + held};
  }
  return std::nullopt;
}

std::optional<RankFinding> overlap(const RankEvidence& e, const Thresholds&) {
  if (e.overlaps.empty()) return std::nullopt;
  return RankFinding{Finding::overlap, join(e.overlaps, "; ")};
}

namespace {
// More busy threads than CPUs (asked only once oversubscribed_pool found the CPUs kept busy).
bool wider_than_cpus(const RankInterval& r) {
  double cpus = double(r.cpus.count());
  return r.pool_busy_threads && cpus > 0 && *r.pool_busy_threads > cpus + 0.5;
}
}  // namespace

bool oversubscribed_pool(const RankInterval& r, const Thresholds& th) {
  double cpus = double(r.cpus.count());
  // Its own threads keep its CPUs busy: waits from other processes' load on them are not its pools'.
  bool busy = r.pool_cpus_used && *r.pool_cpus_used >= kSaturated * cpus;
  return busy && ((r.pool_runnable && *r.pool_runnable > th.oversubscribed * cpus) || wider_than_cpus(r));
}

std::optional<RankFinding> oversubscribed(const RankEvidence& e, const Thresholds& th) {
  const RankInterval& r = e.rank;
  if (!oversubscribed_pool(r, th)) return std::nullopt;
  unsigned cpus = unsigned(r.cpus.count());
  std::string window = " on average over the last " + std::to_string(r.runnable_intervals) + " interval(s)";
  std::string how = "running or waiting for a CPU" + window;
  if (r.runnable && *r.pool_runnable > *r.runnable + 0.05) how += " (" + fixed(*r.runnable, 1) + " its own, the rest its children's)";
  if (auto why = check::oversubscribed(*r.pool_runnable, cpus, th.oversubscribed, how, e.pools))
    return RankFinding{Finding::oversubscribed, *why};
  // Busy threads beyond its CPUs that queue little: they wait for each other instead.
  std::string out = fixed(*r.pool_busy_threads, 1) + " threads busy (a tenth of a CPU or more each)" + window + " on " +
                    std::to_string(cpus) + " allowed CPU(s), kept " + percent(*r.pool_cpus_used / cpus) +
                    " busy: a pool wider than its CPUs waits for its slowest thread at each barrier";
  if (!e.pools.empty()) out += ": " + e.pools;
  return RankFinding{Finding::oversubscribed, out + "; size its pools to its " + std::to_string(cpus) + " CPU(s)"};
}

std::optional<RankFinding> throttled(const RankEvidence& e, const Thresholds& th) {
  if (!e.rank.quota) return std::nullopt;
  auto why = check::throttled(*e.rank.quota, e.rank.periods, e.rank.throttled_periods, e.rank.throttled_seconds,
                              unsigned(e.rank.cpus.count()), th.throttled, "in the interval");
  if (!why) return std::nullopt;
  return RankFinding{Finding::throttled, *why};
}

std::optional<CpuSpread> cpu_spread(const std::vector<double>& cpu_seconds, double seconds) {
  if (cpu_seconds.size() < 2) return std::nullopt;
  auto [lo, hi] = std::minmax_element(cpu_seconds.begin(), cpu_seconds.end());
  // Judged only when the busiest rank ran a tenth of the interval: idle ranks (a job that has not
  // started its steps yet) differ by noise.
  if (*hi < kMinBusyShare * seconds) return std::nullopt;
  double n = double(cpu_seconds.size()), mean = 0, var = 0;
  for (double c : cpu_seconds) mean += c / n;
  for (double c : cpu_seconds) var += (c - mean) * (c - mean) / n;
  return CpuSpread{*lo, *hi, (*hi - *lo) / *hi, mean > 0 ? std::sqrt(var) / mean : 0.0};
}

std::optional<GpuSpread> gpu_spread(const std::vector<std::pair<std::string, double>>& utilization_by_pci) {
  if (utilization_by_pci.size() < 2) return std::nullopt;
  auto [lo, hi] = std::minmax_element(utilization_by_pci.begin(), utilization_by_pci.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
  if (hi->second < kMinBusyShare) return std::nullopt;
  return GpuSpread{lo->first, hi->first, lo->second, hi->second, hi->second - lo->second};
}

std::optional<std::string> imbalance(const std::optional<CpuSpread>& cpu, const std::optional<GpuSpread>& gpu,
                                     const Thresholds& th) {
  std::vector<std::string> parts;
  if (cpu && cpu->imbalance > th.imbalance) {
    char line[160];
    std::snprintf(line, sizeof line, "ranks' CPU time differs by %d %% of the busiest (%.2f s to %.2f s)", points(cpu->imbalance),
                  cpu->least, cpu->most);
    parts.push_back(line);
  }
  if (gpu && gpu->imbalance > th.imbalance) {
    char line[200];
    std::snprintf(line, sizeof line, "GPUs' utilization differs by %d points (%s at %d %%, %s at %d %%)", points(gpu->imbalance),
                  gpu->least_pci.c_str(), points(gpu->least), gpu->most_pci.c_str(), points(gpu->most));
    parts.push_back(line);
  }
  if (parts.empty()) return std::nullopt;
  return join(parts, "; ");
}

}  // namespace gpubind::watch::rules
