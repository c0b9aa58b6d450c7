#include <algorithm>

#include "plan/steps.hpp"

namespace gpubind::plan {

using topo::Gpu;
using topo::PathClass;
using topo::Topology;

CpuSet allowed_cpus(const Topology& t, const Request& req) { return req.allowed ? *req.allowed & t.cpus : t.allowed_cpus; }

CpuSet usable_cpus(const Topology& t, const Request& req) { return allowed_cpus(t, req) - steps::whole_cores(t, req.reserve); }

Score score_plan(const Topology& t, const std::vector<RankBinding>& ranks, const CpuSet& usable) {
  Score s;
  s.cores_known = t.cores_known;
  CpuSet given;
  for (const RankBinding& rb : ranks) given |= rb.cpus;
  s.idle_cpus = unsigned((usable - given).count());
  double local = 0, total = 0, mem_ok = 0;
  unsigned judged = 0;
  size_t top = t.cpus.last().value_or(0) + 1;
  std::vector<unsigned> uses(top, 0);
  std::vector<int> core_of_pu(top, -1);
  for (size_t i = 0; i < t.cores.size(); ++i)
    for (unsigned pu : t.cores[i].pus.ids())
      if (pu < top) core_of_pu[pu] = int(i);
  std::vector<size_t> core_seen_by(t.cores.size(), SIZE_MAX);  // last rank that counted the core
  bool first = true;
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    const RankBinding& rb = ranks[ri];
    unsigned cores = 0;
    for (unsigned pu : rb.cpus.ids()) {
      if (pu >= top) continue;
      ++uses[pu];
      int core = core_of_pu[pu];
      if (core >= 0 && core_seen_by[size_t(core)] != ri) {
        core_seen_by[size_t(core)] = ri;
        ++cores;
      }
    }
    s.min_cores = first ? cores : std::min(s.min_cores, cores);
    s.max_cores = first ? cores : std::max(s.max_cores, cores);
    first = false;
    s.nic_path.push_back(rb.nics.empty() ? std::nullopt : std::optional<PathClass>(rb.nics[0].path));

    std::vector<unsigned> gpu_nodes, gpu_memory;  // memory is local on either (--mem-on-gpu: the GPU's own)
    bool known = !rb.gpus.empty();
    for (const GpuRef& g : rb.gpus) {
      const Gpu* gpu = topo::find_gpu(t, g.pci);
      if (!gpu || !gpu->numa) {
        known = false;
        break;
      }
      for (unsigned n : topo::nodes_with_cpus(t, *gpu->numa)) gpu_nodes.push_back(n);
      gpu_memory.insert(gpu_memory.end(), gpu->memory_numa.begin(), gpu->memory_numa.end());
    }
    if (!known || rb.cpus.empty()) continue;
    CpuSet near = topo::cpus_of_nodes(t, gpu_nodes);
    double share = double((rb.cpus & near).count()) / double(rb.cpus.count());
    local += double((rb.cpus & near).count());
    total += double(rb.cpus.count());
    ++judged;
    if (rb.mem_policy == MemPolicy::none) {
      mem_ok += share;  // first touch lands on the node of whichever CPU the thread runs on
    } else {
      bool all_local = !rb.mem_nodes.empty() && std::all_of(rb.mem_nodes.begin(), rb.mem_nodes.end(), [&](unsigned n) {
        return std::find(gpu_nodes.begin(), gpu_nodes.end(), n) != gpu_nodes.end() ||
               std::find(gpu_memory.begin(), gpu_memory.end(), n) != gpu_memory.end();
      });
      mem_ok += all_local ? 1.0 : 0.0;
    }
  }
  for (unsigned n : uses) s.overlap_cpus += n > 1;
  if (judged) {
    s.cpu_locality = total > 0 ? local / total : 0.0;
    s.mem_locality = mem_ok / judged;
  }
  return s;
}

}  // namespace gpubind::plan
