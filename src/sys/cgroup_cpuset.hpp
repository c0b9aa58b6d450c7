#pragma once
// The CPUs a process's cpuset cgroup allows it: what hwloc reports as a live topology's allowed
// cpuset (not the process's own affinity, which taskset or a launcher may narrow further). Read
// from /proc/<pid>/cgroup and /proc/<pid>/mountinfo under an FsRoot:
//   cgroup v1  the cpuset controller's hierarchy: cpuset.effective_cpus, else cpuset.cpus;
//   cgroup v2  cpuset.cpus.effective of the process's cgroup or, where the cpuset controller is
//              not enabled for it, of its nearest ancestor that has the file.
// A v1 cpuset hierarchy wins over v2 (the controller is in one hierarchy only). A mount of a
// subtree (a container's /sys/fs/cgroup without a cgroup namespace) is followed through the
// mount's root. With no cpuset hierarchy at all, every online CPU.
#include <string>

#include "sys/fsroot.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

struct CgroupCpus {
  CpuSet cpus;
  std::string file;  // the file read ("" when no cpuset hierarchy: the online CPUs)
};

// `pid` "self" or a number. An Error (not_found) when the process's cgroup has no directory under
// any mount this process sees, or a file cannot be read or parsed.
Result<CgroupCpus> cgroup_allowed_cpus(const FsRoot& root, const std::string& pid = "self");

// The same for the memory nodes it allows (v1 cpuset.effective_mems, else cpuset.mems; v2
// cpuset.mems.effective): `cpus` holds NUMA node numbers; with no cpuset hierarchy, every online node.
Result<CgroupCpus> cgroup_allowed_mems(const FsRoot& root, const std::string& pid = "self");

}  // namespace gpubind::sys
