#include "discover/classify.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace gpubind::discover {

namespace {
// On-board display controllers of servers: a BMC's VGA port, never a compute device.
bool is_onboard_vga(const PciIdentity& id) {
  if (id.vendor_id == 0x1a03) return true;  // ASPEED (AST2x00 BMC)
  if (id.vendor_id == 0x102b) return true;  // Matrox G200e/eW/eR (iLO, iDRAC)
  if (id.vendor_id == 0x19a2) return true;  // Emulex Pilot (HP iLO)
  if (id.vendor_id == 0x1002 && id.device_id == 0x515e) return true;  // ATI ES1000 (server boards)
  if (id.vendor_id == 0x1234 || id.vendor_id == 0x1b36 || id.vendor_id == 0x15ad) return true;  // QEMU/VMware VGA
  return false;
}
}  // namespace

bool is_gpu_class(uint32_t class_id) { return (class_id >> 8) == 0x03 || (class_id >> 8) == 0x12; }

DeviceRole classify(const PciIdentity& id) {
  if (!is_gpu_class(id.class_id)) {
    // Co-processor class 0b40 holds both NEC's Vector Engine (a compute card) and Intel's
    // QuickAssist (a crypto offload): only the former is a device a rank is bound to.
    if (id.class_id == 0x0b40 && id.vendor_id == 0x1bcf) return DeviceRole::gpu;
    // Ethernet 0200, other network 0280, InfiniBand.
    if (id.class_id == 0x0200 || id.class_id == 0x0280 || topo::is_infiniband_class(id.class_id)) return DeviceRole::nic;
    return DeviceRole::none;
  }
  if ((id.class_id >> 8) == 0x03) {  // a display controller: a GPU of a GPU vendor, not a BMC's VGA
    if (id.nvidia_driver_bound) return DeviceRole::gpu;
    if (is_onboard_vga(id)) return DeviceRole::none;
    if (id.vendor_id == 0x10de || id.vendor_id == 0x1002 || id.vendor_id == 0x8086) return DeviceRole::gpu;
    return DeviceRole::none;
  }
  return DeviceRole::gpu;  // processing accelerator (MI300X/MI300A, FPGAs, Gaudi)
}

void assign_gpu_indexes(std::vector<topo::Gpu>& gpus, const std::vector<bool>& has_index) {
  std::vector<size_t> order(gpus.size());
  std::iota(order.begin(), order.end(), 0);
  std::map<topo::Vendor, bool> vendor_all_indexed;
  for (size_t i = 0; i < gpus.size(); ++i) {
    bool indexed = i < has_index.size() && has_index[i];
    auto [it, inserted] = vendor_all_indexed.emplace(gpus[i].vendor, indexed);
    if (!inserted) it->second = it->second && indexed;
  }
  std::map<topo::Vendor, unsigned> next;
  std::vector<topo::Gpu> sorted;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (gpus[a].vendor != gpus[b].vendor) return gpus[a].vendor < gpus[b].vendor;
    return gpus[a].pci < gpus[b].pci;
  });
  for (size_t i : order) {
    topo::Gpu g = gpus[i];
    if (!vendor_all_indexed[g.vendor]) g.index = next[g.vendor]++;
    sorted.push_back(g);
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const topo::Gpu& a, const topo::Gpu& b) {
    if (a.vendor != b.vendor) return a.vendor < b.vendor;
    return a.index < b.index;
  });
  gpus = std::move(sorted);
}

void add_fabric_links(topo::Topology& t, const std::map<std::string, unsigned>& fabric) {
  for (auto a = fabric.begin(); a != fabric.end(); ++a)
    for (auto b = std::next(a); b != fabric.end(); ++b)
      if (!topo::find_link(t, a->first, b->first))
        t.links.push_back({a->first, b->first, topo::GpuLink::Kind::nvlink, std::min(a->second, b->second)});
}

void add_locality_warnings(topo::Topology& t) {
  for (const topo::Gpu& g : t.gpus)
    if (!g.numa)
      t.warnings.push_back("GPU " + std::to_string(g.index) + " (" + (g.pci.empty() ? "no PCI address" : g.pci) +
                           ") locality unknown: the source does not say which NUMA node it is attached to");
  for (const topo::Nic& n : t.nics)
    if (!n.numa)
      t.warnings.push_back("NIC " + (n.os_names.empty() ? n.pci : n.os_names.front()) +
                           " locality unknown: the source does not say which NUMA node it is attached to");
}

}  // namespace gpubind::discover
