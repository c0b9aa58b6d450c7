#include "topo/cross_check.hpp"

#include <algorithm>
#include <map>

namespace gpubind::topo {

namespace {

std::string nodes_text(const std::vector<unsigned>& nodes) {
  std::string out;
  for (unsigned n : nodes) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

// The CPUs of these NUMA nodes in `t`.
std::optional<CpuSet> cpus_of_node(const Topology& t, unsigned node) {
  for (const NumaNode& n : t.numa_nodes)
    if (n.os_index == node) return n.cpus;
  return std::nullopt;
}

}  // namespace

std::string to_line(const CrossCheckFinding& f) { return "cross-check: GPU " + f.gpu + " (" + f.source + "): " + f.what; }

std::vector<CrossCheckFinding> cross_check(Topology& t, const std::vector<RuntimeView>& views) {
  std::vector<CrossCheckFinding> out;
  for (const RuntimeView& v : views) {
    std::map<std::string, const RuntimeGpu*> seen;
    for (const RuntimeGpu& g : v.gpus) seen[g.pci] = &g;
    auto finding = [&](const std::string& gpu, std::string what) { out.push_back({gpu, v.source, std::move(what)}); };
    for (Gpu& g : t.gpus) {
      if (g.vendor != v.vendor) continue;
      auto it = seen.find(g.pci);
      if (it == seen.end()) {
        finding(g.pci, "the topology has this GPU; the library does not see it");
        continue;
      }
      const RuntimeGpu& r = *it->second;
      seen.erase(it);
      if (g.name.empty()) g.name = r.name;
      if (g.mig_uuids.empty()) g.mig_uuids = r.mig_uuids;
      if (!r.uuid.empty()) {
        if (!g.uuid.empty() && g.uuid != r.uuid) finding(g.pci, "UUID " + g.uuid + " in the topology, " + r.uuid + " from the library: the library's is used");
        g.uuid = r.uuid;
      }
      if (r.numa) {
        if (!g.numa || g.numa->empty()) {
          if (auto cpus = cpus_of_node(t, *r.numa)) {
            g.numa = std::vector<unsigned>{*r.numa};
            g.cpus = *cpus;
            finding(g.pci, "no NUMA node in the topology (numa_node -1?); the library's node " + std::to_string(*r.numa) + " is used");
          } else {
            finding(g.pci, "the library puts it on NUMA node " + std::to_string(*r.numa) + ", which the topology does not have");
          }
        } else if (std::find(g.numa->begin(), g.numa->end(), *r.numa) == g.numa->end()) {
          finding(g.pci, "NUMA node " + nodes_text(*g.numa) + " in the topology, " + std::to_string(*r.numa) +
                             " from the library: the topology's is kept (the kernel's view of the PCI bus)");
        }
      }
      if (r.cpus && g.cpus && !r.cpus->empty() && !(*r.cpus == *g.cpus) && !r.cpus->is_subset_of(*g.cpus))
        finding(g.pci, "CPUs " + g.cpus->to_list() + " near it in the topology, " + r.cpus->to_list() +
                           " from the library: the topology's are kept");
    }
    for (const auto& [pci, r] : seen) finding(pci, "the library sees this GPU; the topology does not have it");
  }
  return out;
}

}  // namespace gpubind::topo
