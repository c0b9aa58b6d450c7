#pragma once
// `gpubind watch`: what running ranks do over time. Pure: snapshots of probed processes (with the
// time they were taken) in, one judged Interval per pair of consecutive snapshots out, and a
// Summary at the end. Sampling (the clock, /proc) is in watch/sampler.hpp.
//
// The rules, each with a threshold (Thresholds) and a unit test (tests/unit/watch):
//   migrating      a rank's threads migrated between CPUs more than migrations_per_second times
//                  per second in the interval (se.nr_migrations deltas of threads seen in both
//                  snapshots; a counter that went down belongs to a reused thread id: not counted)
//   cross-numa     the share of the rank's run time in the interval (threads weighted by their
//                  CPU time; by thread when the kernel gives no CPU time) whose last CPU is off
//                  its GPU's NUMA node(s) exceeds cross_numa
//   cross-socket   the same share off the GPU's package(s) exceeds cross_numa
//   drifted        a thread's allowed CPUs differ from what gpubind applied (GPUBIND_CPUS, as
//                  `check` judges it), or from when watch first saw the thread, or changed between
//                  two samples in the last drift_hold seconds: a mask flipped back and forth stays
//                  DRIFTED between the samples that happen to read the same mask (each change is
//                  also counted: MaskChange). A mask changed and changed back between two samples
//                  is not seen: the kernel keeps no count of affinity changes
//   remote-memory  the share of resident pages off the GPU's node(s) exceeds remote_memory (when
//                  numa_maps was read)
//   overlap        the rank's CPUs overlap another pinned rank's (as `check` judges it)
//   oversubscribed its threads and those of the processes watched below it (DataLoader workers)
//                  ran or waited for a CPU, on average over the last kLoadWindow intervals, more
//                  than oversubscribed times its allowed CPUs: (CPU time + run delay) / seconds,
//                  the delay from each thread's schedstat (check/contention.hpp); or more of them
//                  were busy (kBusyThread of a CPU each) than it has CPUs: a pool that waits at
//                  barriers sleeps rather than queues, so its loss shows in no run delay. Either
//                  only while they keep kSaturated of its CPUs busy themselves: waits that other
//                  processes' load causes are not its pools' (docs/cli.md, "Contention")
//   throttled      its cgroup's CPU quota (the smallest over it) throttled it in more than
//                  throttled of the interval's enforcement periods (cpu.stat's nr_throttled
//                  over nr_periods)
//   imbalance      the ranks' CPU time in the interval differs by more than imbalance of the
//                  busiest: (max - min) / max; a node-wide finding, on every rank. Ranks are the
//                  processes with a GPU or a launcher's rank variable (not a launcher itself).
//                  Judged when the busiest rank ran at least kMinBusyShare of the interval.
//                  GPU holders that are not ranks (nvidia-persistenced, DCGM: check::holder_reason)
//                  are listed with no finding and take no part.
//                  Also when the ranks' GPUs' utilization (from the runtime library) differs by
//                  more than imbalance: max - min, judged when the busiest GPU is at least
//                  kMinBusyShare busy (the seed's "some GPUs at 100 %, others idle")
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "check/contention.hpp"
#include "probe/state.hpp"
#include "topo/topology.hpp"

namespace gpubind::check {
struct ProcessReport;
struct Report;
}  // namespace gpubind::check

namespace gpubind::watch {

struct Snapshot {
  double t = 0;  // seconds since watch started
  std::vector<probe::ProcessState> processes;
  std::vector<probe::GpuUsage> gpus;  // from the GPU runtime library; empty without one
  bool contexts_known = false;        // the library listed GPU contexts (into processes' context_gpus)
};

inline constexpr double kMinBusyShare = 0.1;
// How many intervals OVERSUBSCRIBED averages over: the light probe reads a running thread's wait
// for a CPU at every ThreadMemo::kDelayEvery-th sample (8), so each thread's wait is read once in
// that many intervals.
inline constexpr size_t kLoadWindow = 8;
// A thread that used at least this share of a CPU in an interval is busy (OVERSUBSCRIBED's count).
inline constexpr double kBusyThread = 0.1;
// OVERSUBSCRIBED only while the rank's pool uses this share of its CPUs.
inline constexpr double kSaturated = 0.65;

struct Thresholds {
  double migrations_per_second = 1.0;
  double cross_numa = 0.10;
  double remote_memory = 0.20;
  double imbalance = 0.25;
  double drift_hold = 30;  // seconds DRIFTED holds after a thread's allowed CPUs changed
  double oversubscribed = check::kOversubscribed;  // runnable threads per allowed CPU
  double throttled = check::kThrottled;            // share of the quota's periods throttled
};

// A thread whose allowed CPUs changed: which thread (its name tells who: NCCL, OpenMP, CUDA and
// PyTorch name the threads they start) and from what to what.
struct MaskChange {
  int tid = 0;
  std::string thread;  // the thread's comm
  CpuSet before, after;
};

// How many distinct thread names a rank's change counts keep; later names count as kOtherThreads
// (a metric label of bounded cardinality).
inline constexpr size_t kMaxThreadNames = 8;
inline constexpr const char* kOtherThreads = "(other)";
// A thread's name as a change count's key: its comm without trailing digits, spaces, '-', '_'
// and '/' ("pt_nccl_0" and "pt_nccl_1" are one name), "(unnamed)" when nothing is left.
std::string thread_family(const std::string& comm);

enum class Finding { migrating, cross_numa, cross_socket, drifted, remote_memory, overlap, oversubscribed, throttled, imbalance };
const char* to_string(Finding f);  // "MIGRATING", "CROSS_NUMA"...

struct RankFinding {
  Finding kind;
  std::string reason;  // one line
};

// Who a watched process is and what its last sample said of it: the same in each interval's
// record and in the summary, which takes it from the last interval.
struct RankIdentity {
  int pid = 0;
  std::string comm;
  std::string rank;        // the global rank its launcher gave it (RANK, SLURM_PROCID...), or ""
  std::string local_rank;  // LOCAL_RANK, SLURM_LOCALID..., or ""
  std::string job;         // SLURM_JOB_ID, else TORCHELASTIC_RUN_ID, or ""
  std::string slurm_job, slurm_step, run_id;  // SLURM_JOB_ID, SLURM_STEP_ID, TORCHELASTIC_RUN_ID, or ""
  std::optional<probe::KubeContainer> kube;   // its Kubernetes pod and container, when known
  std::vector<std::string> gpus;  // PCI addresses it is judged against (held open, else GPUBIND_GPU)
  CpuSet cpus;                    // its allowed CPUs at the sample (the main thread's)
  // A GPU daemon, not a rank (check::holder_reason), or a process not in the Slurm job it claims
  // (check::outside_their_job, "claims Slurm job ..."), or a wrapper above a rank
  // (check::wrappers_of_ranks, "a wrapper (...) ..."): not judged.
  std::string holder;
  std::string holder_verdict;  // which of them: GPU_HOLDER, NOT_IN_JOB or WRAPPER (check::verdicts_of)
};

struct RankInterval : RankIdentity {
  unsigned threads = 0;
  uint64_t migrations = 0;
  double migrations_per_second = 0;
  uint64_t context_switches = 0;  // of its threads in the interval, voluntary and involuntary
  double context_switches_per_second = 0;
  double cpu_seconds = 0;               // CPU time of all its threads in the interval
  std::optional<double> gpu_utilization;  // mean of its GPUs' utilization, when the runtime says
  std::optional<double> cross_numa;     // nullopt: GPU locality unknown, or the rank was idle
  std::optional<double> cross_socket;
  // CPU time in the interval whose thread last ran off the GPU's node / package: what the shares
  // above are of, as counters sum it. nullopt: locality unknown, or the kernel gives no CPU time.
  std::optional<double> cross_numa_seconds, cross_socket_seconds;
  std::optional<double> remote_memory;  // nullopt: numa_maps not read, or locality unknown
  std::vector<MaskChange> mask_changes;  // threads whose allowed CPUs changed since the last sample
  int ppid = 0;
  // Time its threads waited for a CPU, as read in the interval (threads whose wait was read at
  // both ends; the light probe reads each running thread's every kLoadWindow samples). nullopt:
  // the kernel keeps no waits (no CONFIG_SCHED_INFO), or none read yet.
  std::optional<double> run_delay_seconds;
  // Its threads running or waiting for a CPU, on average over the last kLoadWindow intervals
  // ((CPU time + waits) / seconds): alone, and with the processes watched below it (its pool).
  std::optional<double> runnable, pool_runnable;
  unsigned busy_threads = 0;  // its threads that used at least kBusyThread of a CPU in the interval
  // With the processes watched below it, over the same window: busy threads and CPU time per
  // second, on average.
  std::optional<double> pool_busy_threads, pool_cpus_used;
  unsigned runnable_intervals = 0;       // how many intervals those are of (kLoadWindow once it has run that long)
  std::optional<probe::CpuQuota> quota;  // the CPU quota over it at the interval's end
  // That quota's counters in the interval (the same cgroup at both ends): enforcement periods,
  // those throttled, and run queues' time held back.
  uint64_t periods = 0, throttled_periods = 0;
  double throttled_seconds = 0;
  bool started = false;                 // first seen in this interval (no deltas yet)
  std::vector<RankFinding> findings;    // in the order of the rules (watch/rules.hpp)
  bool has(Finding f) const;
};

struct Interval {
  unsigned index = 0;  // 1 for the first interval
  double start = 0, end = 0;
  std::vector<RankInterval> ranks;  // worst first: most findings, then highest cross-NUMA share
  std::vector<int> exited;          // PIDs seen in the previous snapshot and gone now
  std::optional<double> imbalance;  // (max - min) / max of the ranks' CPU time; nullopt under 2 busy ranks
  std::optional<double> cpu_cv;     // coefficient of variation of the same
  std::vector<probe::GpuUsage> gpus;    // every GPU's use at the interval's end (runtime library)
  std::optional<double> gpu_imbalance;  // max - min utilization of the ranks' GPUs; nullopt under 2 known
};

struct RankSummary : RankIdentity {
  unsigned intervals = 0;
  uint64_t migrations = 0;
  uint64_t context_switches = 0;
  double cpu_seconds = 0;
  std::optional<double> cross_numa;     // over the whole watch, weighted like each interval's
  std::optional<double> cross_numa_seconds, cross_socket_seconds;  // sums of the intervals' (counters)
  std::optional<double> remote_memory;  // the last one read
  std::optional<double> run_delay_seconds;      // sum of the intervals'
  uint64_t periods = 0, throttled_periods = 0;  // its quota's, summed over the intervals
  double throttled_seconds = 0;
  bool quota = false;                                 // a CPU quota was over it in some interval
  std::map<std::string, uint64_t> changes_by_thread;  // threads' allowed-CPU changes seen, by thread_family
  std::optional<MaskChange> last_change;
  std::vector<Finding> seen;            // every finding of any interval, in enum order
  std::optional<unsigned> worst_interval;  // the interval with the most findings
  bool exited = false;
  uint64_t mask_changes() const;  // of every thread: the sum of changes_by_thread
};

// How many exited processes the summary keeps: a watch that runs for months over processes that
// come and go keeps the most recent ones and counts the others, so its memory stays flat.
constexpr size_t kMaxExitedInSummary = 1000;

struct Summary {
  double seconds = 0;
  unsigned intervals = 0;
  std::vector<RankSummary> ranks;  // by PID
  bool any_finding = false;         // of every process seen, listed or not
  uint64_t exited_not_listed = 0;   // exited processes dropped beyond kMaxExitedInSummary
  uint64_t exited_not_listed_with_findings = 0;
};

class Watcher {
 public:
  Watcher(const topo::Topology& t, Thresholds thresholds) : m_topo(t), m_th(thresholds) {}
  // Judges the interval since the previous snapshot; the first snapshot gives nothing.
  std::optional<Interval> observe(Snapshot s);
  Summary summary() const;

 private:
  // One interval of a process's load: seconds, CPU time and waits for a CPU.
  struct Load {
    double seconds = 0, cpu = 0, delay = 0;
    double busy = 0;  // busy threads x seconds
  };
  struct Totals {
    RankSummary summary;
    std::deque<Load> window;            // the last kLoadWindow intervals, when waits were read
    std::optional<double> last_change;  // when a thread's allowed CPUs last changed
    double weight = 0, off_weight = 0;  // for the whole-watch cross-NUMA share
    size_t worst_findings = 0;
  };
  void note_exited(const check::Report& judged, Interval& iv);
  // Each process's runnable threads over the window, alone and with the processes below it, and
  // the thread pools of those over the threshold (by index in `ranks`); `prev_of`: each PID's
  // state in the sample before.
  std::map<size_t, std::string> judge_load(const check::Report& judged, std::vector<RankInterval>& ranks, double seconds,
                                           const std::map<int, const probe::ProcessState*>& prev_of);
  // The findings of every rule of rules::kRankRules on the rank's measures.
  void judge_rank(const check::ProcessReport& pr, RankInterval& r, double now, double seconds, const std::string& pools,
                  std::set<std::pair<int, int>>& present);
  void judge_node(Interval& iv, double seconds) const;  // IMBALANCE and the GPUs' utilization
  void add_totals(const Interval& iv);

  const topo::Topology& m_topo;
  Thresholds m_th;
  std::optional<Snapshot> m_prev;
  std::map<std::pair<int, int>, CpuSet> m_first_allowed;  // (pid, tid) -> allowed CPUs when first seen
  std::map<int, Totals> m_totals;              // by PID
  std::deque<int> m_exited;                    // PIDs in m_totals that exited, oldest first
  uint64_t m_dropped = 0, m_dropped_with_findings = 0;
  double m_first_t = 0;
  unsigned m_intervals = 0;
};

}  // namespace gpubind::watch
