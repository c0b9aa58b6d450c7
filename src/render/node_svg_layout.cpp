#include "render/node_svg_layout.hpp"

#include <algorithm>

#include "render/topo_text.hpp"
#include "util/strings.hpp"

namespace gpubind::render::svg_layout {

// Whether a NUMA node belongs to a package: as the source says, else by its CPUs.
bool in_package(const NumaNode& n, const topo::Package& pk) {
  return n.package ? *n.package == pk.os_index : n.cpus.intersects(pk.cpus);
}

Grid grid(const std::vector<std::pair<double, double>>& sizes, size_t per_row) {
  Grid g;
  double x = 0, y = 0, row_h = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i && i % per_row == 0) {
      y += row_h + kGap;
      x = row_h = 0;
    }
    g.at.push_back({x, y});
    x += sizes[i].first + kGap;
    row_h = std::max(row_h, sizes[i].second);
    g.w = std::max(g.w, x - kGap);
  }
  g.h = sizes.empty() ? 0 : y + row_h;
  return g;
}

std::string ranks_text(const std::vector<unsigned>& ranks) {
  if (ranks.empty()) return "";
  return (ranks.size() == 1 ? "rank " : "ranks ") + join_number_runs(ranks);
}

std::vector<unsigned> distinct_ranks(const Owners& o, const CpuSet& pus) {
  std::vector<unsigned> r;
  for (unsigned pu : pus.ids())
    if (pu < o.pu.size()) r.insert(r.end(), o.pu[pu].begin(), o.pu[pu].end());
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

L3Box make_l3(const Topology& t, const topo::CoreIndex& index, const CpuSet& cpus, const std::string& title, const Owners& o) {
  L3Box b;
  b.title = title;
  std::vector<const topo::Core*> cores;
  for (size_t c : index.within(cpus)) cores.push_back(&t.cores[c]);
  b.collapsed = cores.size() > kCollapseAbove;
  for (const topo::Core* c : cores) {
    Cell cell{c->pus, join_numbers(c->pus.ids()), distinct_ranks(o, c->pus)};
    if (b.collapsed && !b.cells.empty() && b.cells.back().ranks == cell.ranks) {
      b.cells.back().pus |= c->pus;
      continue;
    }
    b.cells.push_back(std::move(cell));
  }
  if (b.collapsed)
    for (Cell& c : b.cells) c.label = "PUs " + c.pus.to_list() + (c.ranks.empty() ? "" : "  " + o.text(c.ranks));
  double widest = 30;
  for (const Cell& c : b.cells) widest = std::max(widest, text_width(c.label) + 10);
  b.per_row = b.collapsed ? 1 : std::min(kCoresPerRow, std::max<size_t>(1, b.cells.size()));
  size_t rows = (b.cells.size() + b.per_row - 1) / b.per_row;
  b.w = std::max(text_width(b.title) + 2 * kPad, 2 * kPad + double(b.per_row) * (widest + kGap) - kGap);
  b.h = kHeader + double(rows) * (kCellH + kGap) + kPad - kGap;
  b.cell_w = b.collapsed ? b.w - 2 * kPad : widest;  // a collapsed run spans the box
  return b;
}

// The node a device hangs from (its first NUMA node with CPUs), or nullopt when unknown.
std::optional<unsigned> device_node(const Topology& t, const topo::PciDevice& d) {
  if (!d.numa) return std::nullopt;
  auto nodes = topo::nodes_with_cpus(t, *d.numa);
  if (!nodes.empty()) return nodes.front();
  return d.numa->empty() ? std::nullopt : std::optional<unsigned>(d.numa->front());
}

// Devices in PCIe order, so those behind one switch sit side by side.
void sort_devices(std::vector<Device>& devices) {
  std::stable_sort(devices.begin(), devices.end(), [](const Device& a, const Device& b) {
    return std::tie(a.pci().pcie_path, a.pci().pci) < std::tie(b.pci().pcie_path, b.pci().pci);
  });
}

// Where each device goes, in rows of kDevicesPerRow: devices behind one PCIe switch (the same
// path below the host bridge) stay in one row when they fit in one.

std::vector<Slot> device_slots(const std::vector<Device>& devices) {
  std::vector<Slot> out;
  size_t row = 0, col = 0;
  for (size_t i = 0; i < devices.size();) {
    size_t j = i + 1;
    while (j < devices.size() && devices[j].pci().pcie_path == devices[i].pci().pcie_path) ++j;
    size_t group = j - i;
    if (col > 0 && col + group > kDevicesPerRow && group <= kDevicesPerRow) row++, col = 0;
    for (; i < j; ++i) {
      if (col == kDevicesPerRow) row++, col = 0;
      out.push_back({row, col++});
    }
  }
  return out;
}

double devices_width(const std::vector<Device>& devices) {
  size_t cols = 0;
  for (const Slot& s : device_slots(devices)) cols = std::max(cols, s.col + 1);
  return cols ? double(cols) * (kDevW + kGap) - kGap : 0;
}


double devices_height(const std::vector<Device>& devices) {
  auto slots = device_slots(devices);
  return slots.empty() ? 0 : double(slots.back().row + 1) * kDevRow;
}

NodeBox make_node(const Topology& t, const topo::CoreIndex& index, const NumaNode& n, const Owners& o) {
  NodeBox b;
  b.node = &n;
  for (const topo::L3Domain& l3 : t.l3_domains) {
    CpuSet cpus = l3.cpus & n.cpus;
    if (cpus.empty()) continue;
    b.l3s.push_back(make_l3(t, index, cpus, "L3 " + (l3.size_bytes ? human_bytes(l3.size_bytes) : std::string("")), o));
  }
  if (b.l3s.empty()) b.l3s.push_back(make_l3(t, index, n.cpus, "cores", o));
  for (const Gpu& g : t.gpus)
    if (device_node(t, g) == n.os_index) b.devices.push_back({&g, nullptr});
  for (const Nic& nic : t.nics)
    if (device_node(t, nic) == n.os_index) b.devices.push_back({nullptr, &nic});
  sort_devices(b.devices);
  std::vector<std::pair<double, double>> sizes;
  for (const L3Box& l3 : b.l3s) sizes.push_back({l3.w, l3.h});
  b.l3_grid = grid(sizes, kL3PerRow);
  b.w = 2 * kPad + std::max({b.l3_grid.w, devices_width(b.devices), 200.0});
  b.h = kHeader + b.l3_grid.h + (b.devices.empty() ? 0 : kGap + devices_height(b.devices)) + kPad;
  return b;
}

std::vector<PackageBox> make_packages(const Topology& t, const Owners& o) {
  std::vector<PackageBox> out;
  const topo::CoreIndex index(t);
  auto add_nodes = [&](PackageBox& p, auto belongs) {
    for (const NumaNode& n : t.numa_nodes) {
      if (!belongs(n)) continue;
      if (n.cpus.empty()) p.memory_nodes.push_back(&n);
      else p.nodes.push_back(make_node(t, index, n, o));
    }
  };
  for (const topo::Package& pk : t.packages) {
    PackageBox p;
    p.title = "Package " + std::to_string(pk.os_index);
    add_nodes(p, [&](const NumaNode& n) { return in_package(n, pk); });
    out.push_back(std::move(p));
  }
  PackageBox loose;  // nodes no package claims (memory-only nodes without a package)
  loose.title = "Outside any package";
  add_nodes(loose, [&](const NumaNode& n) {
    for (const PackageBox& p : out) {
      for (const NodeBox& b : p.nodes)
        if (b.node == &n) return false;
      for (const NumaNode* m : p.memory_nodes)
        if (m == &n) return false;
    }
    return true;
  });
  if (!loose.nodes.empty() || !loose.memory_nodes.empty()) out.push_back(std::move(loose));
  for (PackageBox& p : out) {
    std::vector<std::pair<double, double>> sizes;
    for (const NodeBox& n : p.nodes) sizes.push_back({n.w, n.h});
    p.node_grid = grid(sizes, kNodesPerRow);
    double mem_w = double(p.memory_nodes.size()) * (kDevW + kGap);
    p.w = 2 * kPad + std::max({p.node_grid.w, mem_w, 120.0});
    p.h = kHeader + p.node_grid.h + (p.memory_nodes.empty() ? 0 : kGap + 40) + kPad;
  }
  return out;
}

std::string cell_title(const Cell& c, const Owners& o) {
  return "PUs " + c.pus.to_list() + (c.ranks.empty() ? (o.overlay && !o.overlay->by_rank ? ": no process" : ": no rank") : ": " + o.text(c.ranks));
}

}  // namespace gpubind::render::svg_layout
