#include "discover/nccl_loader.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "discover/classify.hpp"
#include "discover/xml.hpp"
#include "util/strings.hpp"

namespace gpubind::discover {

using topo::Topology;

namespace {

std::optional<std::string> attr(const XmlElement& n, const char* name) {
  const std::string* v = n.attr(name);
  return v ? std::optional<std::string>(*v) : std::nullopt;
}

bool is(const XmlElement& n, const char* name) { return n.name == name; }

struct RawLink {
  std::string from, to;
  unsigned count;
  bool to_switch;
  topo::GpuLink::Kind kind;
};

struct Walker {
  Topology& topo;
  uint16_t default_gpu_vendor;
  std::vector<bool> has_index;
  std::vector<RawLink> raw_links;
  std::optional<std::string> error;

  // An attribute's number, when it fits T; a number that does not is an error (never wrapped:
  // vendor 0x1ffff is not 0xffff, numaid 2^32 is not node 0), text that is not one gives nullopt.
  template <typename T>
  std::optional<T> number(const XmlElement& e, const char* name, int base = 10) {
    auto text = attr(e, name);
    if (!text) return std::nullopt;
    auto v = parse_uint(*text, base);
    if (!v) return std::nullopt;
    if (*v > uint64_t(std::numeric_limits<T>::max())) {
      if (!error) error = "<" + e.name + " " + name + "=\"" + *text + "\">: larger than " + std::to_string(std::numeric_limits<T>::max());
      return std::nullopt;
    }
    return T(*v);
  }

  void device_locality(topo::PciDevice& d, std::optional<unsigned> numa, const std::optional<CpuSet>& cpus) {
    if (numa) d.numa = std::vector<unsigned>{*numa};
    d.cpus = cpus;
  }

  void add_nets(const XmlElement& nic, std::vector<std::string>& names) {
    for (const XmlElement& net : nic.children)
      if (is(net, "net"))
        if (auto name = attr(net, "name")) names.push_back(*name);
  }

  void walk_pci(const XmlElement& pci, std::vector<std::string> path, std::optional<unsigned> numa,
                const std::optional<CpuSet>& cpus) {
    std::string busid = to_lower(attr(pci, "busid").value_or(""));
    auto cls = attr(pci, "class");
    PciIdentity id;
    if (attr(pci, "vendor")) id.vendor_id = number<uint16_t>(pci, "vendor", 16).value_or(0);
    if (attr(pci, "device")) id.device_id = number<uint16_t>(pci, "device", 16).value_or(0);
    if (cls) id.class_id = number<uint32_t>(pci, "class", 16).value_or(0) >> 8;  // "0x030200": class/subclass/progif

    const XmlElement* gpu = nullptr;
    const XmlElement* nic = nullptr;
    bool has_pci_children = false;
    for (const XmlElement& c : pci.children) {
      if (is(c, "gpu")) gpu = &c;
      if (is(c, "nic")) nic = &c;
      if (is(c, "pci")) has_pci_children = true;
    }
    // NCCL's own dumps omit vendor ids on some clouds (Azure): the format describes only the
    // GPUs of its dialect, NVIDIA for version 1 (NCCL) and AMD for version 2 (RCCL).
    bool vendorless_gpu = !attr(pci, "vendor") && is_gpu_class(id.class_id);
    if (vendorless_gpu) id.vendor_id = default_gpu_vendor;
    DeviceRole role = classify(id);
    if (gpu || vendorless_gpu) role = DeviceRole::gpu;
    if (nic) role = DeviceRole::nic;
    // AWS's p5 file lists its EFA devices as class-less leaves under the switches; NCCL treats
    // such leaves as network devices and so does gpubind.
    if (!cls && !has_pci_children && !gpu && !nic) role = DeviceRole::nic;

    if (has_pci_children) {
      std::vector<std::string> below = path;
      below.push_back(busid);
      for (const XmlElement& c : pci.children)
        if (is(c, "pci")) walk_pci(c, below, numa, cpus);
    }
    if (role == DeviceRole::none) return;

    topo::PciDevice d;
    d.pci = busid;
    d.vendor_id = id.vendor_id;
    d.device_id = id.device_id;
    d.class_id = id.class_id;
    d.pcie_path = path;
    device_locality(d, numa, cpus);
    if (role == DeviceRole::gpu) {
      topo::Gpu g;
      static_cast<topo::PciDevice&>(g) = d;
      g.vendor = topo::vendor_from_pci_id(id.vendor_id);
      std::optional<unsigned> dev = gpu ? number<unsigned>(*gpu, "dev") : std::nullopt;
      has_index.push_back(dev.has_value());
      g.index = unsigned(dev.value_or(0));
      if (gpu)
        for (const XmlElement& l : gpu->children) {
          bool nv = is(l, "nvlink"), xg = is(l, "xgmi");
          if (!nv && !xg) continue;
          std::string target = to_lower(attr(l, "target").value_or(""));
          unsigned count = number<unsigned>(l, "count").value_or(0);
          uint64_t tclass = number<uint32_t>(l, "tclass", 16).value_or(0);
          if (target.empty() || target == busid) continue;
          raw_links.push_back({busid, target, count, tclass == 0x068000,
                               nv ? topo::GpuLink::Kind::nvlink : topo::GpuLink::Kind::xgmi});
        }
      topo.gpus.push_back(g);
    } else {
      topo::Nic n;
      static_cast<topo::PciDevice&>(n) = d;
      if (nic) add_nets(*nic, n.os_names);
      topo.nics.push_back(n);
    }
  }

  void walk_cpu(const XmlElement& cpu) {
    std::optional<unsigned> numa = number<unsigned>(cpu, "numaid");
    std::optional<CpuSet> cpus;
    if (auto a = attr(cpu, "affinity")) {
      auto mask = CpuSet::parse_mask(*a);
      if (!mask) {
        error = "cpu numaid=" + attr(cpu, "numaid").value_or("?") + ": " + mask.error().message();
        return;
      }
      cpus = *mask;
    }
    if (numa && !topo::find_numa(topo, *numa)) {
      topo::NumaNode node;
      node.os_index = *numa;
      if (cpus) node.cpus = *cpus;
      topo.numa_nodes.push_back(node);
    } else if (numa && cpus) {
      // A second <cpu> block of the same node: its CPUs are that node's too, not in no node. NCCL
      // writes one block per NUMA node, so a file with two was edited by hand: said, not silent.
      for (topo::NumaNode& n : topo.numa_nodes)
        if (n.os_index == *numa) {
          topo.warnings.push_back("NCCL/RCCL topology file: two <cpu numaid=\"" + std::to_string(*numa) + "\"> blocks (CPUs " +
                                  n.cpus.to_list() + " and " + cpus->to_list() + "): taken together as node " + std::to_string(*numa) +
                                  "'s CPUs; NCCL writes one block per NUMA node, so check the file");
          n.cpus |= *cpus;
        }
    }
    if (cpus) topo.cpus |= *cpus;
    std::vector<std::string> path{"cpu:" + (numa ? std::to_string(*numa) : std::string("?"))};
    for (const XmlElement& c : cpu.children) {
      if (is(c, "pci")) walk_pci(c, path, numa, cpus);
      if (is(c, "nic")) {  // a NIC without a PCI address (Azure's eth0)
        topo::Nic n;
        n.pcie_path = path;
        device_locality(n, numa, cpus);
        add_nets(c, n.os_names);
        topo.nics.push_back(n);
      }
    }
  }

  // NVLink through NVSwitch is listed as links to the switch (add_fabric_links pairs the GPUs).
  void resolve_links() {
    std::set<std::string> gpu_ids;
    for (const auto& g : topo.gpus) gpu_ids.insert(g.pci);
    std::map<std::string, unsigned> fabric;
    for (const RawLink& l : raw_links) {
      if (l.to_switch) fabric[l.from] += l.count;
      else if (gpu_ids.count(l.to) && !topo::find_link(topo, l.from, l.to))
        topo.links.push_back({std::min(l.from, l.to), std::max(l.from, l.to), l.kind, l.count});
    }
    add_fabric_links(topo, fabric);
    topo::sort_links(topo.links);
  }
};

}  // namespace

// NCCL/RCCL files give each NUMA node's CPUs but no cores. Linux numbers the second hardware
// thread of every core after all first threads, so when every node's CPUs are two equal blocks
// exactly half the machine apart (0-47,96-143 and 48-95,144-191 on 192 CPUs), CPU n and n+half
// are SMT siblings of one core. Any other shape cannot be told apart from a machine without SMT:
// each CPU is its own core and the topology says its cores are unknown.
void infer_cores(Topology& topo) {
  unsigned total = topo.cpus.count();
  unsigned half = total / 2;
  bool pairs = total >= 2 && total % 2 == 0 && topo.cpus == CpuSet::range(0, total - 1) && !topo.numa_nodes.empty();
  for (const topo::NumaNode& n : topo.numa_nodes) {
    if (!pairs || n.cpus.empty()) continue;
    unsigned first = *n.cpus.first(), count = n.cpus.count();
    pairs = count % 2 == 0 && first < half && n.cpus == (CpuSet::range(first, first + count / 2 - 1) |
                                                         CpuSet::range(first + half, first + half + count / 2 - 1));
  }
  if (pairs) {
    for (unsigned pu = 0; pu < half; ++pu) topo.cores.push_back({CpuSet::of({pu, pu + half})});
    topo.warnings.push_back("NCCL/RCCL topology file: no packages, cores or memory sizes; every NUMA node's CPUs are two equal "
                            "blocks " + std::to_string(half) + " apart, so CPU n and n+" + std::to_string(half) +
                            " are taken as SMT siblings of one core (Linux numbers second threads after all first threads)");
    return;
  }
  for (unsigned pu : topo.cpus.ids()) topo.cores.push_back({CpuSet::of({pu})});
  topo.cores_known = false;
  topo.warnings.push_back("NCCL/RCCL topology file: no packages, cores, SMT siblings or memory sizes; each CPU is treated as its "
                          "own core, so two ranks' CPUs may be SMT siblings of one core (core sharing cannot be ruled out)");
}

Result<Topology> load_nccl_xml(const std::string& text, const std::string& origin) {
  auto doc = parse_xml(text);
  if (!doc) return Error{origin, "malformed XML (" + doc.error().message() + ")"};
  const XmlElement& root = *doc;
  if (!is(root, "system")) return Error{origin, "not an NCCL topology (no <system> root element)"};

  Topology topo;
  topo.origin = origin;
  uint16_t dialect_vendor = attr(root, "version").value_or("1") == "2" ? 0x1002 : 0x10de;
  Walker w{topo, dialect_vendor, {}, {}, std::nullopt};
  for (const XmlElement& c : root.children)
    if (is(c, "cpu")) w.walk_cpu(c);
  if (w.error) return Error{origin, *w.error};
  w.resolve_links();

  std::sort(topo.numa_nodes.begin(), topo.numa_nodes.end(),
            [](const topo::NumaNode& a, const topo::NumaNode& b) { return a.os_index < b.os_index; });
  topo.allowed_cpus = topo.cpus;
  infer_cores(topo);
  assign_gpu_indexes(topo.gpus, w.has_index);
  std::sort(topo.nics.begin(), topo.nics.end(), [](const topo::Nic& a, const topo::Nic& b) {
    return std::tie(a.pci, a.os_names) < std::tie(b.pci, b.os_names);
  });
  add_locality_warnings(topo);
  // An NCCL_TOPO_FILE often lists PCI devices only: NCCL finds the GPUs' NVLinks itself. Without
  // any <gpu> element the links are unknown, not absent.
  if (topo.gpus.size() >= 2 && std::none_of(w.has_index.begin(), w.has_index.end(), [](bool b) { return b; }))
    topo.warnings.push_back("NCCL/RCCL topology file: no <gpu> elements, so NVLink/xGMI links between the GPUs are unknown: "
                            "GPU-to-GPU classes are PCIe paths only, and --gpus-per-rank groups GPUs by PCIe alone");
  if (Status s = topo::validate(topo); !s) return Error{origin, s.error().why};
  return topo;
}

}  // namespace gpubind::discover
