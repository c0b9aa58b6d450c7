#pragma once
// The planner's invariants (issue 3 acceptance), checked on any topology: used over the
// repository's example machines (unit) and over the shared real-machine corpus (corpus).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace gpubind::testing {

// The rank counts the acceptance names: 1, GPUs, 2 x GPUs, and GPUs/2 with 2 GPUs per rank; and
// issue 33's sweep: GPUs/2, GPUs-1 and GPUs+1 with one GPU each (fewer ranks than GPUs spread).
inline std::vector<plan::Request> invariant_requests(const topo::Topology& t) {
  std::vector<plan::Request> out;
  auto add = [&](unsigned ranks, std::optional<unsigned> k) {
    plan::Request r;
    r.ranks = ranks;
    r.gpus_per_rank = k;
    out.push_back(r);
  };
  unsigned g = 0;
  for (const auto& gpu : t.gpus) g += gpu.vendor == t.gpus[0].vendor;
  add(1, 1);
  add(1, std::nullopt);
  // A cgroup whose cpuset.mems allows only the last NUMA node with CPUs.
  if (g) {
    std::vector<unsigned> with_cpus = topo::cpu_numa_nodes(t);
    if (with_cpus.size() > 1) {
      add(g, 1);
      out.back().allowed_mems = CpuSet::of({with_cpus.back()});
    }
  }
  if (g) {
    add(g, 1);
    add(2 * g, 1);
    add(4 * g, 1);  // crowded: issue 10's POWER8 -n 16, NEC -n 32
    if (g >= 2) add(g / 2, 2);
    if (g >= 2) add(g / 2, 1);
    if (g >= 3) add(g - 1, 1);
    add(g + 1, 1);
  }
  return out;
}

inline void expect_plan_invariants(const topo::Topology& t, const plan::Request& req, const std::string& what) {
  auto p = plan::make_plan(t, req);
  ASSERT_TRUE(p.ok()) << what << ": " << p.error().message();
  unsigned allowed_cores = 0;
  for (const auto& c : t.cores) allowed_cores += c.pus.intersects(t.allowed_cpus);
  unsigned allowed_pus = unsigned(t.allowed_cpus.count());
  std::map<unsigned, unsigned> seen;
  std::map<std::string, bool> gpu_used;
  for (const auto& rb : p->ranks) {
    EXPECT_FALSE(rb.cpus.empty()) << what << " rank " << rb.local_rank << ": empty CPU set";
    EXPECT_TRUE(rb.cpus.is_subset_of(t.allowed_cpus)) << what << " rank " << rb.local_rank << ": CPUs outside the allowed set";
    for (unsigned pu : rb.cpus.ids()) ++seen[pu];
    for (unsigned n : rb.mem_nodes) {
      if (req.allowed_mems) {
        EXPECT_TRUE(req.allowed_mems->test(n)) << what << " rank " << rb.local_rank << ": memory node " << n
                                               << " outside the allowed " << req.allowed_mems->to_list();
      }
      const topo::NumaNode* node = topo::find_numa(t, n);
      ASSERT_NE(node, nullptr) << what;
      EXPECT_FALSE(node->cpus.empty()) << what << " rank " << rb.local_rank << ": CPU-less node " << n << " in mem_nodes";
    }
    for (const auto& g : rb.gpus) gpu_used[g.pci] = true;
  }
  // Disjoint whenever the machine has a PU per rank (SMT siblings before sharing, issue 10).
  if (allowed_cores >= p->ranks.size() || (req.smt && allowed_pus >= p->ranks.size())) {
    for (auto& [pu, n] : seen) EXPECT_EQ(n, 1u) << what << ": CPU " << pu << " given to " << n << " ranks";
  }

  // Overlap is never claimed as a fact the topology cannot show (NCCL files without SMT rules).
  EXPECT_EQ(p->score.cores_known, t.cores_known) << what;

  // Ranks whose GPU sits on node N stay on N when N has enough allowed cores for them.
  std::map<std::string, const topo::Gpu*> gpu_by_pci;
  for (const auto& g : t.gpus) gpu_by_pci[g.pci] = &g;
  std::map<std::vector<unsigned>, unsigned> ranks_per_nodes;
  for (const auto& rb : p->ranks)
    if (rb.gpus.size() == 1 && gpu_by_pci[rb.gpus[0].pci]->numa) ++ranks_per_nodes[*gpu_by_pci[rb.gpus[0].pci]->numa];
  for (const auto& rb : p->ranks) {
    if (rb.gpus.size() != 1) continue;
    const topo::Gpu* g = gpu_by_pci[rb.gpus[0].pci];
    if (!g->numa) continue;
    CpuSet node_cpus = topo::cpus_of_nodes(t, *g->numa);
    unsigned cores = 0;
    for (const auto& c : t.cores) cores += c.pus.intersects(node_cpus & t.allowed_cpus);
    unsigned node_pus = unsigned((node_cpus & t.allowed_cpus).count());
    // A rank stays on its GPU's node when the node has a core (or, with SMT, a PU) for each of its
    // ranks, and also when sharing cannot be avoided at all: moving would not remove it.
    bool fits = cores >= ranks_per_nodes[*g->numa] || (req.smt && node_pus >= ranks_per_nodes[*g->numa]);
    bool must_share = cores > 0 && allowed_pus < p->ranks.size();
    if (fits || must_share) {
      EXPECT_TRUE(rb.cpus.is_subset_of(node_cpus)) << what << " rank " << rb.local_rank << ": CPUs " << rb.cpus.to_list()
                                                   << " leave GPU node(s) " << node_cpus.to_list();
    }
  }

  // No physical core is split between ranks when every GPU node has a core for each of its
  // ranks (the SMT siblings inferred for NCCL files included: issue 10 item 5).
  bool all_fit = !p->ranks.empty();
  for (const auto& rb : p->ranks) {
    if (rb.gpus.size() != 1 || !gpu_by_pci[rb.gpus[0].pci]->numa) {
      all_fit = false;
      continue;
    }
    CpuSet node_cpus = topo::cpus_of_nodes(t, *gpu_by_pci[rb.gpus[0].pci]->numa) & t.allowed_cpus;
    unsigned cores = 0;
    for (const auto& c : t.cores) cores += c.pus.intersects(node_cpus);
    all_fit = all_fit && cores >= ranks_per_nodes[*gpu_by_pci[rb.gpus[0].pci]->numa];
  }
  if (all_fit && t.cores_known) {
    for (const auto& c : t.cores) {
      unsigned holders = 0;
      for (const auto& rb : p->ranks) holders += rb.cpus.intersects(c.pus);
      EXPECT_LE(holders, 1u) << what << ": core " << c.pus.to_list() << " split between " << holders << " ranks";
    }
  }

  // Balance: ranks that share one pool of cores differ by at most one core, or one L3 domain.
  unsigned biggest_l3 = 1;
  for (const auto& l : t.l3_domains) {
    unsigned n = 0;
    for (const auto& c : t.cores) n += c.pus.intersects(l.cpus);
    biggest_l3 = std::max(biggest_l3, n);
  }
  std::map<std::vector<unsigned>, std::pair<unsigned, unsigned>> span;  // GPU nodes -> min/max cores
  for (const auto& rb : p->ranks) {
    if (rb.gpus.size() != 1 || !gpu_by_pci[rb.gpus[0].pci]->numa) continue;
    unsigned cores = 0;
    for (const auto& c : t.cores) cores += c.pus.intersects(rb.cpus);
    auto key = *gpu_by_pci[rb.gpus[0].pci]->numa;
    auto [it, fresh] = span.emplace(key, std::make_pair(cores, cores));
    it->second.first = std::min(it->second.first, cores);
    it->second.second = std::max(it->second.second, cores);
  }
  for (auto& [nodes, mm] : span)
    EXPECT_LE(mm.second - mm.first, std::max(1u, biggest_l3)) << what << ": unbalanced ranks on one node";

  unsigned vendor_gpus = 0;
  for (const auto& g : t.gpus) vendor_gpus += g.vendor == t.gpus[0].vendor;
  unsigned k = req.gpus_per_rank.value_or(*req.ranks == 1 ? std::max(1u, vendor_gpus) : 1);
  if (vendor_gpus && *req.ranks * k >= vendor_gpus) {
    EXPECT_EQ(gpu_used.size(), vendor_gpus) << what << ": a GPU got no rank";
  }
}

}  // namespace gpubind::testing
