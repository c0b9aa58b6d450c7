#include "check/nccl_log.hpp"

#include <gtest/gtest.h>

namespace gpubind::check {

namespace nccl_log_fixture {

NcclLog parse_one(const std::string& text) { return parse_nccl_logs({{"rank.log", text}}); }

const NcclProcess* process(const NcclLog& log, int pid) {
  for (const NcclProcess& p : log.processes)
    if (p.pid == pid) return &p;
  return nullptr;
}

TEST(NcclLog, BusIdIsNcclsInt64FormOfThePciAddress) {
  EXPECT_EQ(nccl_bus_id("1b000"), "0000:1b:00.0");
  EXPECT_EQ(nccl_bus_id("4e000"), "0000:4e:00.0");
  EXPECT_EQ(nccl_bus_id("7000"), "0000:07:00.0");
  EXPECT_EQ(nccl_bus_id("100db010"), "0100:db:01.0");
  EXPECT_EQ(nccl_bus_id("1db010"), "0001:db:01.0");
  EXPECT_EQ(nccl_bus_id("xyz"), "");
  EXPECT_EQ(nccl_bus_id(""), "");
}

TEST(NcclLog, CpuSetsInNcclsHexWordsAndInLists) {
  // ncclCpusetToStr: a first word of whole bytes, then 32-bit words (nccl#1017's 2-socket node).
  EXPECT_EQ(nccl_cpu_set("ffffff,ffffffff,ffffffff")->to_list(), "0-87");
  EXPECT_EQ(nccl_cpu_set("ff")->to_list(), "0-7");
  EXPECT_EQ(nccl_cpu_set("0fffff,ff000000,0fffffff")->to_list(), "0-27,56-83");
  // ncclCpusetToRangeStr (2.28+): lists.
  EXPECT_EQ(nccl_cpu_set("24-46,72-93")->to_list(), "24-46,72-93");
  EXPECT_EQ(nccl_cpu_set("5")->to_list(), "5");  // an odd digit count is no mask
  EXPECT_EQ(nccl_cpu_set("3,7")->to_list(), "3,7");
  EXPECT_FALSE(nccl_cpu_set("zz-1"));
}

TEST(NcclLog, VersionsOfNcclAndRccl) {
  EXPECT_EQ(nccl_version("2.28.3+cuda12.9"), std::make_pair(2u, 28u));
  EXPECT_EQ(nccl_version("2.20.5-HEAD:0cbce2a"), std::make_pair(2u, 20u));
  EXPECT_FALSE(nccl_version("unknown"));
}

TEST(NcclLog, RealPostedInitLinesNameTheRankAndItsGpu) {
  // nvidia/nccl#952 (2.19-style, the host name replaced by its poster).
  NcclLog log = parse_one(
      "<cluster_name>:922:1149 [3] NCCL INFO comm 0x55555d812aa0 rank 11 nranks 16 cudaDev 3 nvmlDev 3 busId 4e000 commId "
      "0xf03f81dc1a49efab - Init START\n"
      "<cluster_name>:919:1150 [0] NCCL INFO comm 0x55555d813260 rank 8 nranks 16 cudaDev 0 nvmlDev 0 busId 7000 commId "
      "0xf03f81dc1a49efab - Init START\n");
  ASSERT_EQ(log.processes.size(), 2u);
  const NcclProcess* p = process(log, 922);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->host, "<cluster_name>");
  EXPECT_EQ(p->bus_id, "0000:4e:00.0");
  EXPECT_EQ(p->world()->rank, 11u);
  EXPECT_EQ(p->world()->nranks, 16u);
  EXPECT_EQ(log.processes[0].pid, 919) << "ordered by rank";
}

TEST(NcclLog, RealPosted228AffinityLinesGiveAllThreeSets) {
  // pytorch/ci-infra#490 (2.28-style); and the "empty" form the issue quotes.
  NcclLog log = parse_one(
      "mt-runner-workflow:202016:202219 [1] NCCL INFO ncclTopoGetCpuAffinity: Affinity for GPU 1 is 24-46,72-93. (GPU affinity = "
      "24-47,72-95 ; CPU affinity = 24-46,72-93).\n"
      "vm:77:78 [0] NCCL INFO ncclTopoGetCpuAffinity: Affinity for GPU 0 is empty, ignoring. (GPU affinity =  ; CPU affinity = 0-19).\n");
  const NcclProcess* p = process(log, 202016);
  ASSERT_TRUE(p && p->affinity);
  EXPECT_EQ(p->affinity->set.to_list(), "24-46,72-93");
  EXPECT_EQ(p->affinity->gpu_affinity->to_list(), "24-47,72-95");
  EXPECT_EQ(p->affinity->cpu_affinity->to_list(), "24-46,72-93");
  EXPECT_FALSE(p->ignore_cpu_affinity);
  const NcclProcess* vm = process(log, 77);
  ASSERT_TRUE(vm && vm->affinity);
  EXPECT_TRUE(vm->affinity->set.empty());
  EXPECT_TRUE(vm->affinity->gpu_affinity->empty());
  EXPECT_EQ(vm->affinity->cpu_affinity->to_list(), "0-19");
}

TEST(NcclLog, RealPostedHexAffinityThroughLaunchersTags) {
  // nvidia/nccl#1029: lines relayed with "host: " before them (pdsh, kubectl logs --prefix).
  NcclLog log = parse_one(
      "rdma-gpu-train-worker-0: rdma-gpu-train-worker-0:19489:21055 [5] NCCL INFO Setting affinity for GPU 5 to "
      "ffff,fff00000,00ffffff,f0000000\n"
      "[1,0]<stdout>:node7:300:301 [0] NCCL INFO Setting affinity for GPU 0 to ff\n");
  const NcclProcess* p = process(log, 19489);
  ASSERT_TRUE(p && p->affinity);
  EXPECT_EQ(p->host, "rdma-gpu-train-worker-0");
  EXPECT_EQ(p->affinity->set.to_list(), "28-55,84-111");
  EXPECT_FALSE(p->affinity->cpu_affinity) << "through 2.27 NCCL does not say the rank's own CPUs";
  const NcclProcess* tagged = process(log, 300);
  ASSERT_TRUE(tagged);
  EXPECT_EQ(tagged->host, "node7") << "mpirun --tag-output's tag is not the host";
}

TEST(NcclLog, IgnoreCpuAffinityFromTheEnvironmentLineOrTheMissingCpuPart) {
  NcclLog log = parse_one(
      "a:1:1 [0] NCCL INFO NCCL_IGNORE_CPU_AFFINITY set by environment to 1.\n"
      "b:2:2 [0] NCCL INFO ncclTopoGetCpuAffinity: Affinity for GPU 0 is 0-55,112-167. (GPU affinity = 0-55,112-167).\n"
      "c:3:3 [0] NCCL INFO NCCL_IGNORE_CPU_AFFINITY set by environment to 0.\n");
  EXPECT_TRUE(process(log, 1)->ignore_cpu_affinity);
  EXPECT_TRUE(process(log, 2)->ignore_cpu_affinity);
  EXPECT_FALSE(process(log, 2)->affinity->cpu_affinity);
  EXPECT_FALSE(process(log, 3)->ignore_cpu_affinity);
}

TEST(NcclLog, NicsAndChannelsOwnPxnAndNvlinkApart) {
  NcclLog log = parse_one(
      "n:5:5 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_bond_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
      "n:5:5 [0] NCCL INFO Using network IB\n"
      "n:5:6 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
      "n:5:6 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA(PCI)/Shared\n"
      "n:5:6 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/1(1)/GDRDMA\n"
      "n:5:6 [0] NCCL INFO Channel 02/0 : 0[0] -> 9[1] [send] via NET/IB/2\n"
      "n:5:6 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "n:5:6 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 2 'mlx5_bond_0'\n");
  const NcclProcess* p = process(log, 5);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->net, "IB");
  ASSERT_TRUE(p->devices("IB"));
  EXPECT_EQ(*p->devices("IB"), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_bond_0"}));
  const auto& used = p->net_used.at("IB");
  EXPECT_EQ(used.at(0).channels, 2u);
  EXPECT_EQ(used.at(0).gdr_channels, 2u);
  EXPECT_EQ(used.at(1).channels, 0u);
  EXPECT_EQ(used.at(1).proxied, 1u) << "PXN: another GPU's NIC";
  EXPECT_EQ(used.at(2).channels, 1u);
  EXPECT_EQ(used.at(2).gdr_channels, 0u);
  EXPECT_FALSE(p->gdr_support.at("mlx5_bond_0"));
}

TEST(NcclLog, PluginTransportsAndSocketsListTheirDevices) {
  // A net plugin names its transport (nvidia/nccl#1814's "IBext_v8"); sockets list netdevs.
  NcclLog log = parse_one(
      "h:9:9 [7] NCCL INFO NET/IBext_v8 : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [2]mlx5_4:1/IB ; OOB ib0:10.1.1.1<0>\n"
      "h:9:9 [7] NCCL INFO Channel 03/0 : 47[7] -> 39[7] [receive] via NET/IBext_v8/2\n"
      "s:4:4 [0] NCCL INFO NET/Socket : Using [0]ens3:172.31.11.103<0>\n"
      "s:4:4 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n");
  EXPECT_EQ(process(log, 9)->devices("IBext_v8")->at(2), "mlx5_4");
  EXPECT_EQ(process(log, 9)->net_used.at("IBext_v8").at(2).channels, 1u);
  EXPECT_EQ(process(log, 4)->devices("Socket")->at(0), "ens3");
}

TEST(NcclLog, TheLargestCommunicatorsOwnAffinityLineIsTheRanks) {
  // A subgroup communicator initialised first (another thread), then the world: the rank is the
  // world's, the affinity the one the world's init thread logged.
  NcclLog log = parse_one(
      "h:1:10 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init START\n"
      "h:1:10 [0] NCCL INFO Setting affinity for GPU 0 to ff\n"
      "h:1:20 [0] NCCL INFO ncclCommInitRank comm 0xb rank 5 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x2 - Init START\n"
      "h:1:20 [0] NCCL INFO comm 0xb rank 5 nRanks 16 nNodes 2 localRanks 8 localRank 5 MNNVL 0\n"
      "h:1:20 [0] NCCL INFO Setting affinity for GPU 0 to ff00\n");
  const NcclProcess* p = process(log, 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->world()->rank, 5u);
  EXPECT_EQ(p->world()->local_rank, 5u);
  EXPECT_EQ(p->world()->nodes, 2u);
  EXPECT_EQ(p->affinity->set.to_list(), "8-15");
}

TEST(NcclLog, AVersionLineWithoutHostGoesToTheFilesProcesses) {
  // NCCL through 2.18 printf's "NCCL version ..." to stdout when NCCL_DEBUG_FILE is unset.
  NcclLog log = parse_nccl_logs({{"a.log", "NCCL version 2.18.6+cuda12.2\nh:1:1 [0] NCCL INFO Using network IB\n"},
                                 {"b.log", "h:2:2 [0] NCCL INFO RCCL version : 2.20.5-HEAD:0cbce2a\n"}});
  EXPECT_EQ(process(log, 1)->version, "2.18.6+cuda12.2");
  EXPECT_FALSE(process(log, 1)->rccl);
  EXPECT_EQ(process(log, 2)->version, "2.20.5-HEAD:0cbce2a");
  EXPECT_TRUE(process(log, 2)->rccl);
}

TEST(NcclLog, LinesWithoutHostPidTidAreCountedNotGuessed) {
  NcclLog log = parse_one("[0] NCCL INFO Setting affinity for GPU 0 to ff\nnot nccl at all\n\r\nh:1:1 [0] NCCL INFO Using network IB\r\n");
  EXPECT_EQ(log.lines, 2u);
  EXPECT_EQ(log.unattributed, 1u);
  ASSERT_EQ(log.processes.size(), 1u);
  EXPECT_EQ(log.processes[0].net, "IB") << "a CR before the newline is not part of the line";
}

TEST(NcclLog, ProxyThreadsCoreAndCpuset) {
  NcclLog log = parse_one(
      "h:1:1 [0] NCCL INFO NCCL_PROXY_CPUSET = 12: Set proxy thread affinity to 12\n"
      "h:1:9 [0] NCCL INFO [Proxy Progress] Device 0 CPU core 12\n");
  EXPECT_EQ(process(log, 1)->proxy_cpuset, "12");
  EXPECT_EQ(process(log, 1)->proxy_cores, std::vector<unsigned>{12});
}

}  // namespace nccl_log_fixture

}  // namespace gpubind::check
