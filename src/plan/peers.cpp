#include "plan/peers.hpp"

#include <algorithm>
#include <map>

namespace gpubind::plan {

const char* to_string(Peer p) {
  switch (p) {
    case Peer::torchrun_exclusive: return "torchrun-exclusive";
    case Peer::torchrun_core_complex: return "torchrun-core-complex";
    case Peer::gpu_affinity_socket: return "gpu-affinity-socket";
    case Peer::slurm_block: return "slurm-block";
    case Peer::slurm_cyclic: return "slurm-cyclic";
  }
  return "?";
}

namespace {

// Physical cores (all allowed siblings) within `cpus`, sorted by lowest sibling.
std::vector<CpuSet> cores_within(const topo::Topology& t, const topo::CoreIndex& index, const CpuSet& cpus) {
  std::vector<CpuSet> out;
  for (size_t c : index.touching(cpus)) out.push_back(t.cores[c].pus & cpus);
  return out;
}

// The GPU's NUMA node as torchrun reads it: sysfs numa_node, -1 clamped to 0.
unsigned node_of(const topo::Gpu& g) { return g.numa && !g.numa->empty() ? (*g.numa)[0] : 0; }

// Slurm task/affinity with --cpu-bind=cores: each task's C whole cores, in Slurm's core order,
// block after block or socket after socket (cyclic).
Result<std::vector<CpuSet>> slurm_task_cpus(const topo::Topology& t, const CpuSet& allowed, unsigned ranks, bool cyclic) {
  std::vector<unsigned> ids = topo::logical_core_ids(t);
  std::vector<size_t> order(t.cores.size());
  for (size_t i = 0; i < ids.size(); ++i) order[ids[i]] = i;
  // (package, usable PUs of the core) in Slurm's order
  std::vector<std::pair<size_t, CpuSet>> cores;
  for (size_t i : order) {
    CpuSet pus = t.cores[i].pus & allowed;
    if (pus.empty()) continue;
    size_t pkg = t.packages.size();
    for (size_t p = 0; p < t.packages.size(); ++p)
      if (t.packages[p].cpus.intersects(pus)) pkg = p;
    cores.push_back({pkg, pus});
  }
  size_t per = cores.size() / ranks;
  if (per == 0) return Error{"slurm", "fewer usable cores (" + std::to_string(cores.size()) + ") than tasks", ErrorKind::usage};
  std::vector<CpuSet> out(ranks);
  std::vector<bool> used(cores.size(), false);
  size_t sockets = std::max<size_t>(1, t.packages.size());
  for (unsigned k = 0; k < ranks; ++k) {
    std::vector<size_t> take;
    if (cyclic) {
      // Socket k mod S first, then the following sockets, for one with C free cores.
      for (size_t step = 0; step < sockets && take.empty(); ++step) {
        size_t socket = (k + step) % sockets;
        std::vector<size_t> free;
        for (size_t c = 0; c < cores.size() && free.size() < per; ++c)
          if (!used[c] && cores[c].first == socket) free.push_back(c);
        if (free.size() == per) take = free;
      }
    }
    for (size_t c = 0; c < cores.size() && take.size() < per; ++c)
      if (!used[c]) take.push_back(c);
    for (size_t c : take) {
      used[c] = true;
      out[k] |= cores[c].second;
    }
  }
  return out;
}

// --gpu-bind=single:1: tasks in order take the first free GPU whose CPUs cover the task's mask,
// else one that overlaps it, else the first free one.
std::vector<size_t> slurm_closest_gpus(const std::vector<const topo::Gpu*>& gpus, const std::vector<CpuSet>& task_cpus) {
  std::vector<bool> taken(gpus.size(), false);
  std::vector<size_t> out;
  for (const CpuSet& mask : task_cpus) {
    size_t pick = gpus.size();
    for (int pass = 0; pass < 3 && pick == gpus.size(); ++pass)
      for (size_t g = 0; g < gpus.size() && pick == gpus.size(); ++g) {
        if (taken[g]) continue;
        const std::optional<CpuSet>& local = gpus[g]->cpus;
        bool fits = pass == 2 || (local && (pass == 0 ? mask.is_subset_of(*local) : mask.intersects(*local)));
        if (fits) pick = g;
      }
    taken[pick] = true;
    out.push_back(pick);
  }
  return out;
}

// NVIDIA gpu_affinity, unique_contiguous, socket scope, balanced (its documented default mode
// with the scope its README recommends for DGX A100), for the first `ranks` GPUs, as its tests
// pin it down (tests/test_dgx.py, DGXA100 test_unique_contiguous_socket): per socket, each core of
// the GPUs' NUMA nodes heads a group and the socket's other cores join the groups in turn; the
// GPUs of one node take its groups in contiguous runs of `per` (the smallest groups-per-GPU of
// any node), with as many members of each group as the run's shortest group has.
Status gpu_affinity_socket(const topo::Topology& t, const topo::CoreIndex& index, const std::vector<const topo::Gpu*>& gpus, unsigned ranks, const CpuSet& allowed,
                           std::vector<CpuSet>& cpus_of) {
  std::map<CpuSet, std::vector<size_t>> on_socket, on_node;
  for (size_t i = 0; i < ranks; ++i) {
    CpuSet node = topo::cpus_of_nodes(t, {node_of(*gpus[i])}) & allowed;
    CpuSet socket;
    for (const topo::Package& p : t.packages)
      if (p.cpus.intersects(node)) socket |= p.cpus;
    on_socket[(socket.empty() ? node : socket) & allowed].push_back(i);
    on_node[node].push_back(i);
  }
  size_t per = SIZE_MAX;
  for (const auto& [node, members] : on_node) per = std::min(per, cores_within(t, index, node).size() / members.size());
  if (per == 0) return Error{"gpu-affinity-socket", "a NUMA node has fewer cores than GPUs", ErrorKind::usage};
  std::map<unsigned, std::vector<CpuSet>> group_of;  // a head core's first PU -> its group
  for (const auto& [socket, members] : on_socket) {
    CpuSet assigned;
    for (size_t i : members) assigned |= topo::cpus_of_nodes(t, {node_of(*gpus[i])}) & allowed;
    std::vector<CpuSet> heads = cores_within(t, index, assigned), others = cores_within(t, index, socket - assigned);
    for (const CpuSet& h : heads) group_of[*h.first()] = {h};
    for (size_t k = 0; k < others.size(); ++k) group_of[*heads[k % heads.size()].first()].push_back(others[k]);
  }
  for (const auto& [node, members] : on_node) {
    std::vector<CpuSet> heads = cores_within(t, index, node);
    for (size_t k = 0; k < members.size(); ++k) {
      size_t shortest = SIZE_MAX;
      for (size_t c = k * per; c < (k + 1) * per; ++c) shortest = std::min(shortest, group_of[*heads[c].first()].size());
      for (size_t c = k * per; c < (k + 1) * per; ++c)
        for (size_t m = 0; m < shortest; ++m) cpus_of[members[k]] |= group_of[*heads[c].first()][m];
    }
  }
  return Ok{};
}

}  // namespace

Result<std::vector<RankBinding>> peer_bindings(const topo::Topology& t, const Request& req, Peer peer) {
  std::vector<std::string> explain, warnings;
  auto vis = visible_gpus(t, req, explain, warnings);
  if (!vis) return vis.error();
  const std::vector<const topo::Gpu*>& gpus = vis->gpus;
  unsigned ranks = req.ranks.value_or(unsigned(gpus.size()));
  if (gpus.empty()) return Error{to_string(peer), "needs GPUs", ErrorKind::usage};
  if (ranks > gpus.size()) return Error{to_string(peer), "one process per GPU only (" + std::to_string(ranks) + " ranks, " +
                                                             std::to_string(gpus.size()) + " GPUs)", ErrorKind::usage};
  CpuSet allowed = usable_cpus(t, req);
  const topo::CoreIndex index(t);
  std::vector<CpuSet> cpus_of(gpus.size());
  std::vector<size_t> gpu_of(ranks);
  for (unsigned r = 0; r < ranks; ++r) gpu_of[r] = r;

  if (peer == Peer::slurm_block || peer == Peer::slurm_cyclic) {
    // The CPU mask comes first; the GPU follows it (Slurm picks the GPUs after the CPUs).
    auto tasks = slurm_task_cpus(t, allowed, ranks, peer == Peer::slurm_cyclic);
    if (!tasks) return Error{to_string(peer), tasks.error().why, ErrorKind::usage};
    gpu_of = slurm_closest_gpus(gpus, *tasks);
    for (unsigned r = 0; r < ranks; ++r) cpus_of[gpu_of[r]] = (*tasks)[r];
  } else if (peer == Peer::gpu_affinity_socket) {
    if (Status st = gpu_affinity_socket(t, index, gpus, ranks, allowed, cpus_of); !st) return st.error();
  } else {
    // torchrun: per NUMA node, the GPUs torch sees on it, in index order.
    std::map<unsigned, std::vector<size_t>> on_node;
    for (size_t i = 0; i < gpus.size(); ++i) on_node[node_of(*gpus[i])].push_back(i);
    for (const auto& [node, members] : on_node) {
      CpuSet cpus = topo::cpus_of_nodes(t, {node}) & allowed;
      if (cpus.empty()) return Error{to_string(peer), "GPU on NUMA node " + std::to_string(node) + ", which has no allowed CPU", ErrorKind::usage};
      if (peer == Peer::torchrun_exclusive) {
        std::vector<CpuSet> cores = cores_within(t, index, cpus);
        if (cores.size() < members.size())
          return Error{to_string(peer), "fewer physical cores than GPUs on NUMA node " + std::to_string(node), ErrorKind::usage};
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
    const topo::Gpu* g = gpus[gpu_of[r]];
    out[r].gpus.push_back({g->index, g->pci, g->vendor, g->stack});
    out[r].cpus = cpus_of[gpu_of[r]];
    out[r].mem_policy = MemPolicy::none;  // none of these tools sets a memory policy by default: first touch
  }
  return out;
}

}  // namespace gpubind::plan
