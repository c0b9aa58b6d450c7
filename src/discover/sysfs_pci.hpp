#pragma once
// PCI devices from Linux sysfs (/sys/bus/pci/devices) through an FsRoot: class and ids, the
// kernel's locality (local_cpulist, which the kernel derives from numa_node: every CPU for -1),
// the bridge path from the device's sysfs location, and the OS devices hanging off it (net/, infiniband/, drm/). This replaces hwloc's PCI
// discovery for live machines: hwloc reads every function's config space (~15-20 ms in a VM),
// sysfs attributes cost well under a millisecond (docs/PERFORMANCE.md).
#include <optional>
#include <string>
#include <vector>

#include "sys/fsroot.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

struct SysfsPciDevice {
  std::string pci;                  // "0000:17:00.0"
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint32_t class_id = 0;            // class/subclass, e.g. 0x0302
  std::optional<CpuSet> local_cpus;
  std::vector<std::string> pcie_path;  // "hb:0000:17", then bridges, as in topo::PciDevice
  std::vector<std::string> os_names;   // sorted
  bool nvidia_driver_bound = false;    // listed in /proc/driver/nvidia/gpus
  std::string name;                    // NVIDIA driver's "Model:" where present
  std::string uuid;                    // NVIDIA driver's "GPU UUID:" where present
  unsigned stacks = 0;                 // Intel GPU tiles: tile*/ (xe) or drm/card*/gt/gt* (i915); 0 unknown
};

// Every PCI function under the root, sorted by address. A missing /sys/bus/pci (containers
// without sysfs PCI) is not an error: the list is empty.
Result<std::vector<SysfsPciDevice>> scan_sysfs_pci(const sys::FsRoot& root);

}  // namespace gpubind::discover
