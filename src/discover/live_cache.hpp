#pragma once
// A cache of this machine's topology for `gpubind exec`, which every rank of every job pays for
// (8 ranks start at once on a node). The cache file holds its key, and a file whose key differs
// is never used: the kernel boot (boot_id), the online CPUs and memory nodes, gpubind's and
// hwloc's versions and a hash of gpubind's discovery code (a rebuilt binary never reads an older
// build's entry). Not the process's affinity (taskset, srun --cpu-bind) nor its cgroup: ranks
// pinned to different CPUs and jobs in per-job cgroups share one entry, and each start applies
// its own cgroup's cpuset (sys::cgroup_allowed_cpus) as the allowed CPUs. Where that cpuset
// cannot be read, or disagreed with hwloc's allowed set when the entry was discovered, the cgroup
// is part of the key. Anything else that changes the machine within one boot (PCI hot-plug, a
// driver loaded later) needs --no-cache once.
#include <string>
#include <vector>

#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

// Where the cache lives: $GPUBIND_CACHE_DIR, else `configured` (gpubind.conf's cache_dir), else
// /run/gpubind for root, $XDG_RUNTIME_DIR/gpubind, else /tmp/gpubind-<uid>; "" when the chosen
// value is "off". Whichever it is, it is used only when it is this user's own directory, writable
// by no one else (sys::PrivateDir), and each file only when it is this user's regular file.
std::string default_cache_dir(const std::string& configured = "");

// How many topology files the cache keeps (the newest).
inline constexpr size_t kDefaultCacheMaxFiles = 16;

// This machine's topology, from the cache when its key matches, else discovered live and
// written to the cache (best effort: a cache that cannot be written costs a note, not the topology).
// `cache_dir` "" disables the cache. A cache directory or file that fails the ownership checks
// is not used, and `notes` (when given) gets one line saying why.
Result<topo::Topology> load_live_cached(const std::string& cache_dir, size_t max_files = kDefaultCacheMaxFiles,
                                        std::vector<std::string>* notes = nullptr);

// The topology to bind with on this machine. `source` "" is this machine (cached). Otherwise a
// topology file an admin corrected (GPU locality a VM's firmware does not report, say) may be
// used for live binding when it describes this machine: the same PUs and NUMA nodes; its
// allowed CPUs are then this process's (the cgroup's). When it describes another machine the
// error says what differs. `label` names the source in errors ("--topology X").
Result<topo::Topology> load_for_binding(const std::string& source, const std::string& label, const std::string& cache_dir,
                                        size_t max_files = kDefaultCacheMaxFiles, std::vector<std::string>* notes = nullptr);

}  // namespace gpubind::discover
