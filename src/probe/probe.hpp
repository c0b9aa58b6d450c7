#pragma once
// What a running process is actually bound to, read through an FsRoot so the same code runs on
// this machine and on fixture trees: per thread its allowed CPUs and memory nodes, the CPU it
// last ran on, migrations and context switches; per process the GPUs it holds open, its resident
// pages per NUMA node (optional, costly for big processes) and the environment variables that
// say what was intended (GPUBIND_*, LOCAL_RANK, CUDA_VISIBLE_DEVICES...).
#include <map>
#include <string>
#include <vector>

#include "probe/state.hpp"
#include "sys/fsroot.hpp"
#include "util/result.hpp"

namespace gpubind::probe {

struct ProbeOptions {
  bool numa_maps = false;
};

// The environment variables a probe keeps.
const std::vector<std::string>& env_names();

// Reads one process; an Error when it does not exist (or vanished) or cannot be read at all.
Result<ProcessState> probe_process(const sys::FsRoot& root, int pid, const ProbeOptions& options);

// PIDs of every process under the root, sorted.
std::vector<int> list_pids(const sys::FsRoot& root);

// Maps GPU device files to PCI addresses: /dev/nvidiaN via /proc/driver/nvidia/gpus/*/information
// ("Device Minor"), /dev/dri/renderD* and card* via /sys/class/drm/*/device.
class GpuDeviceMap {
 public:
  explicit GpuDeviceMap(const sys::FsRoot& root);
  // The PCI address behind a device path such as "/dev/nvidia3", or "".
  std::string pci_of(const std::string& device_path) const;
  // True for device files that belong to a GPU stack but name no single GPU (/dev/nvidiactl, /dev/kfd).
  static bool is_gpu_control_file(const std::string& device_path);

 private:
  std::map<unsigned, std::string> m_nvidia_minor;
  const sys::FsRoot& m_root;
};

}  // namespace gpubind::probe
