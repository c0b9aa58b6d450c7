#pragma once
// Planning `gpubind rebind`: which running processes are ranks, which GPU each drives, and where
// each rank's threads and pages go, planned for the node as `exec` would have bound them. Pure:
// probed states and their cgroups' CPUs in, a plan or the reasons to refuse out. Moving them is
// rebind/move.hpp's.
//
// The rules, each with its test (tests/unit/rebind/rebind_test.cpp):
//  - a GPU daemon (check::holder_reason) is no rank: skipped;
//  - a process under a rank (its child, grandchild...) without a rank variable of its own, or with
//    the same job and local rank, belongs to that rank and moves with it (a data loader worker);
//  - any other process with a rank variable or a GPU is a rank; one with neither is skipped;
//  - a rank's GPUs: its GPU contexts (NVML, ROCm SMI), else GPUBIND_GPU (gpubind bound it), else
//    the one GPU device file it holds open, else exec's rule (its local rank's GPU among the GPUs
//    its visibility variables leave it), which must be among the device files it holds if any;
//  - refused, nothing moved, when a rank's GPUs cannot be told (several held, no context, no
//    local rank), two ranks of a job claim the same local rank, two ranks' GPUs overlap without
//    being the same single GPU, fewer ranks are selected than the job's launcher says run here,
//    or a rank's planned CPUs lie wholly outside its cgroup's cpuset;
//  - each job is planned by itself, over the CPUs its ranks' cgroups allow, each rank on its GPUs;
//    a rank's CPUs are its planned CPUs within its own cgroup's;
//  - a thread already allowed exactly there is left; one allowed a part of them only (pinned by
//    itself or a library: NCCL pins its proxy threads) is left unless all_threads; any other moves;
//  - pages go to the planned memory nodes, those the process's cpuset.mems allows; with no
//    memory policy (mem none) or memory = false they stay.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "probe/state.hpp"
#include "topo/topology.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::rebind {

enum class ThreadAction { move, already, within };
const char* to_string(ThreadAction a);
// Why a thread is left alone, in words ("" for move).
const char* why_left(ThreadAction a);

// What rebind does with a thread allowed `before` when its rank's CPUs are `target`.
ThreadAction thread_action(const CpuSet& before, const CpuSet& target, bool all_threads);

struct ThreadPlan {
  int tid = 0;
  std::string comm;
  CpuSet before;
  ThreadAction action = ThreadAction::move;
};

struct ProcessPlan {
  int pid = 0;
  std::string comm;
  CpuSet mems_allowed;
  std::vector<ThreadPlan> threads;
  std::optional<std::map<unsigned, uint64_t>> pages;  // resident pages per node, when probed
  std::optional<uint64_t> start_time;                 // as probed: which process the PID was
};

struct RankPlan {
  std::string job;         // its launcher's job id, "" when none names one
  std::string local_rank;  // as its launcher set it, "" when none did
  unsigned position = 0;   // its rank in its job's plan
  std::vector<std::string> gpus;  // PCI addresses; empty: a CPU-only plan
  std::string gpu_source;         // how its GPUs were told
  CpuSet planned;                 // the plan's CPUs for it
  CpuSet cgroup;                  // what its cgroup's cpuset allows
  CpuSet cpus;                    // where its threads go: planned within cgroup
  std::vector<unsigned> mem_nodes;  // where its pages go; empty: they stay
  std::vector<ProcessPlan> processes;  // the rank's own process first, then those under it
  std::vector<std::string> notes;
  int pid() const { return processes.empty() ? 0 : processes.front().pid; }
};

struct Skipped {
  int pid = 0;
  std::string comm;
  std::string why;
};

// What rebind moves: each rank's processes with their target, and what it leaves (not plan::Plan,
// the planner's binding of ranks yet to start).
struct MovePlan {
  std::vector<RankPlan> ranks;
  std::vector<Skipped> skipped;
  std::vector<std::string> warnings;  // the node plans' warnings
  bool all_threads = false;           // Options::all_threads
};

struct Options {
  plan::Request base;          // policy, SMT, reserve, memory policy: as exec is given them
  bool all_threads = false;    // also move threads pinned within their rank's CPUs
  bool memory = true;          // false: leave pages where they are
  bool contexts_known = false; // the GPU libraries listed which processes have a context
};

struct Planned {
  MovePlan plan;
  std::vector<Error> refusals;  // any: nothing is to be moved
  // Processes that could not be read for permission (ProcessState::denied) and are no rank of
  // those read: whether they are ranks cannot be told, so they are neither moved nor skipped as
  // "not a rank" (permission errors: rebind exits 5, the others moved).
  std::vector<Error> denied;
};

// `cgroup_cpus`: each process's cgroup cpuset (sys::cgroup_allowed_cpus); a process missing from
// it is taken to be allowed the topology's allowed CPUs.
Planned make_plan(const topo::Topology& t, const std::vector<probe::ProcessState>& states,
                  const std::map<int, CpuSet>& cgroup_cpus, const Options& options);

}  // namespace gpubind::rebind
