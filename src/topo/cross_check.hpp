#pragma once
// A topology against what the GPU runtime libraries (NVML, ROCm SMI) of the machine say about the
// same GPUs: UUIDs and names the topology lacks are filled in, and every disagreement is a finding
// (a GPU one side sees and the other does not, another UUID, another NUMA node or CPU affinity).
// Pure: the views are read by discover/gpu_runtime.hpp.
//
// The rule where locality disagrees: the topology's (the kernel's view of the PCI bus through
// sysfs, or the file's) is kept, since binding to the kernel's NUMA node is what the kernel will
// enforce; the finding names both. Where the topology has no locality for a GPU (numa_node -1, a
// VM) and the library gives one, the library's NUMA node and CPUs are taken, and the finding says
// so. Where UUIDs differ, the library's is taken: CUDA and ROCm name devices by the library's.
// NVLink/xGMI links: the library's are taken for the GPUs it sees (they are the links up now; a
// file may be old and sysfs knows none); a link the topology lists otherwise is a finding.
// A GPU's own memory node (GH200, POWER9): the library's fills the topology's where it has none;
// another is a finding, and the topology's is kept. Never compared with the GPU's CPU-side node.
// A PCIe link narrower than the GPU and slot allow is a finding (downtrained: a slot, riser or
// retimer fault); a slower generation only while the GPU is busy, since GPUs drop the link to a
// lower generation when idle to save power.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topo/topology.hpp"

namespace gpubind::topo {

// A PCIe link's generation (1-6) and width (lanes) now and at most.
struct PcieLinkState {
  unsigned gen = 0, max_gen = 0;
  unsigned width = 0, max_width = 0;
};

// One GPU as a runtime library reports it.
struct RuntimeGpu {
  std::string pci;   // "0000:18:00.0", lower case
  std::string uuid;  // "GPU-..."
  std::string name;
  std::optional<unsigned> numa;  // the library's NUMA node for the device (ROCm SMI's)
  // The NUMA node holding the GPU's own memory (NVML's nvmlDeviceGetNumaNodeId, which "only
  // applies to platforms where the GPUs are NUMA nodes": NOT_SUPPORTED on x86, 255 on POWER9).
  std::optional<unsigned> memory_numa;
  std::optional<CpuSet> cpus;    // the library's CPU affinity for the device (NUMA-node scope)
  std::vector<std::string> mig_uuids;  // "MIG-..." of its MIG instances, when MIG is on
  struct MigInstance {
    std::string uuid;
    std::optional<unsigned> gpu_instance, compute_instance;  // where the library says
  };
  std::vector<MigInstance> mig_instances;  // the same instances, with their GPU and compute instance
  std::string serial;                  // the board's serial number
  std::optional<bool> mig_mode;        // MIG on or off, where the library can say
  std::optional<PcieLinkState> pcie;
  std::optional<unsigned> utilization;  // percent busy when read
  std::string failure;  // a call every GPU answers that failed for this one ("nvmlDeviceGetUUID: GPU is lost (15)")
};

struct RuntimeView {
  std::string source;  // "NVML 12.535.54", "ROCm SMI 5.2.3"
  Vendor vendor = Vendor::nvidia;
  std::vector<RuntimeGpu> gpus;
  // GPU-to-GPU links among its GPUs (through an NVSwitch fabric too); nullopt when the library
  // cannot list links (an old NVML, a ROCm SMI without topology calls).
  std::optional<std::vector<GpuLink>> links;
  // The links are GPU-to-GPU ones only: links into a switch fabric could not be told from others
  // (an NVML without the remote-type call). A pair the topology links and these do not is kept.
  bool direct_links_only = false;
};

struct CrossCheckFinding {
  std::string gpu;     // PCI address; "" for a finding about all the GPUs
  std::string source;  // the library, as RuntimeView::source
  std::string what;    // one line
};

// Compares `t` with each view (its vendor's GPUs only), filling and adopting as the rule says.
std::vector<CrossCheckFinding> cross_check(Topology& t, const std::vector<RuntimeView>& views);

// A GPU's measured host-to-device copy bandwidth from each NUMA node (topo --measure).
struct MeasuredGpu {
  std::string pci;
  std::string source;  // "CUDA runtime", "HIP runtime"
  std::map<unsigned, double> bytes_per_second;  // by NUMA node OS index
};

// A node is measured nearer than another only when its copies are this much faster: PCIe bounds
// both, and a remote node costs 0-20 % on today's platforms.
inline constexpr double kMeasuredClearly = 1.10;

// The node measured nearest to the GPU, when it is clearly faster than every other; nullopt
// when none is, or fewer than two nodes were measured.
std::optional<unsigned> nearest_measured(const MeasuredGpu& m);

// Measurements against the topology: where the GPU's own node is clearly slower than another, a
// finding (the topology's locality is kept, as with the libraries); where the topology has no
// node for it, the nearest measured node and its CPUs are taken.
std::vector<CrossCheckFinding> cross_check_measured(Topology& t, const std::vector<MeasuredGpu>& measured);

// The finding as one warning line: "cross-check: GPU 0000:2a:00.0 (NVML 12.535.54): ...".
std::string to_line(const CrossCheckFinding& f);

}  // namespace gpubind::topo
