#pragma once
// What watch reads of every thread of the live system at each sample without regenerating a
// /proc file: the CPUs it may run on (sched_getaffinity: one syscall instead of `status`, about
// 8 us per thread here), and its CPU time, migrations and context switches (a group of three perf
// software counters, task-clock, cpu-migrations and context-switches, read together in one read():
// about 1 us, instead of generating `schedstat`, `sched` and `status`, 18 us). An interface, so the probe's use of it is tested with a fake;
// live_task_counters() is the real one.
#include <cstdint>
#include <memory>
#include <optional>

#include "util/cpuset.hpp"

namespace gpubind::sys {

class TaskCounters {
 public:
  virtual ~TaskCounters() = default;
  // The thread's allowed CPUs; nullopt when it is gone.
  virtual std::optional<CpuSet> allowed_cpus(int tid) = 0;
  struct Counts {
    uint64_t run_ns = 0;      // CPU time
    uint64_t migrations = 0;  // moves to another CPU since attached, counted when the thread next runs there
    uint64_t switches = 0;    // context switches, voluntary and involuntary
    bool fresh = false;       // attached by this call: nothing is known of the thread from before
    bool unread = false;      // the last read's counts: the thread has not run since (not read again)
  };
  // The thread's counts since its counters were attached, at the first call for this thread.
  // nullopt where no counter can be attached (perf_event_paranoid above 1 without CAP_PERFMON, a
  // seccomp filter, no CONFIG_PERF_EVENTS, the open-file limit): the caller reads /proc's
  // `schedstat` and `sched` for that thread instead, for as long as it lives.
  virtual std::optional<Counts> counts(int tid) = 0;
  // Closes the thread's counters: its id now names another thread, which the next counts()
  // attaches to afresh. (A counter outlives its thread and then reads the same values forever;
  // the caller tells a reused id, since the kernel does not hang such counters up.)
  virtual void forget(int tid) = 0;
  // Closes the counters of threads not asked about since the last sweep.
  virtual void sweep() = 0;
};

// Counters of this system's threads; at most `max_open` perf counters open at once (three per thread).
std::unique_ptr<TaskCounters> live_task_counters(size_t max_open);

// The CPUs thread `tid` may run on (0: the calling thread).
Result<CpuSet> thread_affinity(int tid);

}  // namespace gpubind::sys
