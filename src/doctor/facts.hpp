#pragma once
// What `gpubind doctor` reads of a node, as plain values: kernel settings, the boot command line,
// PCIe links, the scheduler's configuration. doctor/reader.hpp fills it through an FsRoot (this
// node or a captured tree); doctor/doctor.hpp judges it. A value that could not be read is
// nullopt, with a line in `unreadable` saying which file and why.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/cpuset.hpp"

namespace gpubind::doctor {

// A PCI device's link as sysfs gives it (current_link_width, max_link_width, current_link_speed,
// max_link_speed: "16.0 GT/s PCIe").
struct PcieLink {
  std::string pci;
  std::optional<unsigned> width, max_width;
  std::optional<double> speed, max_speed;  // GT/s
};

struct NodeFacts {
  std::optional<long> numa_balancing;     // /proc/sys/kernel/numa_balancing (absent: not built in)
  std::optional<long> zone_reclaim_mode;  // /proc/sys/vm/zone_reclaim_mode
  std::optional<std::string> thp_enabled;  // the bracketed choice of /sys/kernel/mm/transparent_hugepage/enabled
  std::optional<std::string> thp_defrag;   // ... and of defrag ("always", "defer", "defer+madvise", "madvise", "never")
  std::optional<uint64_t> swap_total_kb;   // /proc/meminfo SwapTotal
  std::optional<std::string> cmdline;      // /proc/cmdline
  std::optional<CpuSet> isolated;          // /sys/devices/system/cpu/isolated (isolcpus' domain isolation)
  std::optional<CpuSet> nohz_full;         // /sys/devices/system/cpu/nohz_full
  std::vector<PcieLink> links;             // of the topology's GPUs and NICs
  // Slurm's TaskPlugin from slurm.conf ($SLURM_CONF, else /etc/slurm/slurm.conf), "" when the file
  // does not set it (Slurm's default, task/none); nullopt when no slurm.conf is found.
  std::optional<std::string> slurm_task_plugin;
  std::string slurm_conf;                  // the slurm.conf read
  std::vector<std::string> unreadable;     // "FILE: why", for files that exist but cannot be read
};

}  // namespace gpubind::doctor
