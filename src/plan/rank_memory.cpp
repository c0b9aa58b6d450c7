#include <algorithm>
#include <set>
#include <tuple>

#include "plan/steps.hpp"
#include "util/strings.hpp"

namespace gpubind::plan::steps {

using topo::Gpu;

namespace {

// The nodes known to have no memory: the source gives node sizes (some node has one) and theirs is
// 0 (the memoryless dies of a Threadripper 2990WX). None when the source gives no sizes.
std::set<unsigned> memoryless_nodes(const topo::Topology& t) {
  std::set<unsigned> out;
  if (std::none_of(t.numa_nodes.begin(), t.numa_nodes.end(), [](const topo::NumaNode& x) { return x.memory_bytes > 0; })) return out;
  for (const topo::NumaNode& n : t.numa_nodes)
    if (n.memory_bytes == 0) out.insert(n.os_index);
  return out;
}

// A rank whose CPUs are on no node with memory (memoryless nodes, or CPUs a capture puts in no
// node): the nodes with memory nearest its CPUs' nodes by NUMA distance, else those of its
// package(s), else every node with memory. numactl refuses an empty or memoryless node list.
std::set<unsigned> nearest_memory(const topo::Topology& t, const CpuSet& cpus, const std::set<unsigned>& memoryless, std::string& why) {
  std::vector<unsigned> from = topo::nodes_covering(t, cpus);
  std::set<unsigned> out;
  std::optional<unsigned> best;
  for (unsigned f : from)
    for (const topo::NumaNode& n : t.numa_nodes) {
      if (memoryless.count(n.os_index) || n.os_index == f) continue;
      auto d = topo::numa_distance(t, f, n.os_index);
      if (!d) continue;
      if (!best || *d < *best) {
        out.clear();
        best = *d;
      }
      if (*d == *best) out.insert(n.os_index);
    }
  if (!out.empty()) {
    why = "the nearest by NUMA distance";
    return out;
  }
  for (const topo::NumaNode& n : t.numa_nodes) {
    if (memoryless.count(n.os_index)) continue;
    for (const topo::Package& p : t.packages)
      if (n.package == p.os_index && p.cpus.intersects(cpus)) out.insert(n.os_index);
  }
  why = "its package's";
  if (!out.empty()) return out;
  for (const topo::NumaNode& n : t.numa_nodes)
    if (!memoryless.count(n.os_index)) out.insert(n.os_index);
  why = "every node with memory";
  return out;
}

}  // namespace

void assign_memory(Ctx& c, RankBinding& rb, const std::vector<const Gpu*>& gpus) {
  if (c.req.policy == Policy::none || c.req.mem == MemPolicy::none) {
    rb.mem_policy = MemPolicy::none;
    return;
  }
  rb.mem_policy = c.req.mem;
  if (c.req.mem_node) {
    rb.mem_nodes = {*c.req.mem_node};
    return;
  }
  // --mem-on-gpu: the GPUs' own memory nodes (never nodes to plan CPUs on); a rank whose GPUs
  // have none keeps the nodes of its CPUs, and says so.
  std::set<unsigned> nodes;
  if (c.req.mem_on_gpu) {
    for (const Gpu* g : gpus) nodes.insert(g->memory_numa.begin(), g->memory_numa.end());
    if (nodes.empty())
      rb.warnings.push_back("rank " + std::to_string(rb.local_rank) + ": --mem-on-gpu: " +
                            (gpus.empty() ? std::string("no GPU") : "GPU " + std::to_string(gpus[0]->index) + " has no memory node of its own") +
                            "; memory on its CPUs' node(s)");
  }
  bool on_gpu = !nodes.empty();
  if (!on_gpu && c.req.policy != Policy::cpu_only && locality_known(gpus))
    for (const Gpu* g : gpus)
      for (unsigned n : topo::nodes_with_cpus(c.t, *g->numa)) nodes.insert(n);
  if (!on_gpu && (nodes.empty() || c.req.mem == MemPolicy::interleave))
    for (unsigned n : topo::nodes_covering(c.t, rb.cpus)) nodes.insert(n);
  std::set<unsigned> memoryless = memoryless_nodes(c.t);
  if (!on_gpu) std::erase_if(nodes, [&](unsigned n) { return memoryless.count(n) > 0; });
  if (nodes.empty()) {
    std::string why;
    nodes = nearest_memory(c.t, rb.cpus, memoryless, why);
    std::vector<unsigned> list(nodes.begin(), nodes.end());
    if (!nodes.empty())
      rb.warnings.push_back("CPUs " + rb.cpus.to_list() + " are on no NUMA node with memory (memoryless nodes); memory " +
                            to_string(rb.mem_policy) + " on node(s) " + join_numbers(list) + ", " + why);
  }
  // Never a node the cgroup forbids (cpuset.mems): set_mempolicy would fail, or the kernel would
  // silently allocate elsewhere. The nearest allowed node with CPUs takes its place.
  if (const auto& allowed = c.req.allowed_mems) {
    std::set<unsigned> kept;
    for (unsigned n : nodes)
      if (allowed->test(n)) kept.insert(n);
    if (kept.empty()) {
      unsigned home = nodes.empty() ? 0 : *nodes.begin();
      const topo::NumaNode* best = nullptr;
      auto key = [&](const topo::NumaNode& n) {
        return std::make_tuple(n.cpus.empty(), topo::numa_distance(c.t, home, n.os_index).value_or(255), n.os_index);
      };
      for (const topo::NumaNode& n : c.t.numa_nodes)
        if (allowed->test(n.os_index) && (!best || key(n) < key(*best))) best = &n;
      if (best) {
        kept.insert(best->os_index);
        std::vector<unsigned> wanted(nodes.begin(), nodes.end());
        rb.warnings.push_back("memory node " + join_numbers(wanted) + " is outside the allowed memory nodes " + allowed->to_list() +
                              " (cpuset.mems); memory goes to node " + std::to_string(best->os_index) + ", the nearest allowed");
      }
    }
    nodes = kept;
  }
  rb.mem_nodes.assign(nodes.begin(), nodes.end());
  if (rb.mem_nodes.empty()) rb.mem_policy = MemPolicy::none;  // nowhere to point it: first touch
}

}  // namespace gpubind::plan::steps
