#pragma once
// What `gpubind rebind` did (or, in a dry run, would do), thread by thread: rebind/move.hpp fills
// it, render/rebind_render.hpp shows it. Plain values.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rebind/rebind.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::rebind {

struct ThreadMove {
  int tid = 0;
  std::string comm;
  CpuSet before;
  CpuSet after;  // allowed now (before, when left or not moved)
  ThreadAction action = ThreadAction::move;
  bool moved = false;
  std::string note;  // why not moved when it was to be: ended meanwhile, the failure
};

struct MemoryMove {
  std::optional<std::map<unsigned, uint64_t>> before, after;  // resident pages per node
  CpuSet from, to;             // the nodes migrated from and to; from empty: nothing was to move
  uint64_t not_moved = 0;      // pages migrate_pages could not move
  uint64_t ns = 0;             // how long migrate_pages took
  bool done = false;           // migrate_pages ran and succeeded
  bool refused = false;        // the environment refused migrate_pages (a seccomp profile): a warning, not an error
  std::string note;            // why nothing moved, or the failure
  // Its memory policy as numa_maps shows it ("bind:1") when that names nodes off the planned
  // ones: its pages moved now, but every page it allocates goes there again (a warning).
  std::string policy;
  CpuSet policy_nodes;  // the nodes it names
};

struct ProcessMove {
  int pid = 0;
  std::string comm;
  std::vector<ThreadMove> threads;
  MemoryMove memory;
  std::string gone;               // it ended meanwhile: when
  std::optional<Error> error;     // what stopped it (a refusal is ErrorKind::permission)
};

struct RankMove {
  RankPlan plan;
  std::vector<ProcessMove> processes;
};

struct Outcome {
  bool dry_run = false;
  std::vector<RankMove> ranks;
  unsigned refused = 0;  // processes refused for permission
  unsigned failed = 0;   // processes stopped by another failure
  unsigned threads_moved() const;
  // One error per process that was stopped, naming it and what of it had changed by then; a
  // refusal says what would have been allowed to do it.
  std::vector<Error> errors() const;
  // One warning per process whose pages the environment refused to move (its threads moved).
  std::vector<std::string> warnings() const;
  uint64_t pages_moved() const;  // by numa_maps: on the target nodes after less before
};

}  // namespace gpubind::rebind
