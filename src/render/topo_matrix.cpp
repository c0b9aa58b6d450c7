#include <algorithm>
#include <cctype>
#include <utility>

#include "render/table.hpp"
#include "render/topo_text.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

using namespace topo;

namespace {

std::string link_label(const GpuLink& l) {
  if (l.kind == GpuLink::Kind::xgmi) return "XGMI";
  return l.count ? "NV" + std::to_string(l.count) : "NV";
}

// The RDMA device name nvidia-smi orders NICs by ("mlx5_3"), "" when the NIC has none.
std::string rdma_name(const Nic& n) {
  for (const std::string& o : n.os_names)
    if (is_rdma_device_name(o)) return o;
  return "";
}

// "mlx5_2" before "mlx5_10": the text before the trailing number, then the number.
std::pair<std::string, unsigned long> natural_key(const std::string& s) {
  size_t end = s.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(s[end - 1]))) --end;
  return {s.substr(0, end), end < s.size() ? std::stoul(s.substr(end)) : 0};
}

// From an NCCL/RCCL file a path through the CPU is PHB or NODE: the format has no host bridges.
bool host_bridges_unknown(const PciDevice& a, const PciDevice& b) {
  return !a.pcie_path.empty() && !b.pcie_path.empty() && a.pcie_path[0].starts_with("cpu:") && b.pcie_path[0].starts_with("cpu:");
}

}  // namespace

std::string topo_matrix(const Topology& t) {
  std::vector<const PciDevice*> devs;
  std::vector<std::string> head{""};
  // GPU labels are the vendor's ordinals, unless several vendors would repeat them (GPU0 twice):
  // then GPUs are numbered in matrix order and listed below.
  bool mixed = std::any_of(t.gpus.begin(), t.gpus.end(), [&](const Gpu& g) { return g.vendor != t.gpus[0].vendor; });
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    devs.push_back(&t.gpus[i]);
    head.push_back("GPU" + std::to_string(mixed ? unsigned(i) : t.gpus[i].index));
  }
  // NICs in nvidia-smi's order: by RDMA device (mlx5_0, mlx5_1, ... mlx5_10), then the others by PCI.
  std::vector<const Nic*> nics;
  for (const Nic& n : t.nics) nics.push_back(&n);
  std::stable_sort(nics.begin(), nics.end(), [](const Nic* a, const Nic* b) {
    std::string ra = rdma_name(*a), rb = rdma_name(*b);
    if (ra.empty() != rb.empty()) return !ra.empty();
    return !ra.empty() && natural_key(ra) < natural_key(rb);
  });
  for (size_t i = 0; i < nics.size(); ++i) {
    devs.push_back(nics[i]);
    head.push_back("NIC" + std::to_string(i));
  }
  bool unknown_bridges = false;
  head.insert(head.end(), {"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"});
  TextTable m(head);
  for (size_t r = 0; r < devs.size(); ++r) {
    bool is_gpu = r < t.gpus.size();
    std::vector<std::string> row{head[r + 1]};
    for (size_t c = 0; c < devs.size(); ++c) {
      if (r == c) {
        row.push_back(" X");
        continue;
      }
      const GpuLink* l = (is_gpu && c < t.gpus.size()) ? find_link(t, devs[r]->pci, devs[c]->pci) : nullptr;
      PathClass pc = path_class(*devs[r], *devs[c]);
      bool ambiguous = !l && pc == PathClass::PHB && host_bridges_unknown(*devs[r], *devs[c]);
      unknown_bridges = unknown_bridges || ambiguous;
      row.push_back(l ? link_label(*l) : ambiguous ? "PHB?" : to_string(pc));
    }
    if (is_gpu) {
      const Gpu& g = t.gpus[r];
      row.push_back(cpus_or_unknown(g.cpus));
      row.push_back(numa_or_unknown(g.numa));
      row.push_back(g.memory_numa.empty() ? "N/A" : join_numbers(g.memory_numa));
    }
    m.add(row);
  }
  std::string out = m.str();
  out +=
      "\nLegend:\n"
      "  X     the device itself\n"
      "  SYS   across PCIe and the link between sockets/NUMA nodes (UPI, Infinity Fabric, X-Bus)\n"
      "  NODE  across PCIe and two host bridges of the same NUMA node\n"
      "  PHB   across PCIe and one host bridge (the CPU's root complex)\n"
      "  PXB   across several PCIe switches, without reaching a host bridge\n"
      "  PIX   across one PCIe switch at most\n"
      "  NV#   over # bonded NVLinks\n"
      "  XGMI  over AMD xGMI (Infinity Fabric) links\n";
  if (unknown_bridges)
    out += "  PHB?  through the CPU, one host bridge or two (NODE): the source (an NCCL/RCCL file) has no host bridges\n";
  if (mixed) {
    out += "\nGPUs:\n";
    for (size_t i = 0; i < t.gpus.size(); ++i)
      out += "  GPU" + std::to_string(i) + ": " + to_string(t.gpus[i].vendor) + " " + std::to_string(t.gpus[i].index) + " (" +
             t.gpus[i].pci + (t.gpus[i].name.empty() ? "" : ", " + t.gpus[i].name) + ")\n";
  }
  if (!nics.empty()) {
    out += "\nNICs:\n";
    for (size_t i = 0; i < nics.size(); ++i) out += "  NIC" + std::to_string(i) + ": " + nic_label(*nics[i]) + "\n";
  }
  return out;
}

}  // namespace gpubind::render
