#pragma once
// Whether a rank gets the CPU time its threads ask for (issue 55): OVERSUBSCRIBED, more of its
// own threads (with its children's: DataLoader workers) running or waiting for a CPU than it has
// CPUs, and THROTTLED, its cgroup's CPU quota holding it back. Pure: check judges one probe (the
// threads in state R now, and the waits its threads' schedstat counted since they started), watch
// an interval's deltas (watch/rules.hpp); both name the pools and the settings that size them.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/state.hpp"

namespace gpubind::check {

// Runnable threads per allowed CPU above which a rank is OVERSUBSCRIBED (check and watch's
// default): a quarter more threads than CPUs keep every CPU busy while one thread in five waits
// at any time. docs/cli.md ("Contention") gives the measurement behind it.
inline constexpr double kOversubscribed = 1.25;
// check: the share of its threads' runnable time since they started spent waiting for a CPU,
// beside the threads runnable now, above which OVERSUBSCRIBED is said: one probe sees a moment, the
// waits say it was not one. 1 - 1/kOversubscribed: the share threads wait at that many per CPU.
inline constexpr double kWaitShare = 0.2;
// The share of a quota's enforcement periods in which its cgroup was throttled above which a rank
// is THROTTLED: kubernetes-mixin's CPUThrottlingHigh threshold (25 %), for the same counters.
inline constexpr double kThrottled = 0.25;

// Whether `pid` is `ancestor` or below it, by `parent_of` (PID -> its parent's PID, of the
// processes judged), at most 64 generations up: a rank's pool is it and the processes below it.
bool descends_from(int pid, int ancestor, const std::map<int, int>& parent_of);

// A thread's or process's name as one pool's: its comm without trailing digits, spaces, '-',
// '_', '/' and ':' ("pt_nccl_0" and "pt_nccl_1" are one name), "(unnamed)" when nothing is left.
std::string name_family(const std::string& comm);

// A busy thread or process of a rank's pool by the name it runs under, as thread_pools names them.
struct BusyName {
  std::string name;  // its comm, digits and separators at the end dropped ("pt_autograd_0" -> "pt_autograd")
  unsigned count = 0;
  bool process = false;  // a child process (DataLoader worker), not a thread of the rank
};

// The thread pools these names are, most first (four at most), and the settings that size each, in
// one clause: "6 thread(s) named like its main thread 'pt_main_thread' (OpenMP's and torch's
// intra-op workers keep it: sized by OMP_NUM_THREADS unset, MKL_NUM_THREADS unset or
// torch.set_num_threads), 2 child process(es) 'pt_data_worker' (DataLoader workers: num_workers)".
// `env`: the rank's environment (probe::env_names).
std::string thread_pools(const std::vector<BusyName>& busy, const std::string& main_name, const std::map<std::string, std::string>& env);

// OVERSUBSCRIBED's reason for `runnable` threads (mean or now) on `cpus` allowed CPUs, or none
// when under kOversubscribed (`ratio`) per CPU. `how` says what was counted ("running or
// waiting for a CPU now", "on average over 4.0 s"); `pools` is thread_pools' clause.
std::optional<std::string> oversubscribed(double runnable, unsigned cpus, double ratio, const std::string& how, const std::string& pools);

// THROTTLED's reason for `throttled` of `periods` enforcement periods of `quota` (its counters
// there are what was judged: since the cgroup was made, or an interval's deltas), on `cpus`
// allowed CPUs, or none when at most `share` of the periods were throttled.
std::optional<std::string> throttled(const probe::CpuQuota& quota, uint64_t periods, uint64_t throttled, double throttled_seconds,
                                     unsigned cpus, double share, const std::string& when);

// The library likely behind a thread whose allowed CPUs changed, by the thread's name (NCCL
// names its threads "NCCL ..." with NCCL_SET_THREAD_NAME=1) or the knobs of its process's
// environment (topo/pinning_env.hpp), with the setting that stops it: "NCCL:
// NCCL_IGNORE_CPU_AFFINITY=1 is set: unset NCCL_IGNORE_CPU_AFFINITY (or set it to 0)"; "" when
// neither tells.
std::string library_behind(const std::string& thread, const std::map<std::string, std::string>& env);

}  // namespace gpubind::check
