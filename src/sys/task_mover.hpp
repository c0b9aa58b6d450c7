#pragma once
// TaskMover: the side effects of `gpubind rebind` on other processes (a running job's threads and
// pages), behind one small interface so rebind is tested with a recording fake. The real one
// makes the system calls, which the kernel allows on a process of the same user, or with
// CAP_SYS_NICE (sched_setaffinity, migrate_pages of another user's process).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

class TaskMover {
 public:
  virtual ~TaskMover() = default;
  // The CPUs thread `tid` may run on now. An Error of kind not_found when it ended (ESRCH).
  virtual Result<CpuSet> affinity(int tid) = 0;
  // sched_setaffinity for thread `tid` (one thread: its other threads keep theirs). Errors:
  // not_found (ended), permission (EPERM: another user's thread without CAP_SYS_NICE), failed
  // (EINVAL: no CPU of `cpus` is in the thread's cpuset).
  virtual Status set_affinity(int tid, const CpuSet& cpus) = 0;
  // migrate_pages(2): the pages of process `pid` on nodes `from` moved to nodes `to` (OS
  // indexes). Returns the pages that could not be moved (in use, pinned for a device). Errors as
  // set_affinity's (permission: EPERM, another user's process without CAP_SYS_NICE).
  virtual Result<uint64_t> migrate_pages(int pid, const CpuSet& from, const CpuSet& to) = 0;
  // Monotonic nanoseconds, to time a migration.
  virtual uint64_t now_ns() = 0;
  // Holds process `pid` from now on, by a pidfd (pidfd_open, Linux 5.3; where the kernel has none,
  // by its start time alone), and checks that it is the process probed: its start time (stat
  // field 22, clock ticks after boot) still `start_time`. A rank that ended while rebind was busy
  // with an earlier one left its PID to the next process, which root then moved and reported as
  // the rank. An Error of kind not_found when it ended or the PID is another process's now.
  virtual Status hold(int pid, uint64_t start_time) = 0;
  // Whether a held process still runs: its pidfd, or its start time again (true for one not held).
  virtual bool held_alive(int pid) = 0;
  virtual void release(int pid) = 0;
};

// A process's start time from its /proc/PID/stat text (field 22); nullopt when it is not one.
std::optional<uint64_t> stat_start_time(std::string_view stat);
// The start time of process `pid` of this machine now; nullopt when it does not run.
std::optional<uint64_t> process_start_time(int pid);

std::unique_ptr<TaskMover> real_task_mover();

}  // namespace gpubind::sys
