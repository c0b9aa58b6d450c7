#pragma once
// Carrying out a rebind plan (rebind/rebind.hpp) on running processes, through a sys::TaskMover
// (the system calls, or a test's recording fake) and an FsRoot (their thread lists and
// numa_maps). Per process of each rank:
//   1. every thread listed in /proc/PID/task gets the rank's CPUs, unless thread_action leaves it;
//      its allowed CPUs are read again just before (the plan's may be a second old). The list is
//      read again until no new thread appears (one started meanwhile by a thread not yet moved
//      inherits the old CPUs), at most kPasses times;
//   2. its pages on other nodes are migrated to the rank's memory nodes (migrate_pages), timed,
//      resident pages per node read from numa_maps before and after.
// A thread or process that ends meanwhile is skipped with a note. A refusal (another user's
// process without CAP_SYS_NICE) stops that process, with one error naming it; any other failure
// too. Nothing is undone: the outcome says exactly what changed, thread by thread.
#include <map>
#include <vector>

#include "rebind/enforce.hpp"
#include "rebind/outcome.hpp"
#include "rebind/rebind.hpp"
#include "sys/fsroot.hpp"
#include "sys/task_mover.hpp"

namespace gpubind::rebind {

inline constexpr int kPasses = 4;

// Each process's cgroup cpuset (sys::cgroup_allowed_cpus), for make_plan and Enforcer::decide; a
// process whose cgroup cannot be read is left out (planned over the topology's allowed CPUs).
std::map<int, CpuSet> cgroup_cpus(const sys::FsRoot& root, const std::vector<probe::ProcessState>& states);

// `mover` nullptr or dry_run: nothing changes; the outcome is the plan's (threads as probed).
Outcome move(const MovePlan& plan, const sys::FsRoot& root, sys::TaskMover* mover, bool dry_run);

// Keeps what a move applied to each process whose threads it moved (sys/rebind_record.hpp), so
// watch --enforce and check judge the rank by it from now on, not by the GPUBIND_CPUS it was
// first bound with (an enforcing watch moved a rebound rank back within one sample). Returns one
// warning per process whose record could not be written.
std::vector<std::string> keep_records(const Outcome& o);

// Makes watch --enforce's repins: each thread's allowed CPUs read again (the sample's may be a
// few samples old for a thread that has not run since: probe::ThreadMemo); already within its
// target: `already`; ended: `gone`; else set (`repinned`, or `failed` with the error), or with
// `act` false only `reported`, with the CPUs read as `from`.
void apply_repins(std::vector<Repin>& repins, sys::TaskMover& mover, bool act);

// One round of watch --enforce, after a sample of `states` at `now` (seconds on the watch's
// clock): the plan made again when the processes changed (their cgroups read from `root` then),
// the drifted threads put back through `mover` (or only reported), the round recorded. Returns
// what the caller says: the repins that changed or reported something (not `already`, not
// `gone`), and the enforcer's notes.
struct EnforceRound {
  std::vector<Repin> repins;
  std::vector<std::string> notes;
};
EnforceRound enforce_round(Enforcer& enforcer, const topo::Topology& t, const sys::FsRoot& root,
                           const std::vector<probe::ProcessState>& states, double now, sys::TaskMover& mover);

}  // namespace gpubind::rebind
