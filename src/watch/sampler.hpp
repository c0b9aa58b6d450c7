#pragma once
// Taking the snapshots `watch` judges: the targets re-resolved at every sample (ranks that start,
// restart or exit are followed), each probed through an FsRoot, the time from a sys::Clock.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "probe/cpu_quota.hpp"
#include "probe/probe.hpp"
#include "probe/select.hpp"
#include "sys/clock.hpp"
#include "sys/fsroot.hpp"
#include "sys/task_counters.hpp"
#include "watch/watch.hpp"

namespace gpubind::watch {

struct SamplerOptions {
  probe::Selection selection;
  unsigned mem_every = 10;  // read numa_maps every Nth sample (costly); 0: never
  // Every GPU's use now, from the GPU runtime library (discover::GpuRuntime); empty: none.
  std::function<std::vector<probe::GpuUsage>()> gpu_usage;
  // The processes with a GPU context now (the same library); nullopt when it cannot list them.
  // They are selected too, judged by the GPU of their context, and a holder of GPU device files
  // with none is a daemon (check::holder_reason).
  std::function<std::optional<std::vector<probe::GpuProcess>>()> gpu_contexts;
  // The CPUs of each NUMA node of the machine watched (probe::ThreadMemo: a thread confined to one
  // has its last CPU read only once); empty: every migrated thread's is read.
  std::vector<CpuSet> numa_cpus = {};
};

struct Taken {
  Snapshot snapshot;
  std::vector<Error> errors;  // named processes that cannot be read
  // What could not be read of a process that was (its environment or open files, another
  // user's): "PID 42 (python): environment not readable (Permission denied)", once per process.
  std::vector<std::string> notes;
  double cost_seconds = 0;    // the sample's own time on the clock
};

class Sampler {
 public:
  // `roots`: the tree of each sample in turn (one: every sample reads it; several: a recorded
  // sequence replayed, the last one repeated).
  // With one root, each thread's files stay open from one sample to the next (sys::KeptOpenFiles),
  // as many as the open-file limit allows. On the live system, the light probe (allowed CPUs,
  // CPU time and migrations from sys::TaskCounters; `stat` only for threads that migrated since
  // the last sample; probe/probe.hpp).
  Sampler(std::vector<const sys::FsRoot*> roots, const sys::Clock& clock, SamplerOptions options);
  // A named process that ends after it was seen is not an error: the Watcher reports it exited.
  // A process that cannot be read is reported once, not at every sample.
  Taken take();

 private:
  std::vector<const sys::FsRoot*> m_roots;
  const sys::Clock& m_clock;
  SamplerOptions m_options;
  sys::Clock::time_point m_start;
  unsigned m_taken = 0;
  // Of the PIDs the last sample selected: those a sample found, those whose error was reported,
  // the notes reported.
  std::set<int> m_seen;
  std::set<int> m_reported;
  std::set<std::pair<int, std::string>> m_noted;
  std::unique_ptr<sys::KeptOpenFiles> m_kept;
  std::unique_ptr<sys::TaskCounters> m_counters;  // the live system only
  probe::ThreadMemo m_memo;                        // with m_counters
  probe::CpuQuotaMemo m_quotas;
};

// A clock that moves only when slept on: a recorded sequence replays at its own pace, with the
// times the intervals would have had.
class StepClock final : public sys::Clock {
 public:
  time_point now() const override { return m_now; }
  void sleep_for(std::chrono::milliseconds d) const override { m_now += d; }

 private:
  mutable time_point m_now{};
};

}  // namespace gpubind::watch
