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

}  // namespace

std::string topo_matrix(const Topology& t) {
  std::vector<const PciDevice*> devs;
  std::vector<std::string> head{""};
  for (const Gpu& g : t.gpus) {
    devs.push_back(&g);
    head.push_back("GPU" + std::to_string(g.index));
  }
  for (size_t i = 0; i < t.nics.size(); ++i) {
    devs.push_back(&t.nics[i]);
    head.push_back("NIC" + std::to_string(i));
  }
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
      row.push_back(l ? link_label(*l) : to_string(path_class(*devs[r], *devs[c])));
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
  if (!t.nics.empty()) {
    out += "\nNICs:\n";
    for (size_t i = 0; i < t.nics.size(); ++i) {
      out += "  NIC" + std::to_string(i) + ": " + nic_label(t.nics[i]) + "\n";
    }
  }
  return out;
}

}  // namespace gpubind::render
