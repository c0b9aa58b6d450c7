// Fewer ranks than visible GPUs: which GPUs the ranks take (issue 33 item 1). Rank r on visible
// GPU r puts 4 ranks of an 8-GPU, 2-socket node on one socket and leaves the other idle; where
// gpubind decides what the workers see, it takes GPUs spread over packages, then NUMA nodes, then
// PCIe switches, and makes them the workers' visible list.
#include <algorithm>
#include <optional>
#include <tuple>

#include "plan/steps.hpp"
#include "util/strings.hpp"

namespace gpubind::plan::steps {

using topo::Gpu;
using topo::Topology;

namespace {

bool env_set(const Request& req, const std::string& k) { return req.env.find(k) != req.env.end(); }

// What fixed the GPUs the ranks see, or "" when gpubind may choose them.
std::string visibility_fixed_by(const Topology& t, const Request& req, const std::vector<const Gpu*>& visible) {
  if (!req.spread_gpus) return "--no-spread-gpus";
  for (const char* k : {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "SLURM_STEP_GPUS",
                        "SLURM_JOB_GPUS"})
    if (env_set(req, k)) return k;
  if (auto it = req.env.find("NVIDIA_VISIBLE_DEVICES"); it != req.env.end() && it->second != "all")
    return "NVIDIA_VISIBLE_DEVICES";
  size_t all = 0;
  for (const Gpu& g : t.gpus) all += g.vendor == visible[0]->vendor;
  if (req.openable_gpus && visible.size() < all) return "the GPU device files this process may open";
  return "";
}

// Whether the visible GPUs give a spread anything to go by: one vendor, whole GPUs (not Level
// Zero stacks), every one's NUMA node known.
bool spreadable(const std::vector<const Gpu*>& visible) {
  for (const Gpu* g : visible)
    if (g->vendor != visible[0]->vendor || g->stack) return false;
  return locality_known(visible);
}

std::optional<unsigned> package_of(const Topology& t, const Gpu& g) {
  const topo::NumaNode* n = g.numa && !g.numa->empty() ? topo::find_numa(t, (*g.numa)[0]) : nullptr;
  return n ? n->package : std::nullopt;
}

// How far a GPU is from the CPUs the ranks may use: 0 its NUMA node has some, 1 its package has,
// 2 neither (a cgroup on the other socket: spreading there gains no core).
int reach(const Topology& t, const Gpu& g, const CpuSet& allowed) {
  if (topo::cpus_of_nodes(t, *g.numa).intersects(allowed)) return 0;
  std::optional<unsigned> pkg = package_of(t, g);
  for (const topo::Package& p : t.packages)
    if (pkg && p.os_index == *pkg && p.cpus.intersects(allowed)) return 1;
  return 2;
}

// `n` of the visible GPUs, chosen one at a time: the GPU nearest the allowed CPUs, then the one
// whose package, then NUMA node, holds the fewest GPUs chosen so far, then the one with the most
// NVLink/xGMI lanes to the GPUs chosen (the ranks talk: on a DGX-1's hybrid cube mesh GPU 0's
// partner on the other socket is GPU 4), then the one farthest (PCIe) from those of its node,
// then the first. Returned as positions in the visible list, in that order.
std::vector<size_t> spread_positions(const Topology& t, const std::vector<const Gpu*>& visible, unsigned n, const CpuSet& allowed) {
  std::vector<size_t> chosen;
  std::vector<bool> used(visible.size(), false);
  std::vector<std::optional<unsigned>> pkg(visible.size());
  for (size_t i = 0; i < visible.size(); ++i) pkg[i] = package_of(t, *visible[i]);
  auto key = [&](size_t i) {
    const Gpu& g = *visible[i];
    unsigned same_pkg = 0, same_node = 0, lanes = 0;
    int nearest = int(topo::PathClass::SYS) + 1;
    for (size_t j : chosen) {
      const Gpu& o = *visible[j];
      if (const topo::GpuLink* l = topo::find_link(t, g.pci, o.pci)) lanes += std::max(1u, l->count);
      same_pkg += pkg[j] == pkg[i];
      bool node = o.numa == g.numa;
      same_node += node;
      if (node) nearest = std::min(nearest, int(topo::path_class(g, o)));
    }
    return std::make_tuple(reach(t, g, allowed), same_pkg, same_node, -int(lanes), -nearest, i);
  };
  while (chosen.size() < n) {
    std::optional<decltype(key(0))> best;
    for (size_t i = 0; i < visible.size(); ++i)
      if (!used[i])
        if (auto k = key(i); !best || k < *best) best = k;
    size_t pick = std::get<5>(*best);  // the key ends with the position
    used[pick] = true;
    chosen.push_back(pick);
  }
  return chosen;
}

}  // namespace

std::vector<const Gpu*> spread_gpus(Ctx& c, const std::vector<const Gpu*>& visible, unsigned ranks, unsigned k) {
  if (ranks < 2 || size_t(ranks) * k >= visible.size()) return visible;
  // none binds nothing, cpu-only is GPU-unaware by definition: neither chooses GPUs.
  if (c.req.policy == Policy::none || c.req.policy == Policy::cpu_only) return visible;
  if (k > 1 && !c.req.isolate_gpus) return visible;  // a worker of several GPUs finds them by position
  if (!spreadable(visible)) return visible;
  if (std::string fixed = visibility_fixed_by(c.t, c.req, visible); !fixed.empty()) {
    c.plan.explain.push_back(std::to_string(ranks) + " ranks on " + std::to_string(visible.size()) + " visible GPUs, fixed by " + fixed +
                             ": rank r takes visible GPU r");
    return visible;
  }
  // One seed GPU per rank; a rank of several GPUs adds the free GPUs closest to its seed.
  std::vector<size_t> seeds = spread_positions(c.t, visible, ranks, c.allowed);
  std::sort(seeds.begin(), seeds.end());
  std::vector<const Gpu*> out;
  for (size_t s : seeds) out.push_back(visible[s]);
  if (k > 1) {
    std::vector<const Gpu*> rest;
    for (size_t i = 0; i < visible.size(); ++i)
      if (!std::binary_search(seeds.begin(), seeds.end(), i)) rest.push_back(visible[i]);
    out.insert(out.end(), rest.begin(), rest.end());
  }
  bool same = true;
  for (size_t r = 0; r < ranks; ++r) same = same && out[r] == visible[r];
  if (same) return visible;
  std::vector<unsigned> idx;
  for (size_t r = 0; r < ranks; ++r) idx.push_back(out[r]->index);
  c.plan.explain.push_back(std::to_string(ranks) + " ranks on " + std::to_string(visible.size()) + " visible GPUs: GPUs " +
                           join_numbers(idx) + " spread over packages, NUMA nodes and PCIe switches" +
                           (k > 1 ? " (each rank's first)" : ", made the workers' visible GPUs in rank order") +
                           " (--no-spread-gpus: rank r on visible GPU r)");
  if (k == 1) c.spread.assign(out.begin(), out.begin() + ranks);
  return out;
}

}  // namespace gpubind::plan::steps
