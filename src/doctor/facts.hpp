#pragma once
// What `gpubind doctor` reads of a node, as plain values: kernel settings, the boot command line,
// PCIe links, the scheduler's configuration. doctor/reader.hpp fills it through an FsRoot (this
// node or a captured tree); doctor/doctor.hpp judges it. A value that could not be read is
// nullopt, with a line in `unreadable` saying which file and why.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "k8s/dra_objects.hpp"
#include "k8s/state.hpp"
#include "util/cpuset.hpp"

namespace gpubind::doctor {

// A PCI device's link as sysfs gives it (current_link_width, max_link_width, current_link_speed,
// max_link_speed: "16.0 GT/s PCIe").
struct PcieLink {
  std::string pci;
  std::optional<unsigned> width, max_width;
  std::optional<double> speed, max_speed;  // GT/s
};

// An interrupt of a GPU or NIC: a vector its PCI device lists (msi_irqs/, else the legacy `irq`
// file) and the CPUs it is delivered to: /proc/irq/N/effective_affinity_list where the kernel
// has it, else smp_affinity_list; nullopt when neither could be read.
struct DeviceIrq {
  unsigned irq = 0;
  std::optional<CpuSet> cpus;
};
struct DeviceIrqs {
  std::string pci;
  std::vector<DeviceIrq> irqs;
};

// irqbalance: whether a process of that name runs, and its settings from /etc/default/irqbalance
// (Debian) or /etc/sysconfig/irqbalance (Red Hat).
struct Irqbalance {
  bool running = false;
  std::string config;              // the file read, "" when none
  std::optional<CpuSet> banned;    // IRQBALANCE_BANNED_CPULIST (or the hex IRQBALANCE_BANNED_CPUS)
  bool oneshot = false;            // IRQBALANCE_ONESHOT: placed once at start, never again
};

// A GPU's or NIC's IOMMU group (sysfs iommu_group) and its default domain type
// (/sys/kernel/iommu_groups/N/type: "identity" passthrough, "DMA" or "DMA-FQ" translated,
// "unmanaged" given to a VM through VFIO, "blocked").
struct IommuDevice {
  std::string pci;
  std::optional<unsigned> group;  // nullopt: no group (no IOMMU translates it)
  std::string type;               // "" when not known
};

// A PCIe bridge below the root port on the way to a GPU or NIC (a switch port), and its ACS
// control register (PCIe extended capability 0x0d, offset 6) from its config space.
struct PcieBridge {
  std::string pci;
  std::vector<std::string> below;  // the GPUs and NICs under it
  bool config_read = false;        // its extended config space could be read (root only)
  std::optional<uint16_t> acs_control;  // nullopt: no ACS capability (or not read)
};

// The GPU runtime libraries (NVML, ROCm SMI) against the topology: topo --gpu-runtime's
// cross-check (topo/cross_check.hpp), on the live node only.
struct RuntimeCheck {
  std::vector<std::string> sources;   // the libraries loaded: "NVML 12.535.54"
  std::vector<std::string> findings;  // each disagreement, one line
  std::vector<std::string> notes;     // what could not be loaded or asked
  unsigned gpus = 0;                  // the GPUs the libraries report
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
  // gpubind's SPANK plugin as Slurm's plugin stack loads it (PlugStackConfig, else plugstack.conf
  // beside slurm.conf, and the files its include lines name): the line, and its default= mode
  // ("" = only steps that ask with --gpubind are bound). nullopt: no line loads it.
  struct SpankPlugin {
    std::string where;         // "/etc/slurm/plugstack.conf.d/gpubind.conf:3"
    std::string site_default;  // closest, socket-split, socket, numa, none or ""
    bool required = true;      // "required" (a step fails when it does not load), else "optional"
    std::string named;         // the path on the line, absolute or found in PluginDir
    std::string file;          // where it was found, as on the node ("" = nowhere)
    std::string looked_in;     // the directories searched for a relative path
    std::optional<std::string> built_for;  // the Slurm release it was built for ("22.05.8")
  };
  std::optional<SpankPlugin> gpubind_spank;
  // This node's NodeName= line in it: CpuSpecList (Slurm's abstract CPU ids) and CoreSpecCount.
  std::string slurm_cpu_spec_list;
  std::optional<unsigned> slurm_core_spec_count;
  // RestrictedCoresPerGPU= on that line (24.05 on), and SchedulerParameters=spec_cores_first
  // (CoreSpecCount then takes the first cores, not the last).
  std::optional<unsigned> slurm_restricted_cores_per_gpu;
  bool slurm_spec_cores_first = false;
  // Its shape as that line gives it (nullopt: not given; Sockets= counts as Boards x
  // SocketsPerBoard), its Parameters= (node-specific SlurmdParameters, 25.11 on), and slurm.conf's
  // SlurmdParameters.
  bool slurm_node_found = false;
  std::optional<unsigned> slurm_sockets, slurm_cores_per_socket, slurm_threads_per_core;
  std::string slurm_node_parameters, slurmd_parameters;
  // The GPU lines of gres.conf (beside slurm.conf) that apply to this node: each File=, Type= and
  // Cores= (also the older CPUs=) with where it was read; AutoDetect= when set.
  struct GresGpu {
    std::string where;  // "/etc/slurm/gres.conf:4"
    std::string file, type, cores;
    unsigned count = 1;  // the GPUs it names: its File= expanded, else Count=
  };
  std::vector<GresGpu> gres_gpus;
  std::string gres_autodetect;
  std::string gres_conf;  // the gres.conf read, "" when none
  // The Slurm release on this node (slurmd -V, or as the user named it); nullopt: not known.
  std::optional<std::string> slurm_version;
  std::vector<DeviceIrqs> irqs;            // of the topology's GPUs and NICs
  bool proc_irq = true;                    // /proc/irq exists
  Irqbalance irqbalance;
  std::vector<IommuDevice> iommu;          // of the topology's GPUs and NICs (those whose sysfs directory exists)
  std::vector<PcieBridge> bridges;         // switch ports above GPUs and NICs (from sysfs device paths)
  // The memory nodes this process's cpuset cgroup allows (jobs started from here inherit them).
  std::optional<CpuSet> cgroup_mems;
  std::string cgroup_mems_file;            // the file read; "" every online node (no cpuset hierarchy)
  // systemd's CPUAffinity= (system.conf and system.conf.d/*.conf): where system services run.
  std::optional<CpuSet> systemd_cpu_affinity;
  std::string systemd_conf;                // the file that set it
  std::optional<k8s::KubeletConfig> kubelet;  // nullopt: no kubelet config.yaml (not a Kubernetes node)
  std::string kubelet_config;              // the file read
  // The CPU DRA driver (dra.cpu): what shows it runs here ("" nothing: its kubelet plugin's
  // registration socket or directory, its process), and its configuration where its process
  // (comm "dracpu") could be read: its command line and the --config file in its container
  // (/proc/PID/root/...), named in cpu_driver_source ("/proc/PID" alone: its configuration could
  // not be read).
  std::string cpu_driver_seen;
  std::optional<k8s::CpuDriverConfig> cpu_driver;
  std::string cpu_driver_source;
  // nullopt: not asked (a captured tree, --no-gpu-runtime, no GPU in the topology).
  std::optional<RuntimeCheck> gpu_runtime;
  std::string gpu_runtime_skipped;         // why not asked, for the note
  std::vector<std::string> unreadable;     // "FILE: why", for files that exist but cannot be read
};

}  // namespace gpubind::doctor
