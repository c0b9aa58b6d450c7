#include "plan/peers.hpp"

#include <algorithm>
#include <map>

namespace gpubind::plan {

const char* to_string(Peer p) {
  switch (p) {
    case Peer::torchrun_exclusive: return "torchrun-exclusive";
    case Peer::torchrun_core_complex: return "torchrun-core-complex";
    case Peer::gpu_affinity_socket: return "gpu-affinity-socket";
  }
  return "?";
}

namespace {

// Physical cores (all allowed siblings) within `cpus`, sorted by lowest sibling.
std::vector<CpuSet> cores_within(const topo::Topology& t, const CpuSet& cpus) {
  std::vector<CpuSet> out;
  for (const topo::Core& c : t.cores)
    if (CpuSet pus = c.pus & cpus; !pus.empty()) out.push_back(pus);
  std::sort(out.begin(), out.end());
  return out;
}

// The GPU's NUMA node as torchrun reads it: sysfs numa_node, -1 clamped to 0.
unsigned node_of(const topo::Gpu& g) { return g.numa && !g.numa->empty() ? (*g.numa)[0] : 0; }

}  // namespace

Result<std::vector<RankBinding>> peer_bindings(const topo::Topology& t, const Request& req, Peer peer) {
  std::vector<std::string> explain, warnings;
  auto vis = visible_gpus(t, req, explain, warnings);
  if (!vis) return vis.error();
  const std::vector<const topo::Gpu*>& gpus = *vis;
  unsigned ranks = req.ranks.value_or(unsigned(gpus.size()));
  if (gpus.empty()) return Error{to_string(peer), "needs GPUs"};
  if (ranks > gpus.size()) return Error{to_string(peer), "one process per GPU only (" + std::to_string(ranks) + " ranks, " +
                                                             std::to_string(gpus.size()) + " GPUs)"};
  CpuSet allowed = usable_cpus(t, req);
  std::vector<CpuSet> cpus_of(gpus.size());

  if (peer == Peer::gpu_affinity_socket) {
    // GPUs grouped by their socket's allowed CPUs; each group splits its cores contiguously.
    std::map<CpuSet, std::vector<size_t>> groups;
    for (size_t i = 0; i < gpus.size(); ++i) {
      CpuSet node = topo::cpus_of_nodes(t, {node_of(*gpus[i])});
      CpuSet socket;
      for (const topo::Package& p : t.packages)
        if (p.cpus.intersects(node)) socket |= p.cpus;
      groups[(socket.empty() ? node : socket) & allowed].push_back(i);
    }
    size_t per = SIZE_MAX;
    for (const auto& [cpus, members] : groups) per = std::min(per, cores_within(t, cpus).size() / members.size());
    if (per == 0) return Error{to_string(peer), "a socket has fewer cores than GPUs"};
    for (const auto& [cpus, members] : groups) {
      std::vector<CpuSet> cores = cores_within(t, cpus);
      for (size_t k = 0; k < members.size(); ++k)
        for (size_t c = k * per; c < (k + 1) * per; ++c) cpus_of[members[k]] |= cores[c];
    }
  } else {
    // torchrun: per NUMA node, the GPUs torch sees on it, in index order.
    std::map<unsigned, std::vector<size_t>> on_node;
    for (size_t i = 0; i < gpus.size(); ++i) on_node[node_of(*gpus[i])].push_back(i);
    for (const auto& [node, members] : on_node) {
      CpuSet cpus = topo::cpus_of_nodes(t, {node}) & allowed;
      if (cpus.empty()) return Error{to_string(peer), "GPU on NUMA node " + std::to_string(node) + ", which has no allowed CPU"};
      if (peer == Peer::torchrun_exclusive) {
        std::vector<CpuSet> cores = cores_within(t, cpus);
        if (cores.size() < members.size())
          return Error{to_string(peer), "fewer physical cores than GPUs on NUMA node " + std::to_string(node)};
        size_t at = 0;
        for (size_t k = 0; k < members.size(); ++k) {
          size_t take = cores.size() / members.size() + (k < cores.size() % members.size() ? 1 : 0);
          for (size_t c = at; c < at + take; ++c) cpus_of[members[k]] |= cores[c];
          at += take;
        }
      } else {
        std::vector<CpuSet> l3s;
        for (const topo::L3Domain& l : t.l3_domains)
          if (CpuSet s = l.cpus & cpus; !s.empty()) l3s.push_back(s);
        if (l3s.empty()) l3s.push_back(cpus);  // no cache information: the node
        std::stable_sort(l3s.begin(), l3s.end(), [](const CpuSet& a, const CpuSet& b) { return a.count() > b.count(); });
        for (size_t k = 0; k < members.size(); ++k) cpus_of[members[k]] = l3s[k % l3s.size()];
      }
    }
  }

  std::vector<RankBinding> out(ranks);
  for (unsigned r = 0; r < ranks; ++r) {
    out[r].local_rank = r;
    out[r].gpus.push_back({gpus[r]->index, gpus[r]->pci, gpus[r]->vendor});
    out[r].cpus = cpus_of[r];
    out[r].mem_policy = MemPolicy::none;  // neither tool sets a memory policy: first touch
  }
  return out;
}

}  // namespace gpubind::plan
