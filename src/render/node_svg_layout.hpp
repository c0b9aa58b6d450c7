#pragma once
// The layout of the node drawing (node_svg.cpp draws it; node_svg_overlay.cpp makes the overlays):
// sizes, rank colours, and the boxes of packages, NUMA nodes, L3 domains, cores and devices, with
// who uses each. Internal to src/render.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "render/node_svg.hpp"
#include "topo/topology.hpp"
#include "util/strings.hpp"

namespace gpubind::render::svg_layout {

using topo::Gpu;
using topo::Nic;
using topo::NumaNode;
using topo::Topology;

// Sizes in pixels; text is 12 px sans-serif, about 7 px a character.
constexpr double kChar = 7.0, kPad = 8, kHeader = 20, kGap = 6, kCellH = 20, kDevW = 170, kDevH = 48;
constexpr size_t kCoresPerRow = 8, kCollapseAbove = 64, kDevicesPerRow = 4, kL3PerRow = 4, kNodesPerRow = 2;
// Packages side by side while the row stays this narrow.
constexpr double kMaxRowWidth = 1600;
// A row of devices: a box and room for a switch bracket under it.
constexpr double kDevRow = kDevH + kGap + 12;

// Rank colours: a strong one for strokes and text, a light one for fills; they repeat after 12.
struct Colour {
  const char* strong;
  const char* light;
};
constexpr Colour kRankColours[] = {{"#1f77b4", "#c6dbef"}, {"#d62728", "#f4c7c7"}, {"#2ca02c", "#c7e9c0"},
                                   {"#9467bd", "#dadaeb"}, {"#ff7f0e", "#fdd0a2"}, {"#8c564b", "#e3cbc5"},
                                   {"#e377c2", "#f7d4ec"}, {"#17becf", "#c4ecf1"}, {"#bcbd22", "#ecedb5"},
                                   {"#7f7f7f", "#dddddd"}, {"#393b79", "#c5c6e6"}, {"#637939", "#d7e3bf"}};
inline const Colour& colour(unsigned rank) { return kRankColours[rank % (sizeof kRankColours / sizeof *kRankColours)]; }

inline double text_width(const std::string& s) { return double(s.size()) * kChar; }

// Boxes of the given sizes placed left to right, `per_row` to a row, `kGap` apart; each row as
// tall as its tallest box. Their offsets from the grid's corner, and the grid's size.
struct Grid {
  std::vector<std::pair<double, double>> at;
  double w = 0, h = 0;
};

// "rank 0", "ranks 0-3".
std::string ranks_text(const std::vector<unsigned>& ranks);

// Who uses what, from the overlay: the entries (by id) of each PU, GPU, NIC and memory node.
struct Owners {
  std::vector<std::vector<unsigned>> pu;  // indexed by PU
  std::map<unsigned, std::vector<unsigned>> mem;
  std::map<std::string, std::vector<unsigned>> gpu, nic;
  const Overlay* overlay = nullptr;

  explicit Owners(const Overlay* o) : overlay(o) {
    if (!o) return;
    for (const Overlay::Entry& e : o->entries) {
      for (unsigned cpu : e.cpus.ids()) {
        if (cpu >= pu.size()) pu.resize(cpu + 1);
        pu[cpu].push_back(e.id);
      }
      for (const std::string& g : e.gpus) gpu[g].push_back(e.id);
      for (const std::string& n : e.nics) nic[n].push_back(e.id);
      for (unsigned n : e.mem_nodes) mem[n].push_back(e.id);
    }
  }
  static std::vector<unsigned> of(const std::map<unsigned, std::vector<unsigned>>& m, unsigned k) {
    auto it = m.find(k);
    return it == m.end() ? std::vector<unsigned>{} : it->second;
  }
  static std::vector<unsigned> of(const std::map<std::string, std::vector<unsigned>>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::vector<unsigned>{} : it->second;
  }
  const Overlay::Entry* entry(unsigned id) const {
    if (overlay)
      for (const Overlay::Entry& e : overlay->entries)
        if (e.id == id) return &e;
    return nullptr;
  }
  // "rank 0", "ranks 0-3" for a plan's ranks; the entries' names ("pid 2000") otherwise.
  std::string text(const std::vector<unsigned>& ids) const {
    if (!overlay || overlay->by_rank) return ranks_text(ids);
    std::vector<std::string> names;
    for (unsigned id : ids)
      if (const Overlay::Entry* e = entry(id)) names.push_back(e->name);
    return join(names, ", ");
  }
  // Whether an entry with a finding owns any of these.
  bool any_bad(const std::vector<unsigned>& ids) const {
    for (unsigned id : ids)
      if (const Overlay::Entry* e = entry(id); e && e->bad) return true;
    return false;
  }
};

// One drawn cell: a core (its PUs), or a run of cores with the same rank when collapsed.
struct Cell {
  CpuSet pus;
  std::string label;
  std::vector<unsigned> ranks;  // distinct ranks on its PUs
};

struct L3Box {
  std::string title;
  std::vector<Cell> cells;
  bool collapsed = false;
  size_t per_row = 1;   // cells in a row
  double cell_w = 0;    // every cell's width
  double w = 0, h = 0;
};

struct Device {
  const Gpu* gpu = nullptr;
  const Nic* nic = nullptr;
  const topo::PciDevice& pci() const { return gpu ? static_cast<const topo::PciDevice&>(*gpu) : *nic; }
};

struct NodeBox {
  const NumaNode* node = nullptr;
  std::vector<L3Box> l3s;
  Grid l3_grid;
  std::vector<Device> devices;
  double w = 0, h = 0;
};

struct PackageBox {
  std::string title;
  std::vector<NodeBox> nodes;
  Grid node_grid;
  std::vector<const NumaNode*> memory_nodes;
  double w = 0, h = 0;
};

// A device's place in its node's rows of devices.
struct Slot {
  size_t row = 0, col = 0;
};

// The layout's steps (node_svg_layout.cpp says what each does).
bool in_package(const NumaNode& n, const topo::Package& pk);
Grid grid(const std::vector<std::pair<double, double>>& sizes, size_t per_row);
std::vector<unsigned> distinct_ranks(const Owners& o, const CpuSet& pus);
L3Box make_l3(const Topology& t, const topo::CoreIndex& index, const CpuSet& cpus, const std::string& title, const Owners& o);
std::optional<unsigned> device_node(const Topology& t, const topo::PciDevice& d);
void sort_devices(std::vector<Device>& devices);
std::vector<Slot> device_slots(const std::vector<Device>& devices);
double devices_width(const std::vector<Device>& devices);
double devices_height(const std::vector<Device>& devices);
NodeBox make_node(const Topology& t, const topo::CoreIndex& index, const NumaNode& n, const Owners& o);
std::vector<PackageBox> make_packages(const Topology& t, const Owners& o);
std::string cell_title(const Cell& c, const Owners& o);

}  // namespace gpubind::render::svg_layout
