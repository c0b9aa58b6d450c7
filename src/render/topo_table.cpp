#include <map>

#include "render/table.hpp"
#include "render/topo_text.hpp"

#include <algorithm>
#include <cstdio>
#include "util/strings.hpp"

namespace gpubind::render {

using namespace topo;

std::string cpus_or_unknown(const std::optional<CpuSet>& cpus) { return cpus ? cpus->to_list() : "unknown"; }

std::string numa_or_unknown(const std::optional<std::vector<unsigned>>& numa) {
  return numa ? join_numbers(*numa) : "unknown";
}

std::string nic_label(const Nic& n) {
  if (!n.os_names.empty()) return join(n.os_names, ",");
  return n.pci.empty() ? "?" : n.pci;
}

namespace {

std::string plural(size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

}  // namespace

std::string topo_table(const Topology& t) {
  std::string out;
  size_t cpuless = 0;
  for (const NumaNode& n : t.numa_nodes) cpuless += n.cpus.empty();
  out += "Machine " + (t.hostname.empty() ? std::string("(unnamed)") : t.hostname) + " from " + t.origin + "\n";
  out += "  " + plural(t.packages.size(), "package") + ", " + plural(t.numa_nodes.size(), "NUMA node");
  if (cpuless) out += " (" + std::to_string(cpuless) + " CPU-less)";
  out += ", " + plural(t.l3_domains.size(), "L3 domain") + ", " + plural(t.cores.size(), "core") + ", " +
         plural(t.cpus.count(), "PU") + " (" + std::to_string(t.allowed_cpus.count()) + " allowed), " +
         plural(t.gpus.size(), "GPU") + ", " + plural(t.nics.size(), "NIC") + "\n";
  if (t.allowed_cpus != t.cpus) out += "  allowed CPUs: " + t.allowed_cpus.to_list() + "\n";
  out += "\n";

  // Devices by NUMA node: a device local to several nodes is listed under each.
  std::map<unsigned, std::vector<std::string>> gpus_at, nics_at;
  for (const Gpu& g : t.gpus)
    if (g.numa)
      for (unsigned n : *g.numa) gpus_at[n].push_back(std::to_string(g.index));
  for (const Nic& n : t.nics)
    if (n.numa)
      for (unsigned node : *n.numa) nics_at[node].push_back(nic_label(n));

  TextTable nodes({"NUMA", "PACKAGE", "CPUS", "MEMORY", "KIND", "GPUS", "NICS"});
  for (const NumaNode& n : t.numa_nodes) {
    std::string kind = n.cpus.empty() ? "cpu-less" : "cpus";
    if (!n.subtype.empty()) kind += " " + n.subtype;
    nodes.add({std::to_string(n.os_index), n.package ? std::to_string(*n.package) : "-",
               n.cpus.empty() ? "-" : n.cpus.to_list(), n.memory_bytes ? human_bytes(n.memory_bytes) : "?", kind,
               gpus_at.count(n.os_index) ? join(gpus_at[n.os_index], ",") : "-",
               nics_at.count(n.os_index) ? join(nics_at[n.os_index], " ") : "-"});
  }
  out += nodes.str();

  if (!t.gpus.empty()) {
    out += "\n";
    // The UUID column only where a source gave UUIDs (NVML, ROCm SMI, hwloc's NVML backend).
    bool uuids = std::any_of(t.gpus.begin(), t.gpus.end(), [](const Gpu& g) { return !g.uuid.empty(); });
    // GPU MEMORY: the NUMA node(s) holding a GPU's own memory, only where a GPU has one (GH200,
    // POWER9 with NVLink): not a node to plan CPUs on, a memory target on request (--mem-on-gpu).
    bool memory = std::any_of(t.gpus.begin(), t.gpus.end(), [](const Gpu& g) { return !g.memory_numa.empty(); });
    // STACKS: an Intel GPU's stacks, each a Level Zero device in its FLAT hierarchy.
    bool stacks = std::any_of(t.gpus.begin(), t.gpus.end(), [](const Gpu& g) { return g.stacks > 1; });
    std::vector<std::string> head = {"GPU", "PCI", "VENDOR", "NAME", "NUMA", "CPUS", "PCIE PATH"};
    if (memory) head.insert(head.begin() + 6, "GPU MEMORY");
    if (stacks) head.insert(head.begin() + 4, "STACKS");
    if (uuids) head.insert(head.begin() + 4, "UUID");
    TextTable gpus(head);
    for (const Gpu& g : t.gpus) {
      std::vector<std::string> row = {std::to_string(g.index), g.pci.empty() ? "-" : g.pci, to_string(g.vendor),
                                      g.name.empty() ? "-" : g.name, numa_or_unknown(g.numa), cpus_or_unknown(g.cpus),
                                      g.pcie_path.empty() ? "-" : join(g.pcie_path, " > ")};
      if (memory) row.insert(row.begin() + 6, g.memory_numa.empty() ? "-" : join_numbers(g.memory_numa));
      if (stacks) row.insert(row.begin() + 4, std::to_string(g.stacks));
      if (uuids) row.insert(row.begin() + 4, g.uuid.empty() ? "-" : g.uuid);
      gpus.add(row);
    }
    out += gpus.str();
  }
  if (!t.nics.empty()) {
    out += "\n";
    TextTable nics({"NIC", "PCI", "NAME", "NUMA", "CPUS", "PCIE PATH"});
    for (const Nic& n : t.nics)
      nics.add({nic_label(n), n.pci.empty() ? "-" : n.pci, n.name.empty() ? "-" : n.name, numa_or_unknown(n.numa),
                cpus_or_unknown(n.cpus), n.pcie_path.empty() ? "-" : join(n.pcie_path, " > ")});
    out += nics.str();
  }
  return out;
}

std::string measured_table(const Topology& t, const std::vector<MeasuredGpu>& measured) {
  std::vector<unsigned> nodes;
  for (const MeasuredGpu& m : measured)
    for (const auto& [n, bw] : m.bytes_per_second)
      if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::string> head{"GPU", "PCI"};
  for (unsigned n : nodes) head.push_back("NODE " + std::to_string(n));
  head.insert(head.end(), {"NEAREST", "NUMA"});
  TextTable table(head);
  for (const MeasuredGpu& m : measured) {
    const Gpu* g = find_gpu(t, m.pci);
    std::vector<std::string> row{g ? std::to_string(g->index) : "-", m.pci};
    for (unsigned n : nodes) {
      auto it = m.bytes_per_second.find(n);
      char cell[32] = "-";
      if (it != m.bytes_per_second.end()) std::snprintf(cell, sizeof cell, "%.1f", it->second / 1e9);
      row.push_back(cell);
    }
    std::optional<unsigned> nearest = nearest_measured(m);
    row.push_back(nearest ? std::to_string(*nearest) : "-");
    row.push_back(g ? numa_or_unknown(g->numa) : "-");
    table.add(row);
  }
  std::string source = measured.empty() ? "" : " (" + measured.front().source + ")";
  return "\nHost-to-device copies from pinned memory on each NUMA node, GB/s" + source + ":\n" + table.str();
}

}  // namespace gpubind::render
