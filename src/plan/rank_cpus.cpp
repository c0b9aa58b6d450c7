#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "plan/crowded.hpp"
#include "plan/socket_split.hpp"
#include "plan/steps.hpp"
#include "util/strings.hpp"

namespace gpubind::plan::steps {

using topo::Gpu;
using topo::Topology;

namespace {

// The CPUs near one GPU under a policy: the GPU's own locality (closest, l3: an L3 domain on
// Frontier-type nodes, a NUMA node or package elsewhere), its NUMA node(s) (numa), or the
// package(s) holding them (socket).
CpuSet gpu_locality(const Topology& t, const Gpu& g, Policy policy) {
  CpuSet node = topo::cpus_of_nodes(t, *g.numa);
  if (policy == Policy::numa) return node;
  if (policy == Policy::socket) {
    CpuSet pkg;
    for (const topo::Package& p : t.packages)
      if (p.cpus.intersects(node) || (g.cpus && p.cpus.intersects(*g.cpus))) pkg |= p.cpus;
    return pkg.empty() ? node : pkg;
  }
  return g.cpus && !g.cpus->empty() ? *g.cpus : node;
}

// The CPUs a rank should run on before splitting: its GPU's locality, or a documented fallback.
CpuSet target_domain(Ctx& c, unsigned rank, const std::vector<const Gpu*>& gpus, RankBinding& rb) {
  const Topology& t = c.t;
  CpuSet domain;
  if (!locality_known(gpus)) {
    unsigned ranks = unsigned(c.plan.ranks.size());
    if (ranks == 1) {
      // One rank and nowhere known to put it: the whole allowed set, not a guessed package.
      c.plan.explain.push_back("rank 0: GPU locality unknown and the only rank: every allowed CPU, no package guessed");
      return c.allowed;
    }
    // Unknown locality (VM, numa_node -1): spread ranks over packages in GPU order.
    std::vector<CpuSet> places;
    for (const topo::Package& p : t.packages)
      if (p.cpus.intersects(c.allowed)) places.push_back(p.cpus & c.allowed);
    if (places.empty())
      for (const topo::NumaNode& n : t.numa_nodes)
        if (n.cpus.intersects(c.allowed)) places.push_back(n.cpus & c.allowed);
    if (places.empty()) places.push_back(c.allowed);
    size_t p = size_t(rank) * places.size() / std::max(1u, ranks);
    c.plan.explain.push_back("rank " + std::to_string(rank) + ": GPU locality unknown; package slot " + std::to_string(p) +
                             " of " + std::to_string(places.size()) + " in GPU order: " + cpus_text(places[p]));
    return places[p];
  }
  for (const Gpu* g : gpus) domain |= gpu_locality(t, *g, c.req.policy) & c.allowed;
  if (!domain.empty()) return domain;

  // The GPU's node has no allowed cores (a cgroup on the other socket, reserved cores): the
  // nearest node with allowed cores, same package first, then by NUMA distance.
  const Gpu* g = gpus[0];
  unsigned home = g->numa->empty() ? 0 : (*g->numa)[0];
  std::optional<unsigned> home_pkg;
  if (const topo::NumaNode* n = topo::find_numa(t, home)) home_pkg = n->package;
  const topo::NumaNode* best = nullptr;
  auto key = [&](const topo::NumaNode& n) {
    bool same_pkg = home_pkg && n.package == home_pkg;
    unsigned dist = topo::numa_distance(t, home, n.os_index).value_or(n.os_index == home ? 10 : 255);
    return std::make_tuple(!same_pkg, dist, n.os_index);
  };
  for (const topo::NumaNode& n : t.numa_nodes)
    if (n.cpus.intersects(c.allowed) && (!best || key(n) < key(*best))) best = &n;
  if (!best) return c.allowed;
  std::string w = "GPU " + std::to_string(g->index) + " (" + g->pci + ") is on NUMA node " + join_numbers(*g->numa) +
                  ", which has no allowed CPUs; rank " + std::to_string(rank) + " uses node " + std::to_string(best->os_index) +
                  (home_pkg && best->package == home_pkg ? " (same package)" : " (nearest by NUMA distance)");
  rb.warnings.push_back(w);
  return best->cpus & c.allowed;
}

// A rank alone on its GPU's NUMA node(s) (no other rank's target touches them) gets the whole
// node, not only its GPU's L3 domain: the rest of the node would otherwise stay idle, and it is
// as local (LLNL Tioga -n 1: 16 cores, not the GCD's 8). Policy closest only: l3 asks for the L3.
void widen_lone_ranks(Ctx& c, const GpusOfRanks& gpus_of, std::vector<CpuSet>& targets) {
  for (size_t r = 0; r < targets.size(); ++r) {
    if (gpus_of[r].empty() || !locality_known(gpus_of[r])) continue;
    CpuSet node = topo::cpus_of_nodes(c.t, topo::nodes_covering(c.t, targets[r])) & c.allowed;
    if (node == targets[r] || node.empty()) continue;
    bool alone = true;
    for (size_t o = 0; o < targets.size() && alone; ++o) alone = o == r || !targets[o].intersects(node);
    if (!alone) continue;
    c.plan.explain.push_back("rank " + std::to_string(r) + ": alone on NUMA node(s) " +
                             join_numbers(topo::nodes_covering(c.t, targets[r])) + ": the whole node " + cpus_text(node) +
                             ", not only its GPU's " + cpus_text(targets[r]));
    targets[r] = node;
  }
}

// Ranks whose target domains overlap form one pool; pools in the order of their first rank,
// members in rank order. Ranks with the same target are one pool whatever else, so the pairwise
// overlap test runs over the distinct targets (a few per GPU node), not over ranks: planning
// stays near-linear in the rank count.
std::vector<std::vector<size_t>> pool_ranks(const std::vector<CpuSet>& targets) {
  std::map<CpuSet, size_t> id_of;
  std::vector<const CpuSet*> distinct;
  std::vector<size_t> target_id(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    auto [it, fresh] = id_of.emplace(targets[i], distinct.size());
    if (fresh) distinct.push_back(&it->first);
    target_id[i] = it->second;
  }
  std::vector<size_t> parent(distinct.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (size_t a = 0; a < distinct.size(); ++a)
    for (size_t b = a + 1; b < distinct.size(); ++b)
      if (distinct[a]->intersects(*distinct[b])) parent[find(b)] = find(a);
  std::map<size_t, size_t> pool_of_root;
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < targets.size(); ++i) {
    auto [it, fresh] = pool_of_root.emplace(find(target_id[i]), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(i);
  }
  return out;
}

// Splits one pool among its ranks: whole L3 domains (policy l3), whole cores, or single PUs when
// the pool was settled on SMT siblings.
void split_pool(Ctx& c, const CrowdedPool& pool) {
  const auto& members = pool.members;
  const CpuSet& domain = pool.domain;
  std::string who = ranks_text(members);
  if (c.req.policy == Policy::l3) {
    // One L3 domain per rank, in order; ranks beyond the L3 count share.
    std::vector<CpuSet> l3s;
    for (const topo::L3Domain& l : c.t.l3_domains)
      if ((l.cpus & domain).intersects(c.allowed)) l3s.push_back(l.cpus & domain);
    if (!l3s.empty()) {
      for (size_t q = 0; q < members.size(); ++q) c.plan.ranks[members[q]].cpus = l3s[q % l3s.size()];
      if (members.size() > l3s.size())
        c.plan.warnings.push_back(who + ": " + std::to_string(members.size()) + " ranks on " + std::to_string(l3s.size()) +
                                  " L3 domains: some ranks share an L3 domain");
      c.plan.explain.push_back(who + ": one L3 domain each within " + cpus_text(domain));
      return;
    }
    c.plan.warnings.push_back("the topology has no L3 information: policy l3 falls back to closest");
  }
  std::vector<const CoreSlot*> slots = c.cores.within(domain);
  // SMT siblings to different ranks: only as many cores split as the rank count needs.
  Split s = pool.by_pu ? split_fewest_cores(slots, domain, unsigned(members.size()))
                       : split_domain(slots, domain, unsigned(members.size()), c.req.balanced);
  for (size_t q = 0; q < members.size(); ++q) c.plan.ranks[members[q]].cpus = s.blocks[q];
  c.plan.explain.push_back(who + " split " + cpus_text(domain) + " (" + std::to_string(slots.size()) + " cores" +
                           (pool.by_pu ? ", " + std::to_string((domain & c.allowed).count()) + " PUs" : "") + "): " + s.how);
  if (s.shared) c.plan.warnings.push_back(who + ": more ranks than CPUs in " + cpus_text(domain) + "; ranks share cores");
}

// A pool's ranks take their blocks in the order of their GPUs in the visible list: with the GPUs
// the launcher gave each rank (Request::rank_gpus), the rank on GPU g gets what the default plan
// (rank r on visible GPU r) gives g's rank. Without them the order is the ranks' own.
void in_gpu_order(const Request& req, std::vector<size_t>& members) {
  if (req.rank_gpus.empty()) return;
  auto key = [&req](size_t r) { return req.rank_gpus[r].empty() ? size_t(-1) : size_t(req.rank_gpus[r][0]); };
  std::stable_sort(members.begin(), members.end(), [&key](size_t a, size_t b) { return key(a) < key(b); });
}

// Ranks whose GPUs sit near each other share a pool of cores. A crowded pool (fewer cores than
// ranks) is handled by rules, each tried only when the one before cannot give every rank a CPU of
// its own, so ranks stay on their GPU's node whenever sharing cannot be avoided anyway:
//   1. widen to the GPU's NUMA node(s) (a GPU whose locality is one L3 domain);
//   2. SMT siblings: when the pool has at least as many PUs as ranks, each rank gets its own PUs
//      (whole cores for as many ranks as possible);
//   3. spill the minimum: only the ranks beyond the pool's PUs move, to the nearest free cores
//      (same package first, then by NUMA distance), and only when that removes sharing;
//   4. otherwise the ranks share their own node's cores.
void split_pools(Ctx& c, std::vector<CpuSet> targets) {
  bool share = c.req.policy == Policy::socket || c.req.policy == Policy::numa || c.req.policy == Policy::none;
  if (share) {
    for (const auto& members : pool_ranks(targets)) {
      CpuSet domain;
      for (size_t i : members) domain |= targets[i];
      for (size_t i : members) c.plan.ranks[i].cpus = domain;
      c.plan.explain.push_back(ranks_text(members) + ": share " + cpus_text(domain) + " (policy " + to_string(c.req.policy) + ")");
    }
    return;
  }
  // 1. A crowded pool widens to its NUMA node(s), still local to the GPU.
  for (const auto& members : pool_ranks(targets)) {
    CpuSet domain;
    for (size_t i : members) domain |= targets[i];
    if (c.cores.count(domain) >= members.size()) continue;
    for (size_t i : members) targets[i] |= topo::cpus_of_nodes(c.t, topo::nodes_covering(c.t, targets[i])) & c.allowed;
    c.plan.explain.push_back(ranks_text(members) + ": fewer cores than ranks near their GPU; widened to their NUMA node");
  }
  std::vector<CrowdedPool> pools;
  for (auto& members : pool_ranks(targets)) {
    CpuSet domain;
    for (size_t i : members) domain |= targets[i];
    in_gpu_order(c.req, members);
    pools.push_back({members, domain, false});
  }
  // 2-4. Settle the crowded pools: SMT siblings, the minimal spill, or sharing.
  settle_crowded_pools(c.t, c.cores, c.allowed, pools, c.plan.explain, c.plan.warnings);
  for (const CrowdedPool& pool : pools) split_pool(c, pool);
}

}  // namespace

void assign_cpus(Ctx& c, const GpusOfRanks& gpus_of, bool any_gpu) {
  const Request& req = c.req;
  unsigned ranks = unsigned(c.plan.ranks.size());
  std::vector<CpuSet> targets(ranks);
  for (unsigned r = 0; r < ranks; ++r) {
    RankBinding& rb = c.plan.ranks[r];
    if (req.policy == Policy::none || req.policy == Policy::cpu_only || gpus_of[r].empty()) targets[r] = c.allowed;
    else targets[r] = target_domain(c, r, gpus_of[r], rb);
  }
  if (req.policy == Policy::closest) widen_lone_ranks(c, gpus_of, targets);
  if (req.policy == Policy::cpu_only || !any_gpu) {
    // GPU-unaware: contiguous blocks from CPU 0, like DeepSpeed's --bind_cores_to_rank
    // (cpu-only), or, without GPUs, the whole machine split evenly in hwloc's core order, so that
    // a block is a NUMA domain's cores even where CPU numbers go round-robin over the sockets.
    std::vector<CoreSlot> in_order = c.cores.slots;
    std::vector<unsigned> place(c.t.cpus.last().value_or(0) + 1, 0);
    if (req.policy == Policy::cpu_only) {
      for (unsigned pu = 0; pu < place.size(); ++pu) place[pu] = pu;
    } else {
      std::vector<unsigned> id = topo::logical_core_ids(c.t);
      for (size_t i = 0; i < c.t.cores.size(); ++i)
        for (unsigned pu : c.t.cores[i].pus.ids())
          if (pu < place.size()) place[pu] = id[i];
    }
    std::stable_sort(in_order.begin(), in_order.end(),
                     [&place](const CoreSlot& a, const CoreSlot& b) { return place[*a.pus.first()] < place[*b.pus.first()]; });
    // More ranks than cores but not than PUs: SMT siblings go to different ranks before ranks
    // share a core (as for crowded pools).
    size_t pus = 0;
    for (const CoreSlot& s : in_order) pus += s.pus.count();
    bool by_pu = in_order.size() < ranks && pus >= ranks;
    if (by_pu)
      c.plan.warnings.push_back(std::to_string(ranks) + " ranks on " + std::to_string(c.cores.slots.size()) +
                                " allowed cores: SMT siblings of some cores go to different ranks");
    std::vector<const CoreSlot*> slots;
    for (CoreSlot& s : in_order) {
      if (req.policy == Policy::cpu_only) s.l3 = -1;
      slots.push_back(&s);
    }
    Split s = by_pu ? split_fewest_cores(slots, c.allowed, ranks) : split_domain(slots, c.allowed, ranks, req.balanced);
    for (unsigned r = 0; r < ranks; ++r) c.plan.ranks[r].cpus = req.policy == Policy::none ? c.allowed : s.blocks[r];
    c.plan.explain.push_back(std::string(req.policy == Policy::cpu_only ? "GPU-unaware: " : "no GPU: ") + s.how + " over " +
                             c.allowed.to_list());
    if (s.shared) c.plan.warnings.push_back("more ranks than allowed cores: ranks share cores");
  } else if (req.policy == Policy::socket_split) {
    std::vector<unsigned> home;
    for (const CpuSet& target : targets) {
      std::vector<unsigned> nodes = topo::nodes_covering(c.t, target);
      home.push_back(nodes.empty() ? 0 : nodes[0]);
    }
    auto blocks = split_sockets(c.t, c.cores, home, req.balanced, c.plan.explain);
    if (blocks) {
      for (unsigned r = 0; r < ranks; ++r) c.plan.ranks[r].cpus = (*blocks)[r];
    } else {
      c.plan.warnings.push_back("socket-split: a package has fewer allowed cores than ranks; split as closest does");
      split_pools(c, targets);
    }
  } else {
    split_pools(c, targets);
  }
}

}  // namespace gpubind::plan::steps
