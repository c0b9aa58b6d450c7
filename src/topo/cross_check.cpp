#include "topo/cross_check.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "util/strings.hpp"

namespace gpubind::topo {

namespace {

// The CPUs of these NUMA nodes in `t`.
std::optional<CpuSet> cpus_of_node(const Topology& t, unsigned node) {
  for (const NumaNode& n : t.numa_nodes)
    if (n.os_index == node) return n.cpus;
  return std::nullopt;
}

// The one NUMA node whose CPUs hold all of `cpus` (a library's CPU affinity for a device), when
// they are fewer than the machine's: an affinity of every CPU says nothing.
std::optional<unsigned> node_holding(const Topology& t, const CpuSet& cpus) {
  if (cpus.empty() || t.cpus.is_subset_of(cpus)) return std::nullopt;
  std::optional<unsigned> found;
  for (const NumaNode& n : t.numa_nodes)
    if (!n.cpus.empty() && cpus.is_subset_of(n.cpus)) {
      if (found) return std::nullopt;
      found = n.os_index;
    }
  return found;
}

std::string link_text(const GpuLink* l) {
  if (!l) return "none";
  if (l->kind == GpuLink::Kind::xgmi) return "XGMI";
  return "NV" + std::to_string(l->count);
}

// A PCIe link slower than it can be: narrower always, a lower generation only while busy.
std::optional<std::string> downtrained(const RuntimeGpu& r) {
  if (!r.pcie) return std::nullopt;
  const PcieLinkState& p = *r.pcie;
  std::string what;
  if (p.width && p.max_width && p.width < p.max_width)
    what = "x" + std::to_string(p.width) + " of x" + std::to_string(p.max_width);
  if (p.gen && p.max_gen && p.gen < p.max_gen && r.utilization.value_or(0) > 0)
    what += (what.empty() ? "" : ", ") + std::string("Gen") + std::to_string(p.gen) + " of Gen" + std::to_string(p.max_gen) +
            " while " + std::to_string(*r.utilization) + " % busy";
  if (what.empty()) return std::nullopt;
  return "PCIe link downtrained: " + what + " (reseat the GPU; check the slot, riser or retimer)";
}

std::string gbps(double bytes_per_second) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f GB/s", bytes_per_second / 1e9);
  return out;
}

using Pair = std::pair<std::string, std::string>;
Pair pair_of(const GpuLink& l) { return {std::min(l.a, l.b), std::max(l.a, l.b)}; }

// The library's links replace the topology's among the GPUs both see; differences are findings,
// unless the topology had no such link at all (a live sysfs view, a file without NVLink data).
template <class Finding>
void take_links(Topology& t, const RuntimeView& v, const std::set<std::string>& both, Finding finding) {
  auto inside = [&](const GpuLink& l) { return both.count(l.a) && both.count(l.b); };
  std::map<Pair, const GpuLink*> theirs, ours;
  for (const GpuLink& l : *v.links)
    if (inside(l)) theirs[pair_of(l)] = &l;
  std::vector<GpuLink> links;
  for (const GpuLink& l : t.links) {
    if (inside(l) && !(v.direct_links_only && !theirs.count(pair_of(l)))) ours[pair_of(l)] = &l;
    else links.push_back(l);  // the library has no say on it
  }
  if (!ours.empty()) {
    // The pairs that differ, by how they differ ("NV18" in the topology, "NV16" from the library).
    std::map<std::pair<std::string, std::string>, std::set<Pair>> differ;
    std::set<Pair> pairs;
    for (const auto& [p, l] : theirs) pairs.insert(p);
    for (const auto& [p, l] : ours) pairs.insert(p);
    for (const Pair& p : pairs) {
      std::string a = link_text(ours.count(p) ? ours[p] : nullptr), b = link_text(theirs.count(p) ? theirs[p] : nullptr);
      if (a != b) differ[{a, b}].insert(p);
    }
    // Every pair alike (no link up at all: a fabric manager not running) is one finding; else one
    // per GPU common to several such pairs (one GPU's links down shows on all its pairs through a
    // switch), the GPU with the most first.
    for (auto& [how, left] : differ) {
      auto said = [&, how = how](const std::string& which) {
        return which + ": " + how.first + " in the topology, " + how.second + " from the library: the library's is used";
      };
      if (left.size() == pairs.size() && left.size() > 1) {
        finding("", said(std::to_string(left.size()) + " pairs"));
        continue;
      }
      while (!left.empty()) {
        std::map<std::string, unsigned> ends;
        for (const Pair& p : left) ++ends[p.first], ++ends[p.second];
        std::string gpu = std::max_element(ends.begin(), ends.end(), [](const auto& x, const auto& y) { return x.second < y.second; })->first;
        std::vector<std::string> others;
        for (auto it = left.begin(); it != left.end();)
          if (it->first == gpu || it->second == gpu) {
            others.push_back(it->first == gpu ? it->second : it->first);
            it = left.erase(it);
          } else {
            ++it;
          }
        finding(gpu, said(std::string(others.size() > 1 ? "links to " : "link to ") + join(others, ", ")));
      }
    }
  }
  for (const auto& [p, l] : theirs) links.push_back({p.first, p.second, l->kind, l->count});
  sort_links(links);
  t.links = std::move(links);
}

}  // namespace

std::string to_line(const CrossCheckFinding& f) {
  return "cross-check: " + (f.gpu.empty() ? "all GPUs" : "GPU " + f.gpu) + " (" + f.source + "): " + f.what;
}

std::vector<CrossCheckFinding> cross_check(Topology& t, const std::vector<RuntimeView>& views) {
  std::vector<CrossCheckFinding> out;
  for (const RuntimeView& v : views) {
    std::map<std::string, const RuntimeGpu*> seen;
    std::set<std::string> both;  // the GPUs the topology and the library have
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
      both.insert(g.pci);
      if (!r.failure.empty()) finding(g.pci, "the library's calls fail for it: " + r.failure);
      if (g.name.empty()) g.name = r.name;
      if (g.mig_uuids.empty()) g.mig_uuids = r.mig_uuids;
      if (!r.uuid.empty()) {
        if (!g.uuid.empty() && g.uuid != r.uuid) finding(g.pci, "UUID " + g.uuid + " in the topology, " + r.uuid + " from the library: the library's is used");
        g.uuid = r.uuid;
      }
      // The library's node for the GPU: its own (ROCm SMI), else the node its CPU affinity lies in
      // (NVML has no call for the node of a GPU's CPUs; its affinity is every CPU where sysfs
      // knows no node, and then nothing is taken).
      std::optional<unsigned> lib_node = r.numa;
      std::string from_affinity;
      if (!lib_node && r.cpus && (!g.numa || g.numa->empty()))
        if ((lib_node = node_holding(t, *r.cpus))) from_affinity = " (its CPU affinity " + r.cpus->to_list() + ")";
      if (lib_node) {
        if (!g.numa || g.numa->empty()) {
          if (auto cpus = cpus_of_node(t, *lib_node)) {
            g.numa = std::vector<unsigned>{*lib_node};
            g.cpus = *cpus;
            finding(g.pci, "no NUMA node in the topology (numa_node -1?); the library's node " + std::to_string(*lib_node) +
                               from_affinity + " is used");
          } else {
            finding(g.pci, "the library puts it on NUMA node " + std::to_string(*lib_node) + ", which the topology does not have");
          }
        } else if (std::find(g.numa->begin(), g.numa->end(), *lib_node) == g.numa->end()) {
          finding(g.pci, "NUMA node " + join_numbers(*g.numa) + " in the topology, " + std::to_string(*lib_node) +
                             " from the library: the topology's is kept (the kernel's view of the PCI bus)");
        }
      }
      if (r.memory_numa) {
        if (g.memory_numa.empty())
          g.memory_numa = {*r.memory_numa};
        else if (std::find(g.memory_numa.begin(), g.memory_numa.end(), *r.memory_numa) == g.memory_numa.end())
          finding(g.pci, "GPU memory on NUMA node " + join_numbers(g.memory_numa) + " in the topology, " +
                             std::to_string(*r.memory_numa) + " from the library: the topology's is kept");
      }
      if (r.cpus && g.cpus && !r.cpus->empty() && !(*r.cpus == *g.cpus) && !r.cpus->is_subset_of(*g.cpus))
        finding(g.pci, "CPUs " + g.cpus->to_list() + " near it in the topology, " + r.cpus->to_list() +
                           " from the library: the topology's are kept");
      if (auto slow = downtrained(r)) finding(g.pci, *slow);
    }
    if (v.links) take_links(t, v, both, finding);
    for (const auto& [pci, r] : seen) finding(pci, "the library sees this GPU; the topology does not have it");
  }
  return out;
}

std::optional<unsigned> nearest_measured(const MeasuredGpu& m) {
  if (m.bytes_per_second.size() < 2) return std::nullopt;  // nothing to compare with
  std::optional<unsigned> best;
  for (const auto& [node, bw] : m.bytes_per_second)
    if (!best || bw > m.bytes_per_second.at(*best)) best = node;
  if (!best) return std::nullopt;
  for (const auto& [node, bw] : m.bytes_per_second)
    if (node != *best && m.bytes_per_second.at(*best) < bw * kMeasuredClearly) return std::nullopt;
  return best;
}

std::vector<CrossCheckFinding> cross_check_measured(Topology& t, const std::vector<MeasuredGpu>& measured) {
  std::vector<CrossCheckFinding> out;
  for (const MeasuredGpu& m : measured) {
    auto finding = [&](std::string what) { out.push_back({m.pci, m.source + " copies", std::move(what)}); };
    Gpu* g = nullptr;
    for (Gpu& x : t.gpus)
      if (x.pci == m.pci) g = &x;
    if (!g) {
      finding("measured, but the topology does not have this GPU");
      continue;
    }
    std::optional<unsigned> best = nearest_measured(m);
    if (!best) continue;  // no node clearly nearer: nothing to say
    double fastest = m.bytes_per_second.at(*best);
    if (!g->numa || g->numa->empty()) {
      if (auto cpus = cpus_of_node(t, *best)) {
        g->numa = std::vector<unsigned>{*best};
        g->cpus = *cpus;
        finding("no NUMA node in the topology; copies from node " + std::to_string(*best) + " are fastest (" + gbps(fastest) +
                "), so node " + std::to_string(*best) + " is used");
      }
      continue;
    }
    if (std::find(g->numa->begin(), g->numa->end(), *best) != g->numa->end()) continue;
    std::string own;
    for (unsigned n : *g->numa)
      if (auto it = m.bytes_per_second.find(n); it != m.bytes_per_second.end())
        own += (own.empty() ? "" : ", ") + std::string("node ") + std::to_string(n) + " at " + gbps(it->second);
    if (own.empty()) continue;  // its own node was not measured: no comparison
    finding("copies from NUMA node " + std::to_string(*best) + " run at " + gbps(fastest) + ", from its own " + own +
            ": measured nearer to node " + std::to_string(*best) +
            "; the topology's locality is kept (check the BIOS/firmware's PCIe-to-socket mapping)");
  }
  return out;
}

}  // namespace gpubind::topo
