#pragma once
// The machine model: plain value types, no hwloc, no I/O. Built by src/discover from a live
// machine, an hwloc XML/synthetic/fsroot source, an NCCL/RCCL topology file or gpubind's own JSON;
// read by every layer above. Index conventions:
//   - CPUs are PU OS indexes (what sched_setaffinity and /proc use), never hwloc logical indexes.
//   - NUMA nodes are OS indexes (what set_mempolicy and /sys/devices/system/node use).
//   - PCI addresses are "dddd:bb:dd.f", lower case.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/cpuset.hpp"

namespace gpubind::topo {

struct Package {
  unsigned os_index = 0;
  CpuSet cpus;
};

struct NumaNode {
  unsigned os_index = 0;
  CpuSet cpus;                     // empty for CPU-less nodes (HBM, CXL, PMem, GPU memory)
  uint64_t memory_bytes = 0;       // 0 when the source does not say
  std::optional<unsigned> package; // OS index of the package it belongs to, if any
  std::string subtype;             // hwloc subtype: "", "HBM", "GPUMemory", "NVM", "CXL-DRAM"...
};

struct L3Domain {
  CpuSet cpus;
  uint64_t size_bytes = 0;
};

struct Core {
  CpuSet pus;  // the SMT siblings of this core
};

enum class Vendor { nvidia, amd, intel, other };

// A PCI device gpubind cares about (a GPU or a NIC) and where it sits.
struct PciDevice {
  std::string pci;                 // "0000:07:00.0"; "" when the source gives no address
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint32_t class_id = 0;           // 16-bit PCI class/subclass, e.g. 0x0302
  std::string name;                // model name where known ("NVIDIA H100 80GB HBM3")
  std::vector<std::string> os_names;  // OS devices: "mlx5_0", "ib0", "cuda0", "card1"...
  // Locality: the NUMA nodes (OS indexes) and CPUs nearest the device, or nullopt when the
  // source does not know (numa_node -1 in a VM, a capture without PCI locality).
  std::optional<std::vector<unsigned>> numa;
  std::optional<CpuSet> cpus;
  // PCIe path from the root down to the device's parent: first the host bridge ("hb:0000:00",
  // or "cpu:N" for NCCL files, which only know the CPU root), then each bridge's bus id.
  std::vector<std::string> pcie_path;
};

struct Gpu : PciDevice {
  Vendor vendor = Vendor::other;
  unsigned index = 0;              // ordinal in the vendor's default enumeration
  std::string uuid;                // "GPU-..." when the source knows it
  // CPU-less NUMA nodes holding this GPU's memory (GH200 and GB200 without CDMM, POWER9 with
  // NVLink): from the driver's /proc/driver/nvidia/gpus/<bus>/numa_status, hwloc's GPUMemory
  // nodes, NVML's nvmlDeviceGetNumaNodeId or a JSON file. Never planned for CPUs; the memory
  // target only with --mem-on-gpu.
  std::vector<unsigned> memory_numa;
  std::vector<std::string> mig_uuids;  // "MIG-..." ids of its MIG instances, when the source knows them
  // Stacks (tiles) of an Intel GPU: Level Zero's sub-devices, each a device of its own in its
  // default FLAT hierarchy (GPU Max 1550: 2). From sysfs (tile*/ under the PCI device with xe,
  // gt/gt* of its DRM card with i915) or a JSON file; 1 where unknown.
  unsigned stacks = 1;
  // Set on the planner's own entries for one stack of this GPU (a FLAT Level Zero device), never
  // in a loaded topology.
  std::optional<unsigned> stack;
};

struct Nic : PciDevice {};

// A direct GPU-to-GPU (or GPU-to-switch fabric) link: NVLink or AMD xGMI.
struct GpuLink {
  enum class Kind { nvlink, xgmi };
  std::string a;                   // PCI address of one GPU
  std::string b;                   // PCI address of the other
  Kind kind = Kind::nvlink;
  unsigned count = 0;              // number of links (NV18 = 18)
};

struct Topology {
  std::string origin;              // what it was loaded from, e.g. "hwloc-xml:node.xml", "live"
  std::string hostname;
  CpuSet cpus;                     // every PU, allowed or not
  CpuSet allowed_cpus;             // PUs this process may use (cgroup cpuset, XML allowed_cpuset)
  std::vector<Package> packages;
  std::vector<NumaNode> numa_nodes;           // sorted by os_index
  std::vector<std::vector<unsigned>> distances;  // NUMA distance matrix in numa_nodes order; empty if unknown
  std::vector<L3Domain> l3_domains;
  std::vector<Core> cores;                    // sorted by first PU
  std::vector<Gpu> gpus;                      // sorted by vendor, then index
  std::vector<Nic> nics;                      // sorted by PCI address
  std::vector<GpuLink> links;
  std::vector<std::string> warnings;          // what the loader could not know or had to guess
  // False when the source gives no core structure (an NCCL file whose SMT numbering cannot be
  // inferred): each PU is then its own "core", and two of them may share one physical core.
  bool cores_known = true;
  // False when the source holds no PCI devices at all: a /sys capture gathered without I/O
  // (`hwloc-gather-topology` without --io). Its GPUs and NICs are unknown, not absent.
  bool devices_known = true;
};

// --- pure queries ---

// How two PCI devices reach each other, in nvidia-smi topo -m terms, best first.
enum class PathClass { PIX, PXB, PHB, NODE, SYS };
const char* to_string(PathClass c);
PathClass path_class(const PciDevice& a, const PciDevice& b);

const char* to_string(Vendor v);
Vendor vendor_from_string(const std::string& s);
Vendor vendor_from_pci_id(uint16_t vendor_id);

// The NUMA node with this OS index, or nullptr.
const NumaNode* find_numa(const Topology& t, unsigned os_index);
// The package of the NUMA node with this OS index, nullopt when the node or its package is unknown.
std::optional<unsigned> package_of_node(const Topology& t, unsigned os_index);
// NUMA distance between two nodes by OS index, nullopt when unknown.
std::optional<unsigned> numa_distance(const Topology& t, unsigned a, unsigned b);
// The NVLink/xGMI link between two GPUs, or nullptr.
const GpuLink* find_link(const Topology& t, const std::string& a, const std::string& b);
// Links in PCI address order, as every loader leaves them.
void sort_links(std::vector<GpuLink>& links);
// NUMA nodes that have CPUs.
std::vector<unsigned> cpu_numa_nodes(const Topology& t);
// The CPUs of these NUMA nodes (OS indexes; unknown ones contribute nothing).
CpuSet cpus_of_nodes(const Topology& t, const std::vector<unsigned>& nodes);
// Those of these NUMA nodes that have CPUs (a device's locality may list HBM or GPU memory too).
std::vector<unsigned> nodes_with_cpus(const Topology& t, const std::vector<unsigned>& nodes);
// The NUMA node whose CPUs hold this PU, or nullptr.
const NumaNode* numa_of_pu(const Topology& t, unsigned pu);
// Whether an OS device name is an RDMA device (mlx5_0, hfi1_0, cxi0, efa_0, irdma0...).
bool is_rdma_device_name(const std::string& name);
// PCI class (class << 8 | subclass) of an InfiniBand adapter: 0x0207, or 0x0c06 that older
// Mellanox HCAs (ConnectX-2) report.
bool is_infiniband_class(uint32_t class_id);
// Each core's logical index (index into Topology::cores -> number) in hwloc's tree order, as
// lstopo numbers cores ("Core L#"): package by package, within a package NUMA domain by domain
// (sub-NUMA clusters, NPS), within those L3 by L3, then by first PU, each level ordered by its
// first PU. Slurm's gres.conf Cores= and its CPU distribution number cores this way, not by OS
// CPU number: on a node numbered round-robin they differ.
std::vector<unsigned> logical_core_ids(const Topology& t);
// Each PU's core, for lookups that would otherwise test every core against a set (a 16384-PU
// node has 8192 cores): built once per topology, then each query costs the set's members.
class CoreIndex {
 public:
  explicit CoreIndex(const Topology& t);
  // Indexes into t.cores of the cores with a PU in `cpus`, ordered by their lowest PU in `cpus`.
  std::vector<size_t> touching(const CpuSet& cpus) const;
  // Those whose PUs all lie in `cpus`, in t.cores order.
  std::vector<size_t> within(const CpuSet& cpus) const;

 private:
  const Topology& m_t;
  std::vector<uint32_t> m_core_of;  // PU -> core index + 1; 0 for a PU of no core
};
// The GPU with this PCI address, or nullptr.
const Gpu* find_gpu(const Topology& t, const std::string& pci);
// The PCI addresses of the GPUs whose locality includes NUMA node `node`, in the topology's order.
std::vector<std::string> gpus_on_node(const Topology& t, unsigned node);
// The GPU whose UUID ("GPU-...") or one of whose MIG instances' UUIDs ("MIG-...") is `uuid`, in
// any case; nullptr when none is.
const Gpu* find_gpu_by_uuid(const Topology& t, const std::string& uuid);
// The NUMA nodes (OS indexes) whose CPUs the set touches.
std::vector<unsigned> nodes_covering(const Topology& t, const CpuSet& cpus);
// Whether the topology has a GPU of that vendor (which GPU libraries to ask).
bool has_gpu_of(const Topology& t, Vendor v);
// The CUDA compute capability (major * 10 + minor: 90 for H100) of an NVIDIA PCI device ID, from
// its chip family's ID block; nullopt for an ID outside the known blocks.
std::optional<unsigned> nvidia_compute_capability(uint16_t device_id);

// How `other` differs from `machine` in what binding depends on: the PU set and the NUMA nodes
// (their OS indexes and CPUs). Empty when `other` describes the same machine, e.g. an admin's
// corrected copy of it with GPU locality filled in.
std::vector<std::string> machine_differences(const Topology& machine, const Topology& other);

// What a topology may describe (docs/cli.md, "Limits"): twice Linux's own ceilings (NR_CPUS
// is at most 8192, MAX_NUMNODES at most 1024), so every real machine fits, while a small hostile
// file cannot make gpubind allocate gigabytes (a CPU set reaching CPU 1048575 is 128 KiB, and a
// topology holds one per core).
inline constexpr unsigned kMaxCpuId = 16383;
inline constexpr unsigned kMaxNumaNodeId = 2047;
inline constexpr size_t kMaxDevices = 4096;  // GPUs, and NICs, each
inline constexpr unsigned kMaxGpuStacks = 16;   // Gpu::stacks
// The one-line reasons for a value past a limit, shared by validate and the loaders that check
// while reading.
std::string cpu_limit_problem(unsigned id);
std::string numa_limit_problem(unsigned id);
std::string device_limit_problem(size_t count, const char* what);

// Checks the invariants every loader must meet, the limits above included; returns the first
// violation.
Status validate(const Topology& t);

}  // namespace gpubind::topo
