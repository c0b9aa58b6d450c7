#pragma once
// watch's rules, one pure function each (watch.hpp says what each judges): the evidence of one
// rank in one interval in, a finding with its reason or none out. The Watcher measures the
// evidence and calls every rule of kRankRules in turn, then the node-wide imbalance rule.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/cpuset.hpp"
#include "watch/watch.hpp"

namespace gpubind::watch::rules {

// What the rules read of one rank in one interval.
struct RankEvidence {
  const RankInterval& rank;            // its measures: migrations, shares of CPU time and pages
  double seconds = 0;                  // the interval's length
  std::optional<CpuSet> gpu_cpus;      // the CPUs of its GPU's node(s); nullopt when unknown
  std::vector<unsigned> gpu_nodes;     // its GPU's node(s)
  std::vector<MaskChange> drifted_threads;  // threads allowed elsewhere than when watch first saw them
  std::optional<double> since_change;  // seconds since a thread's allowed CPUs last changed, if ever
  bool drifted_from_intent = false;    // allowed CPUs differ from what gpubind applied (check's DRIFTED)
  std::vector<std::string> overlaps;   // check's OVERLAP reasons
  std::string pools;                   // its busy threads and children by name (check::thread_pools), when oversubscribed
  const std::map<std::string, std::string>* env = nullptr;  // its environment, as probed (DRIFTED names the library)
};

using RankRule = std::optional<RankFinding> (*)(const RankEvidence&, const Thresholds&);

std::optional<RankFinding> migrating(const RankEvidence& e, const Thresholds& th);
std::optional<RankFinding> cross_socket(const RankEvidence& e, const Thresholds& th);
// Not when cross_socket holds: the rank is judged by the wider of the two.
std::optional<RankFinding> cross_numa(const RankEvidence& e, const Thresholds& th);
std::optional<RankFinding> remote_memory(const RankEvidence& e, const Thresholds& th);
std::optional<RankFinding> drifted(const RankEvidence& e, const Thresholds& th);
std::optional<RankFinding> overlap(const RankEvidence& e, const Thresholds& th);
// Whether the rank's pool (watch.hpp, oversubscribed) is over either bound, by its window's figures.
bool oversubscribed_pool(const RankInterval& r, const Thresholds& th);
std::optional<RankFinding> oversubscribed(const RankEvidence& e, const Thresholds& th);
std::optional<RankFinding> throttled(const RankEvidence& e, const Thresholds& th);

// In the order a rank's findings are listed.
inline constexpr RankRule kRankRules[] = {migrating, cross_socket, cross_numa, remote_memory, drifted, overlap, oversubscribed, throttled};

// The spread of the ranks' CPU time in an interval (ranks there for all of it), when judged: at
// least two ranks, the busiest busy for kMinBusyShare of the interval.
struct CpuSpread {
  double least = 0, most = 0;  // seconds
  double imbalance = 0;        // (most - least) / most
  double cv = 0;               // coefficient of variation
};
std::optional<CpuSpread> cpu_spread(const std::vector<double>& cpu_seconds, double seconds);

// The spread of the utilization (0-1) of the GPUs the ranks hold, when judged: at least two
// known, the busiest at least kMinBusyShare busy.
struct GpuSpread {
  std::string least_pci, most_pci;
  double least = 0, most = 0;
  double imbalance = 0;  // most - least
};
std::optional<GpuSpread> gpu_spread(const std::vector<std::pair<std::string, double>>& utilization_by_pci);

// IMBALANCE, node-wide: the reason every rank gets (CPU time's and GPUs' in one line), or none.
std::optional<std::string> imbalance(const std::optional<CpuSpread>& cpu, const std::optional<GpuSpread>& gpu,
                                     const Thresholds& th);

}  // namespace gpubind::watch::rules
