#pragma once
// The CPU bandwidth limit over a process (probe::CpuQuota): which of its cgroups has the smallest
// quota, and that cgroup's throttling counters. Read through an FsRoot from the cgroup mounts'
// usual places (/sys/fs/cgroup for cgroup v2, /sys/fs/cgroup/unified beside v1's hierarchies,
// /sys/fs/cgroup/cpu,cpuacct or /sys/fs/cgroup/cpu for v1's cpu controller).
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "probe/state.hpp"
#include "sys/fsroot.hpp"

namespace gpubind::probe {

// "max 100000" (no quota) or "200000 100000" (cgroup v2 cpu.max): the quota over the period in
// CPUs; nullopt for no quota or junk.
std::optional<double> parse_cpu_max(std::string_view text);
// The counters of a cpu.stat text into `q` (nr_periods, nr_throttled, and throttled_usec for v2
// or throttled_time, in nanoseconds, for v1); false when it has no nr_periods line.
bool parse_cpu_stat(std::string_view text, CpuQuota& q);

// Which cgroup limits each cgroup file text's CPU time, found by walking its directories up and
// reading each one's quota; the walk is done again at every kRefreshEvery-th use of a text (a
// quota set or changed later, a Kubernetes resize). The texts not used since the last sweep are
// forgotten.
class CpuQuotaMemo {
 public:
  static constexpr unsigned kRefreshEvery = 4;
  struct Limiter {
    std::string dir = {};                // the limiting cgroup's directory under the root
    std::optional<CpuQuota> quota = {};  // its path, setting and CPUs; counters unread
    unsigned uses = 0;
    bool used = true;
  };
  Limiter* find(const std::string& cgroup_text);
  void put(const std::string& cgroup_text, Limiter l) { m_limiters[cgroup_text] = std::move(l); }
  void sweep();

 private:
  std::unordered_map<std::string, Limiter> m_limiters;
};

// The quota over a process whose /proc/PID/cgroup says `cgroup_text`, with its throttling
// counters read now; nullopt when none of its cgroups sets one, or they cannot be read.
std::optional<CpuQuota> cpu_quota_of(const sys::FsRoot& root, const std::string& cgroup_text, CpuQuotaMemo* memo);

}  // namespace gpubind::probe
