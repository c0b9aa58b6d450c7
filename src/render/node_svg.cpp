#include "render/node_svg.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "check/check.hpp"
#include "plan/compare.hpp"
#include "render/plan_render.hpp"
#include "render/node_svg_layout.hpp"
#include "render/svg.hpp"
#include "render/topo_text.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

namespace {

using namespace svg_layout;

class Drawer {
 public:
  Drawer(const Topology& t, const Overlay* o) : m_t(t), m_overlay(o), m_owners(o) {}

  std::string draw() {
    std::vector<PackageBox> packages = make_packages(m_t, m_owners);
    // Packages side by side while the row stays narrow enough, else one to a row.
    std::vector<std::pair<double, double>> sizes;
    double all_w = 0;
    for (const PackageBox& p : packages) {
      sizes.push_back({p.w, p.h});
      all_w = std::max(all_w, p.w);
    }
    size_t per_row = all_w * 2 + kGap <= kMaxRowWidth ? 2 : 1;
    Grid page = grid(sizes, per_row);
    double top = 56;
    double width = kPad * 4 + page.w, y = top + page.h + kGap * 2;
    std::vector<Device> unknown;
    for (const Gpu& g : m_t.gpus)
      if (!device_node(m_t, g)) unknown.push_back({&g, nullptr});
    for (const Nic& n : m_t.nics)
      if (!device_node(m_t, n)) unknown.push_back({nullptr, &n});
    sort_devices(unknown);
    double unknown_y = y;
    if (!unknown.empty()) {
      y += kHeader + devices_height(unknown) + kPad * 2;
      width = std::max(width, kPad * 4 + devices_width(unknown));
    }
    std::vector<std::string> links = link_lines();
    double links_y = y;
    y += double(links.size()) * 16 + (links.empty() ? 0 : 8);
    double legend_y = y;
    if (m_overlay) y += 24 + double(m_overlay->entries.size()) * 16 + double(m_overlay->footer.size()) * 16 + 8;
    width = std::max(width, 760.0);

    Svg s(int(width + 0.5), int(y + kPad + 0.5));
    m_svg = &s;
    std::string title = m_overlay ? m_overlay->title
                                  : "Machine " + (m_t.hostname.empty() ? std::string("") : m_t.hostname + " ") + "from " + m_t.origin;
    s.text(kPad * 2, 24, title, "font-size=\"16\" font-weight=\"bold\"");
    s.text(kPad * 2, 42, summary(), "fill=\"#555\"");
    for (size_t i = 0; i < packages.size(); ++i) draw_package(packages[i], kPad * 2 + page.at[i].first, top + page.at[i].second);
    if (!unknown.empty()) {
      s.rect(kPad * 2, unknown_y, devices_width(unknown) + 2 * kPad, kHeader + devices_height(unknown) + kPad,
             "fill=\"#fff8e6\" stroke=\"#c77c02\" stroke-dasharray=\"4 3\"");
      s.text(kPad * 3, unknown_y + 15, "Locality unknown (no NUMA node from the source)", "font-weight=\"bold\" fill=\"#c77c02\"");
      draw_devices(unknown, kPad * 3, unknown_y + kHeader);
    }
    for (size_t i = 0; i < links.size(); ++i) s.text(kPad * 2, links_y + 14 + double(i) * 16, links[i]);
    if (m_overlay) draw_legend(legend_y);
    m_svg = nullptr;
    return s.str();
  }

 private:
  std::string summary() const {
    size_t nodes = 0, memory_only = 0;
    for (const NumaNode& n : m_t.numa_nodes) (n.cpus.empty() ? memory_only : nodes)++;
    std::string s = std::to_string(m_t.packages.size()) + " package(s), " + std::to_string(nodes) + " NUMA node(s)";
    if (memory_only) s += " + " + std::to_string(memory_only) + " memory-only";
    s += ", " + std::to_string(m_t.cores.size()) + " cores, " + std::to_string(m_t.cpus.count()) + " PUs, " +
         std::to_string(m_t.gpus.size()) + " GPU(s), " + std::to_string(m_t.nics.size()) + " NIC(s)";
    if (m_overlay) s += " — " + m_t.origin;
    return s;
  }

  void draw_package(const PackageBox& p, double x, double y) {
    Svg& s = *m_svg;
    s.rect(x, y, p.w, p.h, "fill=\"#f7f7f7\" stroke=\"#444\" rx=\"4\"");
    s.text(x + kPad, y + 15, p.title, "font-weight=\"bold\"");
    for (size_t i = 0; i < p.nodes.size(); ++i)
      draw_node(p.nodes[i], x + kPad + p.node_grid.at[i].first, y + kHeader + p.node_grid.at[i].second);
    double my = y + p.h - kPad - 40;
    double mx = x + kPad;
    for (const NumaNode* m : p.memory_nodes) {
      std::vector<unsigned> ranks = Owners::of(m_owners.mem, m->os_index);
      std::string fill = ranks.empty() ? "#eef3ff" : colour(ranks.front()).light;
      s.begin_group("NUMA node " + std::to_string(m->os_index) + ": memory only" + (ranks.empty() ? "" : ", memory of " + m_owners.text(ranks)));
      s.rect(mx, my, kDevW, 40, "fill=\"" + fill + "\" stroke=\"#5577aa\" stroke-dasharray=\"5 3\"");
      s.text(mx + 6, my + 15, "NUMA " + std::to_string(m->os_index) + " memory only" + (m->subtype.empty() ? "" : " (" + m->subtype + ")"),
             "font-weight=\"bold\"");
      s.text(mx + 6, my + 31, (m->memory_bytes ? human_bytes(m->memory_bytes) : std::string("")) +
                                  (ranks.empty() ? "" : "  memory of " + m_owners.text(ranks)));
      s.end_group();
      mx += kDevW + kGap;
    }
  }

  void draw_node(const NodeBox& n, double x, double y) {
    Svg& s = *m_svg;
    std::vector<unsigned> mem = Owners::of(m_owners.mem, n.node->os_index);
    s.rect(x, y, n.w, n.h, "fill=\"#eef3ff\" stroke=\"#5577aa\" rx=\"3\"");
    std::string head = "NUMA node " + std::to_string(n.node->os_index) +
                       (n.node->memory_bytes ? " (" + human_bytes(n.node->memory_bytes) + ")" : "");
    s.text(x + kPad, y + 15, head, "font-weight=\"bold\"");
    double cx = x + kPad + text_width(head) * 1.1 + 10;  // bold text is wider
    for (unsigned r : mem) {  // a chip per rank whose memory is here
      std::string chip = "mem r" + std::to_string(r);
      s.rect(cx, y + 4, text_width(chip) + 6, 14, "fill=\"" + std::string(colour(r).light) + "\" stroke=\"" + colour(r).strong + "\" rx=\"3\"");
      s.text(cx + 3, y + 15, chip, "font-size=\"11\"");
      cx += text_width(chip) + 10;
    }
    for (size_t i = 0; i < n.l3s.size(); ++i) draw_l3(n.l3s[i], x + kPad + n.l3_grid.at[i].first, y + kHeader + n.l3_grid.at[i].second);
    if (!n.devices.empty()) draw_devices(n.devices, x + kPad, y + kHeader + n.l3_grid.h + kGap);
  }

  void draw_l3(const L3Box& b, double x, double y) {
    Svg& s = *m_svg;
    s.rect(x, y, b.w, b.h, "fill=\"white\" stroke=\"#999\"");
    s.text(x + kPad, y + 14, b.title, "fill=\"#555\" font-size=\"11\"");
    const double widest = b.cell_w;
    for (size_t i = 0; i < b.cells.size(); ++i) {
      const Cell& c = b.cells[i];
      double cx = x + kPad + double(i % b.per_row) * (widest + kGap), cy = y + kHeader + double(i / b.per_row) * (kCellH + kGap);
      std::string fill = "#f3f3f3", stroke = "#888";
      if (c.ranks.size() == 1) {
        fill = colour(c.ranks.front()).light;
        stroke = colour(c.ranks.front()).strong;
      } else if (c.ranks.size() > 1) {
        fill = "#ffd6d6";  // shared by several ranks
        stroke = "#cc0000";
      }
      if (m_owners.any_bad(c.ranks)) stroke = "#cc0000";
      s.begin_group(cell_title(c, m_owners));
      s.rect(cx, cy, widest, kCellH, "fill=\"" + fill + "\" stroke=\"" + stroke + "\" rx=\"2\"" +
                                         (m_owners.any_bad(c.ranks) ? " stroke-width=\"2\"" : ""));
      s.text(cx + 5, cy + 14, c.label, "font-size=\"11\"");
      if (m_overlay)  // where threads last ran: a dot per entry, in its colour
        for (const Overlay::Entry& e : m_overlay->entries)
          if (e.ran_on.intersects(c.pus)) s.circle(cx + widest - 6, cy + kCellH / 2, 3.5, "fill=\"" + std::string(colour(e.id).strong) + "\" stroke=\"black\"");
      s.end_group();
    }
  }

  void draw_devices(const std::vector<Device>& devices, double x, double y) {
    Svg& s = *m_svg;
    std::vector<Slot> slots = device_slots(devices);
    auto left = [&](size_t i) { return x + double(slots[i].col) * (kDevW + kGap); };
    auto top = [&](size_t i) { return y + double(slots[i].row) * kDevRow; };
    for (size_t i = 0; i < devices.size(); ++i) {
      const Device& d = devices[i];
      double dx = left(i), dy = top(i);
      const topo::PciDevice& p = d.pci();
      std::vector<unsigned> ranks = d.gpu ? Owners::of(m_owners.gpu, p.pci) : Owners::of(m_owners.nic, p.pci);
      std::string label = d.gpu ? "GPU" + std::to_string(d.gpu->index) + "  " + p.pci : "NIC " + nic_label(*d.nic);
      std::string fill = d.gpu ? "#e8f5e9" : "#fff3e0", stroke = d.gpu ? "#2e7d32" : "#e65100";
      if (!ranks.empty() && d.gpu) {
        fill = colour(ranks.front()).light;
        stroke = m_owners.any_bad(ranks) ? "#cc0000" : colour(ranks.front()).strong;
      }
      std::string path = p.pcie_path.empty() ? "" : p.pcie_path.front() + (p.pcie_path.size() > 1 ? " +" + std::to_string(p.pcie_path.size() - 1) + " bridge(s)" : "");
      s.begin_group(label + (p.name.empty() ? "" : ", " + p.name) + (path.empty() ? "" : ", PCIe " + join(p.pcie_path, " > ")) +
                    (ranks.empty() ? "" : ", " + m_owners.text(ranks)));
      s.rect(dx, dy, kDevW, kDevH, "fill=\"" + fill + "\" stroke=\"" + stroke + "\" stroke-width=\"" + (ranks.empty() ? "1" : "2") + "\" rx=\"3\"");
      s.text(dx + 6, dy + 14, label, "font-weight=\"bold\" font-size=\"11\"");
      std::string second = d.gpu ? p.name : (d.nic->pci.empty() ? "" : d.nic->pci);
      if (second.size() > 24) second = second.substr(0, 23) + "\u2026";
      s.text(dx + 6, dy + 28, second, "font-size=\"11\" fill=\"#333\"");
      s.text(dx + 6, dy + 42, ranks.empty() ? path : m_owners.text(ranks), std::string("font-size=\"11\"") + (ranks.empty() ? " fill=\"#777\"" : " font-weight=\"bold\""));
      s.end_group();
    }
    // Devices behind the same PCIe switch (the same path below the host bridge), side by side in
    // a row: bracketed, with the switch's address.
    for (size_t i = 0; i < devices.size();) {
      size_t j = i + 1;
      const auto& path = devices[i].pci().pcie_path;
      while (j < devices.size() && slots[j].row == slots[i].row && path.size() > 1 && devices[j].pci().pcie_path == path) ++j;
      if (j - i > 1) {
        double x0 = left(i), x1 = left(j - 1) + kDevW, by = top(i) + kDevH + 4;
        s.line(x0, by, x1, by, "stroke=\"#666\"");
        s.line(x0, by - 3, x0, by, "stroke=\"#666\"");
        s.line(x1, by - 3, x1, by, "stroke=\"#666\"");
        s.text((x0 + x1) / 2, by + 10, "PCIe switch " + path.back(), "font-size=\"9\" fill=\"#666\" text-anchor=\"middle\"");
      }
      i = j;
    }
  }

  // NVLink / xGMI: one line per kind and link count, the GPUs it joins: as groups where every
  // pair of a group is joined (an NVSwitch tray, an xGMI hive), else as pairs.
  std::vector<std::string> link_lines() const {
    std::vector<std::string> out;
    for (auto kind : {topo::GpuLink::Kind::nvlink, topo::GpuLink::Kind::xgmi}) {
      std::map<unsigned, std::vector<std::pair<unsigned, unsigned>>> by_count;  // links per pair -> GPU index pairs
      for (const topo::GpuLink& l : m_t.links) {
        if (l.kind != kind) continue;
        const Gpu* a = topo::find_gpu(m_t, l.a);
        const Gpu* b = topo::find_gpu(m_t, l.b);
        if (a && b) by_count[l.count].emplace_back(a->index, b->index);
      }
      std::string name = kind == topo::GpuLink::Kind::nvlink ? "NVLink" : "xGMI";
      for (const auto& [count, pairs] : by_count) {
        std::string prefix = name + (kind == topo::GpuLink::Kind::nvlink ? " NV" + std::to_string(count) : "") + ": ";
        // Groups: the GPUs joined through links of this count (union-find over the pairs).
        std::map<unsigned, unsigned> parent;
        std::function<unsigned(unsigned)> root = [&](unsigned g) { return parent[g] == g ? g : parent[g] = root(parent[g]); };
        for (auto [a, b] : pairs) {
          parent.emplace(a, a);
          parent.emplace(b, b);
          parent[root(a)] = root(b);
        }
        std::map<unsigned, std::vector<unsigned>> groups;
        for (auto& [g, _] : parent) groups[root(g)].push_back(g);
        size_t clique_pairs = 0;
        for (auto& [_, members] : groups) clique_pairs += members.size() * (members.size() - 1) / 2;
        if (clique_pairs == pairs.size() && groups.size() == 1) {
          out.push_back(prefix + "every pair of the " + std::to_string(parent.size()) + " GPUs");
        } else if (clique_pairs == pairs.size()) {
          std::vector<std::string> parts;
          for (auto& [_, members] : groups) parts.push_back(join_number_runs(members));
          out.push_back(prefix + "every pair within GPUs " + join(parts, "; "));
        } else {
          std::vector<std::string> list;
          for (auto [a, b] : pairs) list.push_back("GPU" + std::to_string(a) + "-GPU" + std::to_string(b));
          out.push_back(prefix + join(list.size() > 12 ? std::vector<std::string>(list.begin(), list.begin() + 12) : list, ", ") +
                        (list.size() > 12 ? " and " + std::to_string(list.size() - 12) + " more pairs" : ""));
        }
      }
    }
    return out;
  }

  void draw_legend(double y) {
    Svg& s = *m_svg;
    bool ranks = m_overlay->by_rank;
    s.text(kPad * 2, y + 14, ranks ? "Ranks" : "Processes", "font-weight=\"bold\"");
    s.text(kPad * 2 + 76, y + 14,
           ranks ? "a core, GPU or memory chip in a rank's colour is that rank's; red cores: shared by several ranks; grey: no rank's"
                 : "a core in a process's colour is one it may run on, a dot where one of its threads last ran; red: a "
                   "finding (cores shared, a GPU driven from the wrong node)",
           "fill=\"#555\" font-size=\"11\"");
    y += 20;
    for (const Overlay::Entry& e : m_overlay->entries) {
      const Colour& c = colour(e.id);
      s.rect(kPad * 2, y, 12, 12, "fill=\"" + std::string(c.light) + "\" stroke=\"" + (e.bad ? "#cc0000" : c.strong) + "\"" +
                                      (e.bad ? " stroke-width=\"2\"" : ""));
      s.text(kPad * 2 + 18, y + 11, e.legend, e.bad ? "fill=\"#cc0000\"" : "");
      y += 16;
    }
    for (const std::string& line : m_overlay->footer) {
      s.text(kPad * 2, y + 16, line, "fill=\"#333\"");
      y += 16;
    }
  }

  const Topology& m_t;
  const Overlay* m_overlay;
  Owners m_owners;
  Svg* m_svg = nullptr;
};


// --- compare: every strategy's plan as a small map of the node, one panel each ---

constexpr double kSquare = 9, kSquareGap = 2;
constexpr size_t kSquaresPerRow = 16;

// The ranks whose CPUs are all off their (first) GPU's NUMA node: what a reader should see at once.
std::vector<unsigned> ranks_off_gpu_node(const Topology& t, const plan::Plan& p) {
  std::vector<unsigned> out;
  for (const plan::RankBinding& rb : p.ranks) {
    if (rb.gpus.empty()) continue;
    const Gpu* g = topo::find_gpu(t, rb.gpus.front().pci);
    if (!g || !g->numa) continue;
    CpuSet home = topo::cpus_of_nodes(t, topo::nodes_with_cpus(t, *g->numa));
    if (!home.empty() && !rb.cpus.intersects(home)) out.push_back(rb.local_rank);
  }
  return out;
}

class MiniMap {
 public:
  explicit MiniMap(const Topology& t) : m_t(t) {
    const topo::CoreIndex index(t);
    for (const topo::Package& pk : t.packages)
      for (const NumaNode& n : t.numa_nodes)
        if (!n.cpus.empty() && in_package(n, pk)) m_columns.push_back({&n, pk.os_index, index.within(n.cpus)});
    for (const Column& c : m_columns) {
      size_t cores = c.cores.size();
      m_rows = std::max(m_rows, (cores + kSquaresPerRow - 1) / kSquaresPerRow);
    }
  }
  double column_width() const { return double(kSquaresPerRow) * (kSquare + kSquareGap) + 2 * kPad; }
  double width() const {
    double w = 0;
    for (size_t i = 0; i < m_columns.size(); ++i) w += column_width() + (i && m_columns[i].package != m_columns[i - 1].package ? 3 * kGap : kGap);
    return w;
  }
  double height() const { return 16 + 22 + double(m_rows) * (kSquare + kSquareGap) + kPad; }

  void draw(Svg& s, const plan::Plan& p, double x, double y) const {
    Overlay ov = plan_overlay(p);
    Owners o(&ov);
    double cx = x;
    for (size_t i = 0; i < m_columns.size(); ++i) {
      const Column& c = m_columns[i];
      if (i) cx += m_columns[i].package != m_columns[i - 1].package ? 3 * kGap : kGap;
      s.rect(cx, y, column_width(), height(), "fill=\"#eef3ff\" stroke=\"#5577aa\" rx=\"2\"");
      s.text(cx + 4, y + 12, "P" + std::to_string(c.package) + " N" + std::to_string(c.node->os_index), "font-size=\"10\" fill=\"#333\"");
      // The node's GPUs in their rank's colour, its memory's ranks as dots.
      double gx = cx + 50;
      for (const Gpu& g : m_t.gpus) {
        if (device_node(m_t, g) != c.node->os_index) continue;
        std::vector<unsigned> ranks = Owners::of(o.gpu, g.pci);
        std::string fill = ranks.empty() ? "#e8f5e9" : colour(ranks.front()).light, stroke = ranks.empty() ? "#2e7d32" : colour(ranks.front()).strong;
        s.begin_group("GPU" + std::to_string(g.index) + " " + g.pci + (ranks.empty() ? "" : ": " + o.text(ranks)));
        s.rect(gx, y + 3, 22, 12, "fill=\"" + fill + "\" stroke=\"" + stroke + "\"");
        s.text(gx + 2, y + 12, "G" + std::to_string(g.index), "font-size=\"9\"");
        s.end_group();
        gx += 25;
      }
      double my = y + 20;
      std::vector<unsigned> mem = Owners::of(o.mem, c.node->os_index);
      for (size_t k = 0; k < mem.size(); ++k)
        s.circle(cx + 8 + double(k) * 8, my + 3, 3, "fill=\"" + std::string(colour(mem[k]).strong) + "\"");
      size_t n = 0;
      for (size_t core_index : c.cores) {
        const topo::Core& core = m_t.cores[core_index];
        std::vector<unsigned> ranks = distinct_ranks(o, core.pus);
        std::string fill = ranks.empty() ? "#f3f3f3" : ranks.size() > 1 ? "#ff6b6b" : colour(ranks.front()).strong;
        double sx = cx + kPad + double(n % kSquaresPerRow) * (kSquare + kSquareGap);
        double sy = my + 10 + double(n / kSquaresPerRow) * (kSquare + kSquareGap);
        s.rect(sx, sy, kSquare, kSquare, "fill=\"" + fill + "\"");
        ++n;
      }
      cx += column_width();
    }
  }

 private:
  struct Column {
    const NumaNode* node;
    unsigned package;
    std::vector<size_t> cores;  // the node's cores, indexes into the topology's
  };
  const Topology& m_t;
  std::vector<Column> m_columns;
  size_t m_rows = 1;
};

}  // namespace

std::string node_svg(const topo::Topology& t, const Overlay* overlay) { return Drawer(t, overlay).draw(); }

std::string plan_svg(const topo::Topology& t, const plan::Plan& p) {
  Overlay o = plan_overlay(p);
  return node_svg(t, &o);
}

std::string compare_svg(const topo::Topology& t, const plan::Comparison& c) {
  MiniMap map(t);
  const double head = 34, panel_h = head + map.height() + 14;
  double width = std::max(760.0, 2 * kPad + map.width() + 2 * kPad);
  double height = 64 + double(c.strategies.size()) * panel_h + 40;
  Svg s(int(width + 0.5), int(height + 0.5));
  s.text(kPad * 2, 24, "Compare: " + std::to_string(c.ranks) + " rank(s) on " + c.topology_origin, "font-size=\"16\" font-weight=\"bold\"");
  s.text(kPad * 2, 42,
         "each small square a core in its rank's colour (red: shared, grey: no rank); G#: a GPU in its rank's colour; dots: "
         "the ranks whose memory is on the node",
         "fill=\"#555\" font-size=\"11\"");
  double y = 56;
  for (const plan::StrategyOutcome& o : c.strategies) {
    s.text(kPad * 2, y + 14, o.name, "font-weight=\"bold\"");
    s.text(kPad * 2 + 180, y + 14, o.description, "fill=\"#555\" font-size=\"11\"");
    if (!o.plan) {
      s.text(kPad * 2, y + 30, "cannot plan this machine: " + o.error, "fill=\"#c00\"");
      y += panel_h;
      continue;
    }
    const plan::Score& sc = o.plan->score;
    std::vector<unsigned> off = ranks_off_gpu_node(t, *o.plan);
    std::string score = "cpu locality " + format_share(sc.cpu_locality) + ", memory locality " + format_share(sc.mem_locality) +
                        ", overlap " + std::to_string(sc.overlap_cpus) + " CPU(s), idle " + std::to_string(sc.idle_cpus) + " CPU(s)";
    s.text(kPad * 2, y + 29, score, "font-size=\"11\" fill=\"#333\"");
    if (!off.empty())
      s.text(kPad * 2 + text_width(score) * 0.95 + 20, y + 29, ranks_text(off) + " off its GPU's NUMA node",
             "font-size=\"11\" font-weight=\"bold\" fill=\"#c00\"");
    map.draw(s, *o.plan, kPad * 2, y + head);
    y += panel_h;
  }
  return s.str();
}

}  // namespace gpubind::render
