#pragma once
// What `gpubind rebind` applied to a process, kept where `watch --enforce` and `check` read it: a
// rank gpubind bound keeps its GPUBIND_CPUS for ever, so without a record an enforcing watch took
// that old set as the target and moved a rebound rank back within one sample, and check called it
// DRIFTED from then on. One target for all three: the record when there is one, else GPUBIND_CPUS.
//
// A record is a file named PID-STARTTIME (the process's start time, stat field 22: a PID reused by
// another process never matches), holding "cpus=LIST" and "mems=LIST". Written by root in
// /run/gpubind/rebound, by another user in $XDG_RUNTIME_DIR/gpubind/rebound (/run/user/UID): a
// record is believed only from a file root owns in the first, or the process's own user (or root)
// owns in the second, so no user can move another's target.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sys/fsroot.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

struct RebindRecord {
  CpuSet cpus;
  CpuSet mems;
  std::string file;  // where it was read, for messages
};

// The record of process `pid` started at `start_time` (of user `uid`), read through `root`;
// nullopt when there is none that may be believed.
std::optional<RebindRecord> read_rebind_record(const FsRoot& root, int pid, uint64_t start_time, std::optional<unsigned> uid);

// Writes this user's record of a process (replacing it), and removes the directory's records of
// processes that no longer run. An Error says why it could not be kept (no runtime directory).
Status write_rebind_record(int pid, uint64_t start_time, const CpuSet& cpus, const CpuSet& mems);

}  // namespace gpubind::sys
