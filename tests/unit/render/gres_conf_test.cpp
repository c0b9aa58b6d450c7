#include "render/gres_conf.hpp"

#include <gtest/gtest.h>

#include "../../support/test_machines.hpp"

namespace gpubind::render {

// Two sockets with interleaved PU numbers (socket 0: even CPUs, socket 1: odd), as on many Dell
// servers: Slurm numbers socket 0's cores 0-3 and socket 1's 4-7, whatever the OS numbers.
TEST(GresConf, CoresUseSlurmsPackageOrder) {
  topo::Topology t;
  t.origin = "test";
  for (unsigned c = 0; c < 8; ++c) t.cores.push_back({CpuSet::of({c})});
  t.cpus = t.allowed_cpus = CpuSet::range(0, 7);
  t.packages = {{0, CpuSet::of({0, 2, 4, 6})}, {1, CpuSet::of({1, 3, 5, 7})}};
  t.numa_nodes = {{0, t.packages[0].cpus, 0, 0, ""}, {1, t.packages[1].cpus, 0, 1, ""}};
  EXPECT_EQ(topo::logical_core_ids(t), (std::vector<unsigned>{0, 4, 1, 5, 2, 6, 3, 7}));
  topo::Gpu g;
  g.pci = "0000:d8:00.0";
  g.vendor = topo::Vendor::nvidia;
  g.index = 1;
  g.name = "Tesla V100";
  g.numa = std::vector<unsigned>{1};
  g.cpus = t.packages[1].cpus;
  t.gpus.push_back(g);
  std::string out = gres_conf(t, "n1");
  EXPECT_NE(out.find("NodeName=n1 Name=gpu Type=tesla_v100 File=/dev/nvidia1 Cores=4-7\n"), std::string::npos) << out;
}

// Sub-NUMA clusters numbered round-robin (the corpus' Dell R740 in SNC2 in miniature): package 0
// holds nodes 0 (CPUs 0,4,8,12) and 2 (2,6,10,14), package 1 nodes 1 and 3. hwloc and Slurm number
// package 0's cores node by node: node 0's as 0-3, node 2's as 4-7; a GPU on node 0 has Cores=0-3
// (issue 33 item 7: ordering by first PU within the package wrote 0,2,4,6, half on node 2).
TEST(GresConf, SubNumaClustersNumberedRoundRobinFollowHwlocsTreeOrder) {
  topo::Topology t = testing::round_robin_snc2();
  t.l3_domains = {{t.packages[0].cpus, 1u << 20}, {t.packages[1].cpus, 1u << 20}};  // L3 spans the package
  auto node_cpus = [&t](unsigned node) { return topo::find_numa(t, node)->cpus; };
  std::vector<unsigned> id = topo::logical_core_ids(t);
  for (unsigned pu : node_cpus(0).ids()) EXPECT_LT(id[pu], 4u) << pu;
  for (unsigned pu : node_cpus(2).ids()) EXPECT_GE(id[pu], 4u) << pu;
  for (unsigned pu : node_cpus(2).ids()) EXPECT_LT(id[pu], 8u) << pu;
  for (unsigned node : {0u, 2u}) {
    topo::Gpu g;
    g.pci = "0000:1" + std::to_string(node) + ":00.0";
    g.vendor = topo::Vendor::nvidia;
    g.index = node / 2;
    g.name = "Tesla V100";
    g.numa = std::vector<unsigned>{node};
    g.cpus = node_cpus(node);
    t.gpus.push_back(g);
  }
  std::string out = gres_conf(t, "");
  EXPECT_NE(out.find("File=/dev/nvidia0 Cores=0-3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("File=/dev/nvidia1 Cores=4-7\n"), std::string::npos) << out;
}

}  // namespace gpubind::render
