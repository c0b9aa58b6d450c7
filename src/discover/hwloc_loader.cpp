#include "discover/hwloc_loader.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <set>

#include "discover/classify.hpp"
#include "discover/sysfs_pci.hpp"
#include "sys/fsroot.hpp"
#include "sys/process.hpp"
#include "topo/json.hpp"
#include "util/strings.hpp"
#include "sys/affinity.hpp"
#include "sys/environment.hpp"

namespace gpubind::discover {

using topo::Topology;

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

CpuSet to_cpuset(hwloc_const_bitmap_t b) {
  CpuSet s;
  if (!b) return s;
  if (hwloc_bitmap_weight(b) < 0) return s;  // infinite set: never produced for cpusets we read
  unsigned i;
  hwloc_bitmap_foreach_begin(i, b) { s.set(i); }
  hwloc_bitmap_foreach_end();
  return s;
}

std::vector<unsigned> to_ids(hwloc_const_bitmap_t b) { return to_cpuset(b).ids(); }

std::string bus_id(unsigned domain, unsigned bus, unsigned dev, unsigned func) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, dev, func);
  return buf;
}

std::string pci_bus_id(hwloc_obj_t o) {
  const auto& p = o->attr->pcidev;
  return bus_id(p.domain, p.bus, p.dev, p.func);
}

// Linux gives every CPU exactly one home NUMA node; hwloc gives each NUMA node the cpuset of the
// object it is attached to, so an HBM or PMem node shares its DRAM sibling's CPUs. The home of a
// PU is the candidate with the smallest cpuset, then a plain DRAM node (no subtype), then the
// lowest OS index; the other nodes that cover it are CPU-less in the Linux sense.
std::map<unsigned, CpuSet> home_cpus_by_node(hwloc_topology_t t) {
  std::map<unsigned, CpuSet> home;
  std::vector<hwloc_obj_t> nodes;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));) {
    nodes.push_back(n);
    home[n->os_index];
  }
  hwloc_const_cpuset_t all = hwloc_topology_get_complete_cpuset(t);
  unsigned pu;
  hwloc_bitmap_foreach_begin(pu, all) {
    hwloc_obj_t best = nullptr;
    for (hwloc_obj_t n : nodes) {
      if (!n->cpuset || !hwloc_bitmap_isset(n->cpuset, pu)) continue;
      if (!best) {
        best = n;
        continue;
      }
      int wn = hwloc_bitmap_weight(n->cpuset), wb = hwloc_bitmap_weight(best->cpuset);
      bool n_plain = !n->subtype, b_plain = !best->subtype;
      if (wn < wb || (wn == wb && n_plain && !b_plain) || (wn == wb && n_plain == b_plain && n->os_index < best->os_index))
        best = n;
    }
    if (best) home[best->os_index].set(pu);
  }
  hwloc_bitmap_foreach_end();
  return home;
}

std::vector<std::string> pcie_path_of(hwloc_obj_t dev) {
  std::vector<std::string> up;
  hwloc_obj_t o = dev->parent;
  for (; o && (o->type == HWLOC_OBJ_BRIDGE || o->type == HWLOC_OBJ_PCI_DEVICE); o = o->parent) {
    if (o->type != HWLOC_OBJ_BRIDGE) continue;
    if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "hb:%04x:%02x", unsigned(o->attr->bridge.downstream.pci.domain),
                    unsigned(o->attr->bridge.downstream.pci.secondary_bus));
      up.emplace_back(buf);
    } else {
      up.push_back(pci_bus_id(o));
    }
  }
  // No host bridge in the capture (some hwloc 1.x exports): the attachment object stands in.
  if (up.empty() || !up.back().starts_with("hb:")) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "hb:%s#%u", o ? hwloc_obj_type_string(o->type) : "none", o ? o->logical_index : 0);
    up.emplace_back(buf);
  }
  std::reverse(up.begin(), up.end());
  return up;
}

// The tree a live or gathered input is read from; null for XML and synthetic inputs (or a tree
// that cannot be opened).
std::unique_ptr<sys::FsRoot> input_root(const HwlocInput& in) {
  std::string root = in.kind == HwlocInput::Kind::fsroot ? in.value : in.kind == HwlocInput::Kind::live ? "/" : "";
  if (root.empty()) return nullptr;
  auto fs = sys::open_fsroot(root);
  return fs ? std::move(*fs) : nullptr;
}

// GPUs the NVIDIA driver lists (/proc/driver/nvidia/gpus/<busid>) count even when a capture
// stripped the PCI vendor ids (hwloc's POWER9 test tree).
std::set<std::string> nvidia_driver_gpus(const HwlocInput& in) {
  std::set<std::string> out;
  auto fs = input_root(in);
  if (!fs) return out;
  auto names = fs->list("proc/driver/nvidia/gpus");
  if (!names) return out;
  for (const std::string& n : *names) out.insert(to_lower(n));
  return out;
}

struct DeviceLocality {
  std::optional<std::vector<unsigned>> numa;
  std::optional<CpuSet> cpus;
};

// The device's locality is that of its first non-I/O ancestor. Attached to the Machine root on a
// machine with several NUMA nodes means the source did not know (numa_node -1, old captures).
DeviceLocality locality_of(hwloc_topology_t t, hwloc_obj_t dev, bool multi_numa) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, dev);
  DeviceLocality l;
  if (!anc || (anc->type == HWLOC_OBJ_MACHINE && multi_numa)) return l;
  l.numa = to_ids(anc->nodeset);
  l.cpus = to_cpuset(anc->cpuset);
  return l;
}

std::string info(hwloc_obj_t o, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(o, name);
  return v ? v : "";
}

void add_links(hwloc_topology_t t, Topology& topo, const std::map<hwloc_obj_t, std::string>& gpu_of_obj) {
  // hwloc's NVML backend reports NVLink as a bandwidth matrix between GPU OS devices and, on
  // NVSwitch systems, the switches' PCI devices; RSMI reports xGMI hops between GPU OS devices.
  unsigned nr = 16;
  std::vector<hwloc_distances_s*> dists(nr);
  if (hwloc_distances_get(t, &nr, dists.data(), 0, 0) != 0) return;
  dists.resize(std::min<size_t>(nr, dists.size()));
  for (hwloc_distances_s* d : dists) {
    const char* name = hwloc_distances_get_name(t, d);
    std::string n = name ? name : "";
    auto gpu = [&](unsigned i) -> std::string {
      auto it = gpu_of_obj.find(d->objs[i]);
      return it == gpu_of_obj.end() ? "" : it->second;
    };
    if (n == "NVLinkBandwidth") {
      bool by25 = true, by20 = true;
      for (unsigned i = 0; i < d->nbobjs * d->nbobjs; ++i)
        if (d->values[i]) {
          by25 = by25 && d->values[i] % 25000 == 0;
          by20 = by20 && d->values[i] % 20000 == 0;
        }
      uint64_t per_link = by25 ? 25000 : by20 ? 20000 : 0;
      auto links_of = [&](uint64_t bw) -> unsigned { return per_link ? unsigned(bw / per_link) : 0; };
      std::map<std::string, unsigned> switch_links;  // GPU -> links into the NVSwitch fabric
      for (unsigned i = 0; i < d->nbobjs; ++i) {
        std::string a = gpu(i);
        if (a.empty()) continue;
        for (unsigned j = 0; j < d->nbobjs; ++j) {
          uint64_t bw = d->values[i * d->nbobjs + j];
          if (!bw || i == j) continue;
          std::string b = gpu(j);
          if (b.empty()) {
            if (d->objs[j]->type == HWLOC_OBJ_PCI_DEVICE) switch_links[a] += links_of(bw);
          } else if (a < b) {
            topo.links.push_back({a, b, topo::GpuLink::Kind::nvlink, links_of(bw)});
          }
        }
      }
      add_fabric_links(topo, switch_links);
    } else if (n == "XGMIHops") {
      for (unsigned i = 0; i < d->nbobjs; ++i)
        for (unsigned j = i + 1; j < d->nbobjs; ++j) {
          std::string a = gpu(i), b = gpu(j);
          if (!a.empty() && !b.empty() && d->values[i * d->nbobjs + j] == 1)
            topo.links.push_back({std::min(a, b), std::max(a, b), topo::GpuLink::Kind::xgmi, 1});
        }
    }
  }
  for (hwloc_distances_s* d : dists) hwloc_distances_release(t, d);
  topo::sort_links(topo.links);
}

// The stacks (tiles) of an Intel GPU as hwloc's levelzero backend shows them under its PCI
// device: in Level Zero's COMPOSITE hierarchy one "zeN" OS device with info
// LevelZeroSubdevices (and "zeN.K" children), in FLAT (the default since 2023) and COMBINED one
// "zeN" per stack, each without sub-devices. 0 where the capture has no Level Zero device.
struct LevelZeroStacks {
  unsigned roots = 0, subdevices = 0;
  // Whether `c` is a Level Zero device (counted), which is no OS device file of the GPU's.
  bool count(hwloc_obj_t c) {
    bool level_zero = (c->subtype && std::string_view(c->subtype) == "LevelZero") || !info(c, "LevelZeroDriverIndex").empty();
    if (!level_zero) return false;
    ++roots;
    unsigned sub = 0;
    if (auto n = parse_uint(info(c, "LevelZeroSubdevices"))) sub = unsigned(std::min<uint64_t>(*n, topo::kMaxGpuStacks + 1));
    unsigned children = 0;
    for (hwloc_obj_t k = c->io_first_child; k; k = k->next_sibling) children += k->type == HWLOC_OBJ_OS_DEVICE;
    sub = std::max(sub, children);
    subdevices = std::max(subdevices, sub);
    return true;
  }
  unsigned stacks() const { return subdevices ? subdevices : roots; }
};

// Data Center GPU Max (Ponte Vecchio, PCI 8086:0bd0-0bdb): the Intel GPUs with more than one
// stack (the 1100s have one, which a capture without Level Zero cannot tell apart either).
bool is_multi_stack_intel_gpu(const PciIdentity& id) {
  return id.vendor_id == 0x8086 && id.device_id >= 0x0bd0 && id.device_id <= 0x0bdb;
}

// Collects GPUs and NICs from either device source, classified the same way.
struct DeviceSink {
  Topology& topo;
  std::vector<bool> has_index;                       // per GPU: index fixed by a vendor library
  std::map<hwloc_obj_t, std::string> gpu_of_obj;     // hwloc objects (PCI and OS devices) -> GPU bus id

  void add(const PciIdentity& id, topo::PciDevice dev, const std::string& uuid, std::optional<unsigned> rsmi_index,
           unsigned stacks = 0) {
    DeviceRole role = classify(id);
    if (role == DeviceRole::gpu) {
      topo::Gpu g;
      static_cast<topo::PciDevice&>(g) = std::move(dev);
      g.vendor = id.nvidia_driver_bound ? topo::Vendor::nvidia : topo::vendor_from_pci_id(id.vendor_id);
      g.uuid = uuid;
      if (stacks >= 1 && stacks <= topo::kMaxGpuStacks) g.stacks = stacks;
      // ROCm enumerates AMD GPUs in its own (KFD) order, which hwloc's rsmi index records.
      has_index.push_back(rsmi_index.has_value() && g.vendor == topo::Vendor::amd);
      g.index = rsmi_index.value_or(0);
      topo.gpus.push_back(std::move(g));
    } else if (role == DeviceRole::nic) {
      topo::Nic nic;
      static_cast<topo::PciDevice&>(nic) = std::move(dev);
      topo.nics.push_back(std::move(nic));
    }
  }
};

void add_hwloc_devices(hwloc_topology_t t, const HwlocInput& in, DeviceSink& sink) {
  bool multi_numa = cpu_numa_nodes(sink.topo).size() > 1;
  std::set<std::string> nv_bound = nvidia_driver_gpus(in);
  std::vector<std::string> stacks_unknown;  // Intel GPU Max without Level Zero devices
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_pcidev(t, o));) {
    PciIdentity id{o->attr->pcidev.vendor_id, o->attr->pcidev.device_id, o->attr->pcidev.class_id,
                   nv_bound.count(pci_bus_id(o)) > 0};
    DeviceRole role = classify(id);
    if (role == DeviceRole::none) continue;
    topo::PciDevice dev;
    dev.pci = pci_bus_id(o);
    dev.vendor_id = id.vendor_id;
    dev.device_id = id.device_id;
    dev.class_id = id.class_id;
    dev.name = info(o, "PCIDevice");
    if (dev.name.empty() && o->name) dev.name = o->name;
    DeviceLocality loc = locality_of(t, o, multi_numa);
    dev.numa = loc.numa;
    dev.cpus = loc.cpus;
    dev.pcie_path = pcie_path_of(o);
    std::string uuid, runtime_model;
    std::optional<unsigned> rsmi_index;
    LevelZeroStacks ze;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
      if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name || ze.count(c)) continue;
      dev.os_names.emplace_back(c->name);
      // The model NVML or ROCm SMI reports (the nvml*/rsmi* OS device's GPUModel) is the name
      // Slurm's AutoDetect types a GPU by; the PCI database's name is not ("TU104GL [Tesla T4]").
      if (std::string_view(c->name).starts_with("nvml") || std::string_view(c->name).starts_with("rsmi"))
        if (runtime_model.empty()) runtime_model = info(c, "GPUModel");
      if (uuid.empty()) uuid = info(c, "NVIDIAUUID");
      if (uuid.empty()) uuid = info(c, "AMDUUID");
      if (dev.name.empty()) dev.name = info(c, "GPUModel");
      std::string cn = c->name;
      if (cn.starts_with("rsmi") && parse_uint(cn.substr(4))) rsmi_index = unsigned(*parse_uint(cn.substr(4)));
      if (role == DeviceRole::gpu) sink.gpu_of_obj[c] = dev.pci;
    }
    if (!runtime_model.empty()) dev.name = runtime_model;
    std::sort(dev.os_names.begin(), dev.os_names.end());
    if (role == DeviceRole::gpu) sink.gpu_of_obj[o] = dev.pci;
    if (role == DeviceRole::gpu && !ze.stacks() && is_multi_stack_intel_gpu(id)) stacks_unknown.push_back(dev.pci);
    sink.add(id, std::move(dev), uuid, rsmi_index, ze.stacks());
  }
  if (!stacks_unknown.empty())
    sink.topo.warnings.push_back("Intel Data Center GPU Max " + join(stacks_unknown, ", ") +
                                 ": this capture does not show their stacks (no Level Zero devices: hwloc ran without its "
                                 "levelzero backend), so each is taken as one stack and ZE_AFFINITY_MASK entries read as "
                                 "whole GPUs, while in Level Zero's default FLAT hierarchy each names one stack; capture "
                                 "with hwloc's levelzero backend, or give \"stacks\" in a gpubind JSON topology");
}

// Live devices from sysfs. hwloc places an I/O device at the smallest object covering its
// local_cpulist; doing the same here keeps both paths' answers identical (the corpus test
// checks them against each other on the gathered trees).
void add_sysfs_devices(hwloc_topology_t t, const std::string& root_dir, DeviceSink& sink) {
  auto root = sys::open_fsroot(root_dir);
  if (!root) return;
  auto devices = scan_sysfs_pci(**root);
  if (!devices) {
    sink.topo.warnings.push_back("PCI devices not read: " + devices.error().message());
    return;
  }
  bool multi_numa = cpu_numa_nodes(sink.topo).size() > 1;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (const SysfsPciDevice& s : *devices) {
    PciIdentity id{s.vendor_id, s.device_id, s.class_id, s.nvidia_driver_bound};
    if (classify(id) == DeviceRole::none) continue;
    topo::PciDevice dev;
    dev.pci = s.pci;
    dev.vendor_id = s.vendor_id;
    dev.device_id = s.device_id;
    dev.class_id = s.class_id;
    dev.name = s.name;
    dev.os_names = s.os_names;
    dev.pcie_path = s.pcie_path;
    hwloc_obj_t obj = nullptr;
    if (s.local_cpus) {
      hwloc_bitmap_zero(set);
      for (unsigned c : s.local_cpus->ids()) hwloc_bitmap_set(set, c);
      hwloc_bitmap_and(set, set, hwloc_topology_get_complete_cpuset(t));
      if (!hwloc_bitmap_iszero(set)) obj = hwloc_get_obj_covering_cpuset(t, set);
    }
    if (obj && !(obj->type == HWLOC_OBJ_MACHINE && multi_numa)) {
      dev.numa = to_ids(obj->nodeset);
      dev.cpus = to_cpuset(obj->cpuset);
    } else if (!multi_numa && !sink.topo.numa_nodes.empty()) {
      // One NUMA node: every device is local to it whatever the firmware said.
      hwloc_obj_t r = hwloc_get_root_obj(t);
      dev.numa = to_ids(r->nodeset);
      dev.cpus = to_cpuset(r->cpuset);
    }
    sink.add(id, std::move(dev), s.uuid, std::nullopt, s.stacks);
  }
  hwloc_bitmap_free(set);
}

// The NUMA node holding each NVIDIA GPU's own memory, where the driver onlined it as one (GH200 and
// GB200 without CDMM, POWER9 with NVLink): /proc/driver/nvidia/gpus/<busid>/numa_status says
// "Node: N" (-1, or no file, where the GPU's memory is not a node); and a node hwloc kept
// (HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES, or a file written so) has subtype "GPUMemory" and the GPU's
// "PCIBusID". Bus id -> nodes.
std::map<std::string, std::set<unsigned>> gpu_memory_nodes(hwloc_topology_t t, const HwlocInput& in) {
  std::map<std::string, std::set<unsigned>> out;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));)
    if (n->subtype && std::string_view(n->subtype) == "GPUMemory")
      if (std::string bus = to_lower(info(n, "PCIBusID")); !bus.empty()) out[bus].insert(n->os_index);
  auto fs = input_root(in);
  if (!fs) return out;
  auto names = fs->list("proc/driver/nvidia/gpus");
  if (!names) return out;
  for (const std::string& bus : *names) {
    auto text = fs->read("proc/driver/nvidia/gpus/" + bus + "/numa_status");
    if (!text) continue;
    auto node = parse_uint(key_value(*text, "Node"));  // "-1" is no number: not a node
    if (node && *node <= topo::kMaxNumaNodeId) out[to_lower(bus)].insert(unsigned(*node));
  }
  return out;
}

Topology convert(hwloc_topology_t t, const HwlocInput& in) {
  Topology topo;
  topo.origin = in.origin;
  hwloc_obj_t root = hwloc_get_root_obj(t);
  topo.hostname = info(root, "HostName");
  // The PUs in the topology: online ones. The complete cpuset also holds offline PUs, which have no
  // core and must not become PUs and one-PU cores of their own.
  topo.cpus = to_cpuset(hwloc_topology_get_topology_cpuset(t));
  topo.allowed_cpus = to_cpuset(hwloc_topology_get_allowed_cpuset(t)) & topo.cpus;

  for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, p));)
    topo.packages.push_back({p->os_index, to_cpuset(p->cpuset)});

  std::map<unsigned, CpuSet> home = home_cpus_by_node(t);
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));) {
    topo::NumaNode node;
    node.os_index = n->os_index;
    node.cpus = home[n->os_index];
    node.memory_bytes = n->attr ? n->attr->numanode.local_memory : 0;
    if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, n)) node.package = pkg->os_index;
    node.subtype = n->subtype ? n->subtype : "";
    topo.numa_nodes.push_back(node);
  }
  std::sort(topo.numa_nodes.begin(), topo.numa_nodes.end(),
            [](const topo::NumaNode& a, const topo::NumaNode& b) { return a.os_index < b.os_index; });

  // NUMA distances: the first complete NUMANode matrix hwloc has (ACPI SLIT on Linux).
  unsigned nr = 1;
  hwloc_distances_s* d = nullptr;
  if (hwloc_distances_get_by_type(t, HWLOC_OBJ_NUMANODE, &nr, &d, HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 && nr >= 1 && d) {
    std::map<unsigned, unsigned> pos;
    for (unsigned i = 0; i < d->nbobjs; ++i) pos[d->objs[i]->os_index] = i;
    bool complete = true;
    for (const auto& node : topo.numa_nodes) complete = complete && pos.count(node.os_index);
    if (complete) {
      for (const auto& a : topo.numa_nodes) {
        std::vector<unsigned> row;
        for (const auto& b : topo.numa_nodes) row.push_back(unsigned(d->values[pos[a.os_index] * d->nbobjs + pos[b.os_index]]));
        topo.distances.push_back(row);
      }
    }
    hwloc_distances_release(t, d);
  }

  for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_L3CACHE, c));)
    topo.l3_domains.push_back({to_cpuset(c->cpuset), c->attr->cache.size});

  CpuSet in_cores;
  for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_CORE, c));) {
    CpuSet pus = to_cpuset(c->cpuset);
    if (pus.empty()) continue;
    topo.cores.push_back({pus});
    in_cores |= pus;
  }
  // Sources without Core objects (some synthetic strings, trimmed captures): each PU is a core.
  for (unsigned pu : (topo.cpus - in_cores).ids()) topo.cores.push_back({CpuSet::of({pu})});
  std::sort(topo.cores.begin(), topo.cores.end(), [](const topo::Core& a, const topo::Core& b) { return a.pus < b.pus; });

  // I/O: GPUs and NICs with their locality and PCIe path. Live machines are read from sysfs
  // (see sysfs_pci.hpp for why); captures and XML come with hwloc's I/O objects.
  DeviceSink sink{topo, {}, {}};
  if (in.devices == HwlocInput::Devices::sysfs) add_sysfs_devices(t, in.kind == HwlocInput::Kind::live ? "/" : in.value, sink);
  else add_hwloc_devices(t, in, sink);
  std::vector<bool> has_index = sink.has_index;
  std::map<hwloc_obj_t, std::string> gpu_of_obj = sink.gpu_of_obj;
  assign_gpu_indexes(topo.gpus, has_index);
  std::map<std::string, std::set<unsigned>> memory_nodes = gpu_memory_nodes(t, in);
  for (topo::Gpu& g : topo.gpus)
    if (auto it = memory_nodes.find(g.pci); it != memory_nodes.end()) g.memory_numa.assign(it->second.begin(), it->second.end());
  std::sort(topo.nics.begin(), topo.nics.end(), [](const topo::Nic& a, const topo::Nic& b) { return a.pci < b.pci; });
  add_links(t, topo, gpu_of_obj);
  add_locality_warnings(topo);
  return topo;
}

}  // namespace

std::string hwloc_backend_version() {
  unsigned v = hwloc_get_api_version();
  return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
}

namespace {

// The directory of CPUID dumps hwloc-gather-topology saved in the gathered tree `root` ("cpuid";
// "hwloc-cpuid" in older hwloc), or "" when it saved none (not x86, or --no-cpuid).
std::string cpuid_dumps(const std::string& root) {
  for (const char* d : {"cpuid", "hwloc-cpuid"}) {
    std::string dir = root + "/" + d;
    if (sys::path_kind(dir + "/hwloc-cpuid-info") == sys::PathKind::file) return dir;
  }
  return "";
}

// The registers a PU's dump gives for `leaf` (subleaf 0): lines "MASK EAX EBX ECX EDX => EAX EBX
// ECX EDX" in hexadecimal, the subleaf in ECX, as hwloc-gather-topology writes them.
std::optional<std::vector<uint64_t>> dumped_leaf(const std::string& dump, uint64_t leaf) {
  auto hex = [](std::string_view v) { return std::strtoull(std::string(v).c_str(), nullptr, 16); };
  for (std::string_view line : split(dump, '\n')) {
    size_t arrow = line.find("=>");
    if (arrow == std::string_view::npos) continue;
    std::vector<std::string_view> in = split(trim(line.substr(0, arrow)), ' '), out = split(trim(line.substr(arrow + 2)), ' ');
    if (in.size() != 5 || out.size() != 4 || hex(in[1]) != leaf || hex(in[3]) != 0) continue;
    std::vector<uint64_t> regs;
    for (std::string_view r : out) regs.push_back(hex(r));
    return regs;
  }
  return std::nullopt;
}

// Settings hwloc reads only from the environment, for one load of `in`. They are applied in the
// child process that loads (sys::run_isolated), never in gpubind's own environment: nothing
// leaks into the command gpubind executes, and no other thread can see the environment change.
std::vector<sys::EnvChange> hwloc_environment(const HwlocInput& in, std::vector<std::string>& ignored,
                                               std::vector<std::string>& warnings) {
  std::vector<sys::EnvChange> env;
  // hwloc reads these from the environment and would then describe another machine (or a file)
  // as this one: gpubind chooses its source itself (--topology), so none of them applies.
  for (const char* v : {"HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT", "HWLOC_COMPONENTS", "HWLOC_THISSYSTEM",
                        "HWLOC_DUMPED_HWDATA_DIR", "HWLOC_CPUID_PATH"})
    if (sys::env_value(v)) {
      env.emplace_back(v, std::nullopt);
      ignored.push_back(v);
    }
  // NVIDIA GPU memory onlined as NUMA nodes (GH200, POWER9): hidden whatever the hwloc version
  // (2.11 keeps them by default on Grace) or the caller's environment, so a node's NUMA nodes
  // are the same everywhere; each GPU's memory node comes from the driver (gpu_memory_nodes).
  env.emplace_back("HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES", "0");
  // Never let hwloc print its own diagnostics: gpubind reports one line itself.
  env.emplace_back("HWLOC_HIDE_ERRORS", "2");
  // hwloc dlopens its plugins at the first topology: libxml2 (+ICU) for XML, OpenCL, X11/NVCtrl
  // and libpciaccess, ~4 ms of loading per process. gpubind needs none of them: hwloc's built-in
  // XML reader imports files, and its linux backend (or gpubind's sysfs scan) finds PCI devices.
  env.emplace_back("HWLOC_PLUGINS_BLACKLIST", "hwloc_xml_libxml,hwloc_opencl,hwloc_gl,hwloc_pci");
  // Live, hwloc takes the caches from CPUID where sysfs has no cache directories (cloud guests);
  // not from a CPUID that disagrees with the kernel (see cpuid_disagreement).
  if (in.kind == HwlocInput::Kind::live && sys::path_kind("/sys/devices/system/cpu/cpu0/cache/index0") == sys::PathKind::missing)
    if (std::string why = live_cpuid_disagreement(); !why.empty()) {
      env.emplace_back("HWLOC_COMPONENTS", "-x86");
      warnings.push_back("this machine's CPUID disagrees with its kernel (" + why +
                         ") and its sysfs has no cache directories: its caches (L3 domains) are unknown");
    }
  if (in.kind == HwlocInput::Kind::fsroot) {
    // A gathered tree: hwloc's linux backend reads it in place; nothing else may look at this host.
    env.emplace_back("HWLOC_FSROOT", in.value);
    env.emplace_back("HWLOC_DUMPED_HWDATA_DIR", in.value + "/var/run/hwloc");
    // hwloc-gather-topology also saves each x86 PU's CPUID answers (cpuid/). Live discovery on
    // x86 completes what sysfs lacks from CPUID (caches, on VMs without cpu*/cache), so the
    // capture is read the same way: its x86 backend on the dumps, never on this host's CPUID.
    std::string dumps = cpuid_dumps(in.value);
    std::string disagreement = dumps.empty() ? "" : cpuid_disagreement(in.value, dumps);
    if (!disagreement.empty())
      warnings.push_back("the capture's CPUID dumps disagree with it (" + disagreement +
                         "): caches are not taken from them, only from its /sys");
    if (!dumps.empty() && disagreement.empty()) {
      env.emplace_back("HWLOC_CPUID_PATH", dumps);
      env.emplace_back("HWLOC_COMPONENTS", "linux,x86,stop");
    } else {
      env.emplace_back("HWLOC_COMPONENTS", "linux,stop");
    }
  }
  return env;
}

// One load, in the calling process, whose environment hwloc_environment(in) describes.
Result<Topology> load_in_process(const HwlocInput& in) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return Error{"hwloc", "cannot initialise a topology"};
  TopologyPtr t(raw);
  hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);

  const std::string what = in.origin;
  if (in.devices == HwlocInput::Devices::sysfs) hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  switch (in.kind) {
    case HwlocInput::Kind::live:
      // Live: hwloc reads CPUs, caches and NUMA nodes only; PCI devices come from sysfs
      // (add_sysfs_devices), since hwloc's I/O discovery reads config space (~15-20 ms in a VM).
      break;
    case HwlocInput::Kind::xml_file:
      // hwloc parses either here or in load(), depending on which of its XML backends is
      // available; both failures read the same.
      if (hwloc_topology_set_xml(raw, in.value.c_str()) != 0)
        return Error{what, std::string("hwloc cannot load it as topology XML (") + std::strerror(errno) + ")"};
      break;
    case HwlocInput::Kind::synthetic:
      if (hwloc_topology_set_synthetic(raw, in.value.c_str()) != 0)
        return Error{what, "hwloc rejects this synthetic description (expected e.g. \"pack:2 numa:2 core:8 pu:2\")"};
      break;
    case HwlocInput::Kind::fsroot:
      break;  // HWLOC_FSROOT (hwloc_environment)
  }
  if (hwloc_topology_load(raw) != 0) {
    if (in.kind == HwlocInput::Kind::xml_file)
      return Error{what, std::string("hwloc cannot load it as topology XML (") + std::strerror(errno) + ")"};
    return Error{what, std::string("hwloc failed to load it (") + std::strerror(errno) + ")"};
  }
  Topology topo = convert(raw, in);
  if (Status s = topo::validate(topo); !s) return Error{what, s.error().why};
  return topo;
}

}  // namespace

namespace {

// Each processor's initial APIC id as the kernel recorded it at boot ("initial apicid" in
// /proc/cpuinfo), by processor number.
std::map<uint64_t, uint64_t> initial_apic_ids(const std::string& cpuinfo) {
  std::map<uint64_t, uint64_t> ids;
  std::optional<uint64_t> processor;
  for (std::string_view line : split(cpuinfo, '\n')) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "processor") processor = parse_uint(value);
    if (key == "initial apicid" && processor)
      if (auto id = parse_uint(value)) ids[*processor] = *id;
  }
  return ids;
}

std::string apic_disagreement(uint64_t cpu, uint64_t cpuid, uint64_t booted, const char* where) {
  if (cpuid == booted % 256) return "";
  return "PU " + std::to_string(cpu) + " has APIC id " + std::to_string(cpuid) + where + ", " + std::to_string(booted) +
         " in /proc/cpuinfo";
}

}  // namespace

std::string cpuid_disagreement(const std::string& root, const std::string& dumps) {
  auto cpuinfo = sys::read_file(root + "/proc/cpuinfo", 1 << 22);
  if (!cpuinfo) return "";
  for (const auto& [cpu, booted] : initial_apic_ids(*cpuinfo)) {
    auto dump = sys::read_file(dumps + "/pu" + std::to_string(cpu), 1 << 20);
    auto regs = dump ? dumped_leaf(*dump, 1) : std::nullopt;
    if (!regs) continue;
    if (std::string why = apic_disagreement(cpu, ((*regs)[1] >> 24) & 0xff, booted, " in its CPUID dump"); !why.empty()) return why;
  }
  return "";
}

std::string live_cpuid_disagreement() {
  auto here = sys::current_cpu_apic_id();
  if (!here) return "";
  auto cpuinfo = sys::read_file("/proc/cpuinfo", 1 << 22);
  if (!cpuinfo) return "";
  auto ids = initial_apic_ids(*cpuinfo);
  auto it = ids.find(here->first);
  return it == ids.end() ? "" : apic_disagreement(here->first, here->second, it->second, " by CPUID");
}

Result<Topology> hwloc_backend_load(const HwlocInput& in) {
  // Every load runs in a child process: hwloc's settings are environment variables (applied
  // there only, see hwloc_environment), and hwloc crashes on some malformed files (SIGSEGV,
  // SIGABRT), which must be one line of error, not the end of gpubind.
  std::vector<std::string> ignored, warnings;
  std::vector<sys::EnvChange> env = hwloc_environment(in, ignored, warnings);
  auto out = sys::run_isolated(
      [&]() -> std::string {
        auto t = load_in_process(in);
        if (!t) return "E" + t.error().what + '\n' + t.error().why;
        return "T" + topo::to_json(*t).dump();
      },
      env);
  if (!out) {
    if (in.kind == HwlocInput::Kind::xml_file)
      return Error{in.origin, "hwloc " + out.error().why + " reading this XML: the file is malformed"};
    return Error{in.origin, "hwloc " + out.error().why + " while discovering it"};
  }
  // Nothing may throw here: this runs inside the module, whose C++ runtime is its own.
  if (out->starts_with("E")) {
    size_t nl = out->find('\n');
    return Error{out->substr(1, nl - 1), nl == std::string::npos ? std::string() : out->substr(nl + 1)};
  }
  if (!out->starts_with("T")) return Error{in.origin, "hwloc's reader returned nothing (its result could not be passed back)"};
  nlohmann::json j = nlohmann::json::parse(std::string_view(*out).substr(1), nullptr, false);
  if (j.is_discarded()) return Error{in.origin, "hwloc's reader returned nothing usable"};
  auto topo = topo::from_json(j);
  if (topo) topo->warnings.insert(topo->warnings.end(), warnings.begin(), warnings.end());
  if (topo && in.kind == HwlocInput::Kind::live && !ignored.empty())
    topo->warnings.push_back(join(ignored, ", ") + " set in the environment: ignored for this machine's discovery (--topology "
                             "reads a file, a synthetic description or a gathered tree)");
  return topo;
}

}  // namespace gpubind::discover
