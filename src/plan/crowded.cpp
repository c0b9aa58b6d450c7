#include "plan/crowded.hpp"

#include <algorithm>
#include <optional>
#include <tuple>

#include "util/strings.hpp"

namespace gpubind::plan {

namespace {

unsigned node_of(const topo::Topology& t, unsigned pu) {
  const topo::NumaNode* n = topo::numa_of_pu(t, pu);
  return n ? n->os_index : 0;
}

}  // namespace

void settle_crowded_pools(const topo::Topology& t, const CoreTable& cores, const CpuSet& allowed, std::vector<CrowdedPool>& pools,
                          std::vector<std::string>& explain, std::vector<std::string>& warnings) {
  // Every usable core: its node, and which pool may give it up. Cores no pool needs are allowed
  // cores outside every pool, then an uncrowded pool's cores beyond one per rank (from the end of
  // its domain).
  struct Free {
    const CoreSlot* slot;
    unsigned node;
    std::optional<size_t> from;  // the pool that gives it up, if any
    bool taken = false;
  };
  std::vector<Free> free;
  CpuSet claimed;
  for (const CrowdedPool& p : pools) claimed |= p.domain;
  for (const CoreSlot* s : cores.within(allowed))
    if (!s->pus.intersects(claimed)) free.push_back({s, node_of(t, *s->pus.first()), std::nullopt});
  for (size_t i = 0; i < pools.size(); ++i) {
    std::vector<const CoreSlot*> mine = cores.within(pools[i].domain);
    for (size_t k = pools[i].members.size(); k < mine.size(); ++k) {
      const CoreSlot* s = mine[mine.size() - 1 - (k - pools[i].members.size())];
      free.push_back({s, node_of(t, *s->pus.first()), i});
    }
  }

  size_t original = pools.size();
  for (size_t pi = 0; pi < original; ++pi) {
    CrowdedPool& pool = pools[pi];
    std::vector<const CoreSlot*> mine = cores.within(pool.domain);
    size_t n = pool.members.size();
    if (mine.size() >= n) continue;
    size_t pus = 0;
    for (const CoreSlot* s : mine) pus += (s->pus & pool.domain).count();
    if (pus >= n) {
      pool.by_pu = true;
      warnings.push_back(ranks_text(pool.members) + ": " + std::to_string(n) + " ranks on " + std::to_string(mine.size()) +
                         " cores near their GPU: SMT siblings of some cores go to different ranks");
      explain.push_back(ranks_text(pool.members) + ": SMT siblings: " + std::to_string(pus) + " PUs for " + std::to_string(n) + " ranks");
      continue;
    }
    // Spill the ranks beyond the pool's PUs (the last ones), if every one finds a free core.
    size_t excess = n - std::max(pus, mine.size());
    unsigned home = mine.empty() ? 0 : node_of(t, *mine[0]->pus.first());
    auto home_pkg = topo::package_of_node(t, home);
    std::vector<std::tuple<bool, unsigned, unsigned, unsigned, size_t>> order;  // key..., index into free
    for (size_t k = 0; k < free.size(); ++k) {
      if (free[k].taken || free[k].from == pi) continue;
      unsigned node = free[k].node;
      bool same_pkg = home_pkg && topo::package_of_node(t, node) == home_pkg;
      unsigned dist = topo::numa_distance(t, home, node).value_or(node == home ? 10 : 20);
      order.push_back({!same_pkg, dist, node, *free[k].slot->pus.first(), k});
    }
    // Free capacity in PUs (a free core's SMT siblings can take one spilled rank each).
    size_t capacity = 0;
    for (const auto& o : order) capacity += free[std::get<4>(o)].slot->pus.count();
    if (capacity < excess) {
      explain.push_back(ranks_text(pool.members) + ": " + std::to_string(excess) + " rank(s) beyond the node's CPUs and only " +
                        std::to_string(capacity) + " free PU(s) elsewhere: they share their node's cores");
      continue;
    }
    std::sort(order.begin(), order.end());
    size_t take = 0;
    for (size_t got = 0; got < excess; ++take) got += free[std::get<4>(order[take])].slot->pus.count();
    CrowdedPool moved;
    moved.members.assign(pool.members.end() - long(excess), pool.members.end());
    moved.by_pu = take < excess;
    pool.members.resize(n - excess);
    if (mine.size() < pool.members.size()) pool.by_pu = true;
    for (size_t k = 0; k < take; ++k) {
      Free& f = free[std::get<4>(order[k])];
      f.taken = true;
      moved.domain |= f.slot->pus;
      if (f.from) pools[*f.from].domain = pools[*f.from].domain - f.slot->pus;
    }
    warnings.push_back(ranks_text(moved.members) + ": no CPU left near their GPU; moved to the nearest free core(s) " +
                       moved.domain.to_list() + " (the other ranks stay on their GPU's node)");
    explain.push_back(ranks_text(moved.members) + ": spilled to " + moved.domain.to_list() + "; " + ranks_text(pool.members) + " keep " +
                      pool.domain.to_list());
    pools.push_back(moved);
  }
}

}  // namespace gpubind::plan
