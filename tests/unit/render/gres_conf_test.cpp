#include "render/gres_conf.hpp"

#include <gtest/gtest.h>

#include "../../support/test_machines.hpp"

namespace gpubind::render {

namespace {

std::string lines_for(const topo::Topology& t, const std::string& node, const char* version) {
  auto v = plan::parse_slurm_version(version);
  EXPECT_TRUE(v.ok()) << version;
  return gres_conf(t, node, plan::plan_slurm_node(t, *v), "--slurm-version");
}

}  // namespace

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
  std::string out = lines_for(t, "n1", "22.05");
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
  std::string out = lines_for(t, "", "22.05");
  EXPECT_NE(out.find("File=/dev/nvidia0 Cores=0-3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("File=/dev/nvidia1 Cores=4-7\n"), std::string::npos) << out;
}

// Before 24.11: no node definition, only the Gres= the node line must carry.
TEST(GresConf, Before2411TheNodeLineOnlyNamesItsGres) {
  std::string out = lines_for(testing::example("dgx-a100-nps4"), "gpu01", "24.05");
  EXPECT_NE(out.find("for Slurm 24.05 (--slurm-version)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("File=/dev/nvidia0 Cores=48-63 "), std::string::npos) << out;
  EXPECT_NE(out.find("\n# slurm.conf: NodeName=gpu01 Gres=gpu:nvidia_a100-sxm4-40gb:8\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("Sockets here"), std::string::npos) << out;
}

// 24.11 and 25.05 take the socket parameter only for every node (SlurmdParameters=); the node
// line gives the sockets it makes.
TEST(GresConf, In2411TheSocketParameterIsSlurmdParameters) {
  std::string out = lines_for(testing::example("dgx-a100-nps4"), "gpu01", "24.11.5");
  EXPECT_NE(out.find("# slurm.conf: SlurmdParameters=numa_node_as_socket\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# slurm.conf: NodeName=gpu01 Boards=1 SocketsPerBoard=8 CoresPerSocket=16 ThreadsPerCore=2 "
                     "Gres=gpu:nvidia_a100-sxm4-40gb:8\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("Parameters=numa"), out.find("SlurmdParameters=numa") + 6) << out;  // not on the node line
}

TEST(GresConf, From2511TheSocketParameterIsOnTheNodeLine) {
  std::string out = lines_for(testing::example("frontier-like"), "", "25.11");
  EXPECT_NE(out.find("Sockets here are L3s (l3cache_as_socket): 8 sockets of 8 cores."), std::string::npos) << out;
  EXPECT_NE(out.find("# slurm.conf: NodeName=... Boards=1 SocketsPerBoard=8 CoresPerSocket=8 ThreadsPerCore=2 "
                     "Parameters=l3cache_as_socket Gres=gpu:amd_instinct_mi250x:8\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("slurmd -C --parameters=l3cache_as_socket must print the same counts"), std::string::npos) << out;
  EXPECT_EQ(out.find("SlurmdParameters"), std::string::npos) << out;
}

// A GPU whose own cores no definition makes one whole socket: its comment names its own cores,
// and the file says what leaving Cores= out would cost.
TEST(GresConf, AWidenedGpuSaysWhichCoresAreItsOwn) {
  topo::Topology t = testing::synthetic_with_gpus("pack:2 numa:2 core:4 pu:1", {});
  topo::Gpu g;
  g.pci = "0000:10:00.0";
  g.vendor = topo::Vendor::nvidia;
  g.numa = std::vector<unsigned>{0, 2};
  g.cpus = t.numa_nodes[0].cpus | t.numa_nodes[2].cpus;
  t.gpus.push_back(g);
  std::string out = lines_for(t, "", "25.11");
  EXPECT_NE(out.find("#   its own cores 0-3,8-11 are not one whole socket: every core is named for Slurm 25.11\n"
                     "Name=gpu Type=nvidia File=/dev/nvidia0 Cores=0-15\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Leaving Cores= out instead\n# would let Slurm give a job any core"), std::string::npos) << out;
}

}  // namespace gpubind::render
