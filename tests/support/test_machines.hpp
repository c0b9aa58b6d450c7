#pragma once
// Small machines built for planner, peer and renderer tests: a hwloc synthetic topology with
// stand-in GPUs on chosen NUMA nodes, and hand-numbered layouts hwloc's synthetic strings cannot
// express (round-robin CPU numbers).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "discover/source.hpp"
#include "topo/topology.hpp"

namespace gpubind::testing {

// The built-in example topology NAME (`example:NAME`, data/examples/NAME.json); a test failure
// naming it when it does not load.
inline topo::Topology example(const std::string& name) {
  auto t = discover::load_topology("example:" + name);
  EXPECT_TRUE(t.ok()) << name << ": " << (t.ok() ? std::string() : t.error().message());
  return t.ok() ? *t : topo::Topology{};
}

// hwloc's synthetic topology `spec` ("pack:2 numa:1 core:8 pu:2"), with gpus_on[n] NVIDIA GPUs on
// its n-th NUMA node, numbered in order, each on a host bridge of its own.
inline topo::Topology synthetic_with_gpus(const std::string& spec, const std::vector<unsigned>& gpus_on) {
  auto loaded = discover::load_topology(spec);
  EXPECT_TRUE(loaded.ok()) << spec;
  topo::Topology t = *loaded;
  unsigned index = 0;
  for (unsigned n = 0; n < gpus_on.size() && n < t.numa_nodes.size(); ++n)
    for (unsigned k = 0; k < gpus_on[n]; ++k, ++index) {
      topo::Gpu g;
      g.index = index;
      char pci[16];
      std::snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x10 + index);
      g.pci = pci;
      g.vendor = topo::Vendor::nvidia;
      g.device_id = 0x2330;
      g.numa = std::vector<unsigned>{t.numa_nodes[n].os_index};
      g.cpus = t.numa_nodes[n].cpus;
      g.pcie_path = {"hb:0000:" + std::string(pci).substr(5, 2)};
      t.gpus.push_back(g);
    }
  return t;
}

// Two packages of two sub-NUMA clusters numbered round-robin (a Dell R740 in SNC2 in miniature):
// 16 one-PU cores; package 0 holds nodes 0 (CPUs 0,4,8,12) and 2 (2,6,10,14), package 1 nodes 1
// and 3. No GPU.
inline topo::Topology round_robin_snc2() {
  topo::Topology t;
  t.origin = "test";
  for (unsigned c = 0; c < 16; ++c) t.cores.push_back({CpuSet::of({c})});
  t.cpus = t.allowed_cpus = CpuSet::range(0, 15);
  auto every4 = [](unsigned from) { return CpuSet::of({from, from + 4, from + 8, from + 12}); };
  t.packages = {{0, every4(0) | every4(2)}, {1, every4(1) | every4(3)}};
  t.numa_nodes = {{0, every4(0), 0, 0, ""}, {1, every4(1), 0, 1, ""}, {2, every4(2), 0, 0, ""}, {3, every4(3), 0, 1, ""}};
  return t;
}

}  // namespace gpubind::testing
