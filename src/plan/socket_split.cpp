#include "plan/socket_split.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "util/strings.hpp"

namespace gpubind::plan {

namespace {

// The NUMA node holding a core's first PU (the first node when the source gives none).
unsigned node_of(const topo::Topology& t, const CoreSlot& s) {
  if (const topo::NumaNode* n = topo::numa_of_pu(t, *s.pus.first())) return n->os_index;
  return t.numa_nodes.empty() ? 0 : t.numa_nodes[0].os_index;
}

unsigned package_of(const topo::Topology& t, unsigned node) { return topo::package_of_node(t, node).value_or(0); }

unsigned gap(unsigned a, unsigned b) { return a > b ? a - b : b - a; }

}  // namespace

std::optional<std::vector<CpuSet>> split_sockets(const topo::Topology& t, const CoreTable& table,
                                                 const std::vector<unsigned>& home, bool balanced,
                                                 std::vector<std::string>& explain) {
  std::vector<CpuSet> out(home.size());
  std::vector<unsigned> slot_node(table.slots.size());
  for (size_t i = 0; i < table.slots.size(); ++i) slot_node[i] = node_of(t, table.slots[i]);

  // Ranks by package, in rank order.
  std::map<unsigned, std::vector<size_t>> by_package;
  for (size_t r = 0; r < home.size(); ++r) by_package[package_of(t, home[r])].push_back(r);

  for (const auto& [pkg, ranks] : by_package) {
    std::vector<size_t> pool;  // slot indices of this package
    for (size_t i = 0; i < table.slots.size(); ++i)
      if (package_of(t, slot_node[i]) == pkg) pool.push_back(i);
    if (pool.size() < ranks.size()) return std::nullopt;
    // Equal shares; the first ranks get one more unless --balanced.
    std::map<size_t, size_t> share;
    for (size_t q = 0; q < ranks.size(); ++q)
      share[ranks[q]] = pool.size() / ranks.size() + (!balanced && q < pool.size() % ranks.size() ? 1 : 0);
    std::vector<bool> used(table.slots.size(), false);
    std::map<size_t, size_t> have;

    // Groups of ranks by home node, in order of their first rank.
    std::vector<std::pair<unsigned, std::vector<size_t>>> groups;
    for (size_t r : ranks) {
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == home[r]; });
      if (g == groups.end()) groups.push_back({home[r], {r}});
      else g->second.push_back(r);
    }

    // 1. Each group splits its own node's cores (up to its shares), in contiguous blocks.
    for (const auto& [node, members] : groups) {
      std::vector<size_t> local;
      for (size_t i : pool)
        if (slot_node[i] == node) local.push_back(i);
      size_t want = 0;
      for (size_t r : members) want += share[r];
      size_t take = std::min(want, local.size());
      size_t k = members.size();
      for (size_t q = 0; q < k; ++q) {
        size_t from = q * take / k, to = (q + 1) * take / k;
        for (size_t j = from; j < to && have[members[q]] < share[members[q]]; ++j) {
          out[members[q]] |= table.slots[local[j]].pus;
          used[local[j]] = true;
          ++have[members[q]];
        }
      }
    }
    // 2. Each rank tops up its share from the package's nearest free cores: NUMA distance, then
    //    node number nearest its own, then core order.
    for (const auto& [node, members] : groups) {
      std::vector<size_t> free;
      for (size_t i : pool)
        if (!used[i]) free.push_back(i);
      auto key = [&, n = node](size_t i) {
        unsigned d = topo::numa_distance(t, n, slot_node[i]).value_or(slot_node[i] == n ? 10 : 20);
        return std::make_tuple(d, gap(slot_node[i], n), slot_node[i], i);
      };
      std::stable_sort(free.begin(), free.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
      size_t next = 0;
      for (size_t r : members) {
        std::vector<unsigned> extra_nodes;
        while (have[r] < share[r] && next < free.size()) {
          size_t i = free[next++];
          out[r] |= table.slots[i].pus;
          used[i] = true;
          ++have[r];
          if (std::find(extra_nodes.begin(), extra_nodes.end(), slot_node[i]) == extra_nodes.end())
            extra_nodes.push_back(slot_node[i]);
        }
        explain.push_back("rank " + std::to_string(r) + ": " + std::to_string(have[r]) + " of package " + std::to_string(pkg) +
                          "'s cores, node " + std::to_string(node) + " first" +
                          (extra_nodes.empty() ? std::string() : ", then node " + join_numbers(extra_nodes)) + ": " +
                          out[r].to_list());
      }
    }
  }
  return out;
}

}  // namespace gpubind::plan
