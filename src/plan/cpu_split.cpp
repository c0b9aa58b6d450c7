#include "plan/cpu_split.hpp"

#include <algorithm>
#include <map>

#include "util/strings.hpp"

namespace gpubind::plan {

CoreTable make_core_table(const topo::Topology& t, const CpuSet& allowed, bool smt) {
  CoreTable table;
  unsigned top = t.cpus.last().value_or(0);
  std::vector<int> l3_of_pu(top + 1, -1);
  for (size_t i = 0; i < t.l3_domains.size(); ++i)
    for (unsigned pu : t.l3_domains[i].cpus.ids())
      if (pu <= top) l3_of_pu[pu] = int(i);
  for (const topo::Core& c : t.cores) {
    CpuSet pus = c.pus.is_subset_of(allowed) ? c.pus : c.pus & allowed;
    if (pus.empty()) continue;
    if (!smt) pus = CpuSet::of({*pus.first()});
    unsigned first = *c.pus.first();
    table.slots.push_back({pus, first <= top ? l3_of_pu[first] : -1});
  }
  std::stable_sort(table.slots.begin(), table.slots.end(), [](const CoreSlot& a, const CoreSlot& b) {
    if (a.l3 != b.l3) return a.l3 < b.l3;
    return *a.pus.first() < *b.pus.first();
  });
  table.slot_of_pu.assign(top + 1, -1);
  for (size_t i = 0; i < table.slots.size(); ++i)
    for (unsigned pu : table.slots[i].pus.ids()) table.slot_of_pu[pu] = int(i);
  return table;
}

std::string ranks_text(const std::vector<size_t>& members) {
  // A warning about 4096 ranks stays one short line ("ranks 0-4095").
  return (members.size() == 1 ? "rank " : "ranks ") + join_number_runs(std::vector<unsigned>(members.begin(), members.end()));
}

std::vector<const CoreSlot*> CoreTable::within(const CpuSet& cpus) const {
  std::vector<int> idx;
  for (unsigned pu : cpus.ids())
    if (pu < slot_of_pu.size() && slot_of_pu[pu] >= 0) idx.push_back(slot_of_pu[pu]);
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  std::vector<const CoreSlot*> out;
  out.reserve(idx.size());
  for (int i : idx) out.push_back(&slots[size_t(i)]);
  return out;
}

namespace {

// Hands `n` consecutive slots to `k` ranks: base each, the first n % k one more unless balanced.
std::vector<size_t> block_sizes(size_t n, size_t k, bool balanced) {
  std::vector<size_t> sizes(k, n / k);
  if (!balanced)
    for (size_t i = 0; i < n % k; ++i) ++sizes[i];
  return sizes;
}

}  // namespace

Split split_fewest_cores(const std::vector<const CoreSlot*>& cores, const CpuSet& domain, unsigned ranks) {
  size_t c = cores.size();
  if (c == 0 || ranks <= c) return split_domain(cores, domain, ranks, false);  // no core need be split
  Split s;
  s.blocks.assign(ranks, CpuSet());
  std::vector<std::vector<unsigned>> pus(c);
  for (size_t j = 0; j < c; ++j) pus[j] = (cores[j]->pus & domain).ids();
  // m split cores (the last m) take r = ranks - (c - m) ranks.
  auto fits = [&](size_t m, bool even) {
    size_t r = ranks - (c - m), have = 0;
    for (size_t j = c - m; j < c; ++j) {
      have += pus[j].size();
      if (even && (r % m != 0 || pus[j].size() < r / m || pus[j].size() % (r / m) != 0)) return false;
    }
    return have >= r;
  };
  size_t m = 0;
  for (size_t k = 1; k <= c && !m; ++k)
    if (fits(k, true)) m = k;
  for (size_t k = 1; k <= c && !m; ++k)
    if (fits(k, false)) m = k;
  if (!m) return split_domain(cores, domain, ranks, false);  // fewer PUs than ranks: they share cores
  unsigned r = 0;
  for (size_t j = 0; j < c - m; ++j) s.blocks[r++] = cores[j]->pus & domain;
  size_t left = ranks - r;
  for (size_t j = c - m; j < c; ++j) {
    size_t k = left / (c - j) + (left % (c - j) ? 1 : 0);  // this core's ranks, the remainder first
    k = std::min(k, pus[j].size());
    for (size_t q = 0; q < k; ++q) {
      size_t from = q * pus[j].size() / k, to = (q + 1) * pus[j].size() / k;
      for (size_t i = from; i < to; ++i) s.blocks[r].set(pus[j][i]);
      ++r;
    }
    left -= k;
  }
  s.how = std::to_string(c - m) + " rank(s) on a whole core each, " + std::to_string(ranks - (c - m)) + " on the PUs of " +
          std::to_string(m) + " split core(s): the fewest cores split";
  return s;
}

Split split_domain(const std::vector<const CoreSlot*>& cores, const CpuSet& domain, unsigned ranks, bool balanced) {
  Split s;
  s.blocks.assign(ranks, CpuSet());
  if (cores.empty() || ranks == 0) {
    s.how = "no usable cores";
    return s;
  }
  size_t n = cores.size();

  if (n < ranks) {
    // More ranks than cores: each rank still gets one whole core, cores are reused in order.
    for (unsigned r = 0; r < ranks; ++r) s.blocks[r] = cores[r % n]->pus & domain;
    s.shared = true;
    s.how = std::to_string(ranks) + " ranks on " + std::to_string(n) + " cores: ranks share cores";
    return s;
  }

  // L3 domains present, in slot order, with their slot ranges.
  std::vector<std::pair<size_t, size_t>> l3_ranges;  // [begin, end) into cores
  for (size_t i = 0; i < n; ++i) {
    if (l3_ranges.empty() || cores[i]->l3 != cores[l3_ranges.back().first]->l3 || cores[i]->l3 < 0)
      l3_ranges.push_back({i, i + 1});
    else
      l3_ranges.back().second = i + 1;
  }
  bool have_l3 = cores[0]->l3 >= 0 && l3_ranges.size() > 1;
  size_t d = l3_ranges.size();

  auto give = [&](unsigned r, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const CpuSet& pus = cores[i]->pus;
      if (pus.is_subset_of(domain)) s.blocks[r] |= pus;
      else s.blocks[r] |= pus & domain;
    }
  };

  bool equal_l3 = std::all_of(l3_ranges.begin(), l3_ranges.end(), [&](auto& rg) {
    return rg.second - rg.first == l3_ranges[0].second - l3_ranges[0].first;
  });
  if (have_l3 && equal_l3 && d >= ranks && d % ranks == 0) {
    // Whole L3 domains per rank: 2 ranks on 8 L3 domains get 4 each.
    size_t per = d / ranks;
    for (unsigned r = 0; r < ranks; ++r) give(r, l3_ranges[r * per].first, l3_ranges[(r + 1) * per - 1].second);
    s.how = std::to_string(per) + " whole L3 domain(s) per rank";
    return s;
  }
  if (have_l3 && ranks % d == 0) {
    // Several ranks per L3 domain: each domain is split among ranks/d ranks.
    size_t per = ranks / d;
    bool fits = std::all_of(l3_ranges.begin(), l3_ranges.end(), [&](auto& rg) { return rg.second - rg.first >= per; });
    if (fits) {
      for (size_t j = 0; j < d; ++j) {
        auto sizes = block_sizes(l3_ranges[j].second - l3_ranges[j].first, per, balanced);
        size_t at = l3_ranges[j].first;
        for (size_t q = 0; q < per; ++q) {
          give(unsigned(j * per + q), at, at + sizes[q]);
          at += sizes[q];
        }
      }
      s.how = std::to_string(per) + " rank(s) per L3 domain, contiguous cores within it";
      return s;
    }
  }
  auto sizes = block_sizes(n, ranks, balanced);
  size_t at = 0;
  for (unsigned r = 0; r < ranks; ++r) {
    give(r, at, at + sizes[r]);
    at += sizes[r];
  }
  s.how = "contiguous blocks of " + std::to_string(n / ranks) + (n % ranks && !balanced ? "-" + std::to_string(n / ranks + 1) : "") +
          " core(s)" + (balanced && n % ranks ? " (" + std::to_string(n % ranks) + " left idle: --balanced)" : "");
  return s;
}

}  // namespace gpubind::plan
