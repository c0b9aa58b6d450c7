#include "topo/topology.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>

#include "util/strings.hpp"

namespace gpubind::topo {

const char* to_string(PathClass c) {
  switch (c) {
    case PathClass::PIX: return "PIX";
    case PathClass::PXB: return "PXB";
    case PathClass::PHB: return "PHB";
    case PathClass::NODE: return "NODE";
    case PathClass::SYS: return "SYS";
  }
  return "SYS";
}

const char* to_string(Vendor v) {
  switch (v) {
    case Vendor::nvidia: return "nvidia";
    case Vendor::amd: return "amd";
    case Vendor::intel: return "intel";
    case Vendor::other: return "other";
  }
  return "other";
}

Vendor vendor_from_string(const std::string& s) {
  if (s == "nvidia") return Vendor::nvidia;
  if (s == "amd") return Vendor::amd;
  if (s == "intel") return Vendor::intel;
  return Vendor::other;
}

Vendor vendor_from_pci_id(uint16_t vendor_id) {
  switch (vendor_id) {
    case 0x10de: return Vendor::nvidia;
    case 0x1002: return Vendor::amd;
    case 0x8086: return Vendor::intel;
    default: return Vendor::other;
  }
}

// Devices in different NUMA localities talk across the socket interconnect (SYS); in the same
// locality but under different host bridges they cross the host's internal fabric (NODE). Below
// one host bridge the lowest common bridge decides: the host bridge itself is PHB; a switch the
// two reach through at most one port each is PIX; anything deeper is PXB.
PathClass path_class(const PciDevice& a, const PciDevice& b) {
  bool same_root = !a.pcie_path.empty() && !b.pcie_path.empty() && a.pcie_path[0] == b.pcie_path[0];
  if (!same_root) {
    bool same_locality = a.numa && b.numa && *a.numa == *b.numa;
    return same_locality ? PathClass::NODE : PathClass::SYS;
  }
  size_t common = 0;
  while (common < a.pcie_path.size() && common < b.pcie_path.size() &&
         a.pcie_path[common] == b.pcie_path[common])
    ++common;
  if (common == 1) return PathClass::PHB;
  size_t below_a = a.pcie_path.size() - common;
  size_t below_b = b.pcie_path.size() - common;
  return (below_a <= 1 && below_b <= 1) ? PathClass::PIX : PathClass::PXB;
}

const NumaNode* find_numa(const Topology& t, unsigned os_index) {
  for (const NumaNode& n : t.numa_nodes)
    if (n.os_index == os_index) return &n;
  return nullptr;
}

std::optional<unsigned> package_of_node(const Topology& t, unsigned os_index) {
  const NumaNode* n = find_numa(t, os_index);
  return n ? n->package : std::nullopt;
}

std::optional<unsigned> numa_distance(const Topology& t, unsigned a, unsigned b) {
  if (t.distances.size() != t.numa_nodes.size()) return std::nullopt;
  std::optional<size_t> ia, ib;
  for (size_t i = 0; i < t.numa_nodes.size(); ++i) {
    if (t.numa_nodes[i].os_index == a) ia = i;
    if (t.numa_nodes[i].os_index == b) ib = i;
  }
  if (!ia || !ib) return std::nullopt;
  return t.distances[*ia][*ib];
}

const GpuLink* find_link(const Topology& t, const std::string& a, const std::string& b) {
  for (const GpuLink& l : t.links)
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return &l;
  return nullptr;
}

void sort_links(std::vector<GpuLink>& links) {
  std::sort(links.begin(), links.end(), [](const GpuLink& x, const GpuLink& y) { return std::tie(x.a, x.b) < std::tie(y.a, y.b); });
}

std::vector<unsigned> cpu_numa_nodes(const Topology& t) {
  std::vector<unsigned> out;
  for (const NumaNode& n : t.numa_nodes)
    if (!n.cpus.empty()) out.push_back(n.os_index);
  return out;
}

CpuSet cpus_of_nodes(const Topology& t, const std::vector<unsigned>& nodes) {
  CpuSet s;
  for (unsigned n : nodes)
    if (const NumaNode* node = find_numa(t, n)) s |= node->cpus;
  return s;
}

std::vector<unsigned> nodes_with_cpus(const Topology& t, const std::vector<unsigned>& nodes) {
  std::vector<unsigned> out;
  for (unsigned n : nodes)
    if (const NumaNode* node = find_numa(t, n); node && !node->cpus.empty()) out.push_back(n);
  return out;
}

bool has_gpu_of(const Topology& t, Vendor v) {
  return std::any_of(t.gpus.begin(), t.gpus.end(), [&](const Gpu& g) { return g.vendor == v; });
}

const Gpu* find_gpu(const Topology& t, const std::string& pci) {
  for (const Gpu& g : t.gpus)
    if (g.pci == pci) return &g;
  return nullptr;
}

std::vector<std::string> gpus_on_node(const Topology& t, unsigned node) {
  std::vector<std::string> out;
  for (const Gpu& g : t.gpus)
    if (g.numa && std::find(g.numa->begin(), g.numa->end(), node) != g.numa->end()) out.push_back(g.pci);
  return out;
}

const Gpu* find_gpu_by_uuid(const Topology& t, const std::string& uuid) {
  std::string want = to_lower(uuid);
  for (const Gpu& g : t.gpus) {
    if (!g.uuid.empty() && to_lower(g.uuid) == want) return &g;
    for (const std::string& m : g.mig_uuids)
      if (to_lower(m) == want) return &g;
  }
  return nullptr;
}

std::vector<unsigned> nodes_covering(const Topology& t, const CpuSet& cpus) {
  std::vector<unsigned> out;
  for (const NumaNode& n : t.numa_nodes)
    if (n.cpus.intersects(cpus)) out.push_back(n.os_index);
  return out;
}

const NumaNode* numa_of_pu(const Topology& t, unsigned pu) {
  for (const NumaNode& n : t.numa_nodes)
    if (n.cpus.test(pu)) return &n;
  return nullptr;
}

bool is_rdma_device_name(const std::string& name) {
  for (const char* p : {"mlx", "hfi", "qib", "cxi", "efa", "rdmap", "bnxt_re", "irdma", "ionic", "erdma", "i40iw"})
    if (name.starts_with(p)) return true;
  return false;
}

bool is_infiniband_class(uint32_t class_id) { return class_id == 0x0207 || class_id == 0x0c06; }

std::vector<std::string> machine_differences(const Topology& machine, const Topology& other) {
  std::vector<std::string> out;
  if (machine.cpus != other.cpus) out.push_back("PUs " + other.cpus.to_list() + ", this machine has " + machine.cpus.to_list());
  auto nodes = [](const Topology& t) {
    std::vector<std::string> v;
    for (const NumaNode& n : t.numa_nodes)
      if (!n.cpus.empty()) v.push_back(std::to_string(n.os_index) + ":" + n.cpus.to_list());
    return v;
  };
  std::vector<std::string> mine = nodes(machine), theirs = nodes(other);
  if (mine != theirs)
    out.push_back("NUMA nodes with CPUs " + (theirs.empty() ? std::string("(none)") : join(theirs, " ")) +
                  ", this machine has " + (mine.empty() ? std::string("(none)") : join(mine, " ")));
  return out;
}

std::string cpu_limit_problem(unsigned id) {
  return "CPU " + std::to_string(id) + " is beyond gpubind's limit of CPU " + std::to_string(kMaxCpuId) +
         " (Linux's NR_CPUS is at most 8192)";
}

std::string numa_limit_problem(unsigned id) {
  return "NUMA node " + std::to_string(id) + " is beyond gpubind's limit of node " + std::to_string(kMaxNumaNodeId) +
         " (Linux's MAX_NUMNODES is at most 1024)";
}

std::string device_limit_problem(size_t count, const char* what) {
  return std::to_string(count) + " " + what + " is more than gpubind's limit of " + std::to_string(kMaxDevices);
}

Status validate(const Topology& t) {
  if (t.cpus.empty()) return Error{"topology", "it has no processing units (PUs)"};
  if (*t.cpus.last() > kMaxCpuId) return Error{"topology", cpu_limit_problem(*t.cpus.last())};
  for (const NumaNode& n : t.numa_nodes)
    if (n.os_index > kMaxNumaNodeId) return Error{"topology", numa_limit_problem(n.os_index)};
  auto device_nodes = [](const PciDevice& d, const std::vector<unsigned>& more) -> Status {
    std::vector<unsigned> all = d.numa.value_or(std::vector<unsigned>{});
    all.insert(all.end(), more.begin(), more.end());
    for (unsigned m : all)
      if (m > kMaxNumaNodeId) return Error{"topology", numa_limit_problem(m)};
    return Ok{};
  };
  for (const Gpu& g : t.gpus)
    if (Status s = device_nodes(g, g.memory_numa); !s) return s;
  for (const Nic& n : t.nics)
    if (Status s = device_nodes(n, {}); !s) return s;
  if (t.gpus.size() > kMaxDevices) return Error{"topology", device_limit_problem(t.gpus.size(), "GPUs")};
  if (t.nics.size() > kMaxDevices) return Error{"topology", device_limit_problem(t.nics.size(), "NICs")};
  if (!t.allowed_cpus.is_subset_of(t.cpus)) return Error{"topology", "allowed CPUs are not a subset of its CPUs"};
  if (t.allowed_cpus.empty()) return Error{"topology", "none of its CPUs is allowed"};
  // Every PU in exactly one core: the planner hands out whole cores and counts them.
  CpuSet in_cores;
  for (const Core& c : t.cores) {
    if (c.pus.empty() || !c.pus.is_subset_of(t.cpus)) return Error{"topology", "a core has no PUs or PUs outside the machine"};
    if (c.pus.intersects(in_cores)) return Error{"topology", "PU(s) " + (c.pus & in_cores).to_list() + " belong to two cores"};
    in_cores |= c.pus;
  }
  if (!t.cores.empty() && in_cores != t.cpus)
    return Error{"topology", "PU(s) " + (t.cpus - in_cores).to_list() + " belong to no core"};
  CpuSet in_nodes;
  std::vector<unsigned> node_ids;
  for (const NumaNode& n : t.numa_nodes) {
    if (!n.cpus.is_subset_of(t.cpus))
      return Error{"topology", "NUMA node " + std::to_string(n.os_index) + " has CPUs outside the machine"};
    if (n.cpus.intersects(in_nodes))
      return Error{"topology", "CPU(s) " + (n.cpus & in_nodes).to_list() + " belong to two NUMA nodes"};
    if (std::find(node_ids.begin(), node_ids.end(), n.os_index) != node_ids.end())
      return Error{"topology", "NUMA node " + std::to_string(n.os_index) + " is listed twice"};
    in_nodes |= n.cpus;
    node_ids.push_back(n.os_index);
  }
  // GPUs are named by index (CUDA_VISIBLE_DEVICES, Slurm) and by PCI address: both unique.
  for (size_t i = 0; i < t.gpus.size(); ++i)
    for (size_t j = i + 1; j < t.gpus.size(); ++j) {
      if (t.gpus[i].vendor == t.gpus[j].vendor && t.gpus[i].index == t.gpus[j].index)
        return Error{"topology", std::string(to_string(t.gpus[i].vendor)) + " GPU index " + std::to_string(t.gpus[i].index) +
                                     " is used twice"};
      if (!t.gpus[i].pci.empty() && t.gpus[i].pci == t.gpus[j].pci)
        return Error{"topology", "two GPUs at PCI address " + t.gpus[i].pci};
    }
  if (!t.distances.empty()) {
    if (t.distances.size() != t.numa_nodes.size()) return Error{"topology", "distance matrix size does not match the NUMA nodes"};
    for (const auto& row : t.distances)
      if (row.size() != t.numa_nodes.size()) return Error{"topology", "distance matrix is not square"};
  }
  // Names come from files and end up in shell exports, JSON and terminals: well-formed UTF-8
  // without control characters, or the topology is refused.
  auto check_text = [](const std::string& text, const std::string& what) -> Status {
    if (std::string why = text_problem(text); !why.empty())
      return Error{"topology", what + " '" + one_line(text) + "' has " + why};
    return Ok{};
  };
  if (Status s = check_text(t.hostname, "the host name"); !s) return s;
  for (const NumaNode& n : t.numa_nodes)
    if (Status s = check_text(n.subtype, "NUMA node " + std::to_string(n.os_index) + "'s kind"); !s) return s;
  auto check_dev = [&](const PciDevice& d) -> Status {
    std::string dev = "device " + one_line(d.pci);
    if (Status s = check_text(d.pci, "a device's PCI address"); !s) return s;
    if (Status s = check_text(d.name, dev + " name"); !s) return s;
    for (const std::string& os : d.os_names)
      if (Status s = check_text(os, dev + " OS device name"); !s) return s;
    for (const std::string& hop : d.pcie_path)
      if (Status s = check_text(hop, dev + " PCIe path"); !s) return s;
    if (d.numa)
      for (unsigned n : *d.numa)
        if (!find_numa(t, n))
          return Error{"topology", "device " + d.pci + " refers to unknown NUMA node " + std::to_string(n)};
    return Ok{};
  };
  for (const Gpu& g : t.gpus) {
    if (Status s = check_dev(g); !s) return s;
    if (Status s = check_text(g.uuid, "GPU " + one_line(g.pci) + " UUID"); !s) return s;
    for (const std::string& m : g.mig_uuids)
      if (Status s = check_text(m, "GPU " + one_line(g.pci) + " MIG id"); !s) return s;
  }
  for (const Nic& n : t.nics)
    if (Status s = check_dev(n); !s) return s;
  return Ok{};
}

namespace {

// Indexes into Topology::cores in hwloc's tree order (logical_core_ids).
std::vector<size_t> cores_in_tree_order(const Topology& t) {
  static constexpr unsigned kNone = ~0u;
  auto first_of = [](const CpuSet& s) { return s.first().value_or(kNone); };
  // Each PU's package (the last that holds it), NUMA node's and L3's first PU (the first that
  // holds it), filled set by set: the cost is the PUs, not cores times domains.
  unsigned top = t.cpus.last().value_or(0);
  for (const Core& c : t.cores) top = std::max(top, c.pus.last().value_or(0));
  std::vector<unsigned> pkg_of(top + 1, unsigned(t.packages.size())), node_of(top + 1, kNone), l3_of(top + 1, kNone);
  auto fill = [&](std::vector<unsigned>& of, const CpuSet& cpus, unsigned value, bool first_wins) {
    for (unsigned pu : cpus.ids())
      if (pu <= top && (!first_wins || of[pu] == kNone)) of[pu] = value;
  };
  for (size_t p = 0; p < t.packages.size(); ++p) fill(pkg_of, t.packages[p].cpus, unsigned(p), false);
  for (const NumaNode& n : t.numa_nodes) fill(node_of, n.cpus, first_of(n.cpus), true);
  for (const L3Domain& l : t.l3_domains) fill(l3_of, l.cpus, first_of(l.cpus), false);
  std::vector<std::array<unsigned, 4>> key(t.cores.size());
  for (size_t i = 0; i < t.cores.size(); ++i) {
    unsigned pu = first_of(t.cores[i].pus);
    key[i] = pu == kNone ? std::array<unsigned, 4>{unsigned(t.packages.size()), kNone, kNone, pu}
                         : std::array<unsigned, 4>{pkg_of[pu], node_of[pu], l3_of[pu], pu};
  }
  std::vector<size_t> order(t.cores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  return order;
}

}  // namespace

CoreIndex::CoreIndex(const Topology& t) : m_t(t) {
  for (size_t i = 0; i < t.cores.size(); ++i)
    for (unsigned pu : t.cores[i].pus.ids()) {
      if (pu >= m_core_of.size()) m_core_of.resize(pu + 1, 0);
      m_core_of[pu] = uint32_t(i + 1);
    }
}

std::vector<size_t> CoreIndex::touching(const CpuSet& cpus) const {
  std::vector<size_t> out;
  std::vector<bool> seen(m_t.cores.size());
  for (unsigned pu : cpus.ids()) {
    if (pu >= m_core_of.size() || m_core_of[pu] == 0) continue;
    size_t core = m_core_of[pu] - 1;
    if (!seen[core]) out.push_back(core);
    seen[core] = true;
  }
  return out;
}

std::vector<size_t> CoreIndex::within(const CpuSet& cpus) const {
  std::vector<size_t> out = touching(cpus);
  std::erase_if(out, [&](size_t c) { return !m_t.cores[c].pus.is_subset_of(cpus); });
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<unsigned> logical_core_ids(const Topology& t) {
  std::vector<size_t> order = cores_in_tree_order(t);
  std::vector<unsigned> id(t.cores.size());
  for (size_t i = 0; i < order.size(); ++i) id[order[i]] = unsigned(i);
  return id;
}

}  // namespace gpubind::topo
