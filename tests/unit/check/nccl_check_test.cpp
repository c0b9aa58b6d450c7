#include "check/nccl_check.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"

namespace gpubind::check {

namespace nccl_check_fixture {

const char* const kBus[] = {"18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"};

// One rank's init as NCCL 2.28 logs it on host `host`: its GPU (local rank = GPU), its CPUs at
// init, the GPU's CPUs as NCCL knows them ("" for none), and a channel through NIC `nic`.
std::string rank228(const std::string& host, int local, const std::string& mask, const std::string& gpu_cpus, int nic, bool gdr = true) {
  std::string pre =
      host + ":" + std::to_string(100 + local) + ":" + std::to_string(200 + local) + " [" + std::to_string(local) + "] NCCL INFO ";
  CpuSet m = *CpuSet::parse_list(mask), g = *CpuSet::parse_list(gpu_cpus);
  CpuSet final_set = m & g;
  return pre + "NCCL version 2.28.3+cuda12.9\n" + pre +
         "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB "
         "[7]mlx5_7:1/IB "
         "[8]mlx5_9:1/IB [RO]; OOB eth0:10.0.0.1<0>\n" +
         pre + "ncclCommInitRankConfig comm 0x" + std::to_string(local + 10) + " rank " + std::to_string(local) + " nranks 16 cudaDev " +
         std::to_string(local) + " nvmlDev " + std::to_string(local) + " busId " + kBus[local] + " commId 0x1 - Init START\n" + pre +
         "comm 0x" + std::to_string(local + 10) + " rank " + std::to_string(local) + " nRanks 16 nNodes 2 localRanks 8 localRank " +
         std::to_string(local) + " MNNVL 0\n" + pre + "ncclTopoGetCpuAffinity: Affinity for GPU " + std::to_string(local) + " is " +
         (final_set.empty() ? std::string("empty, ignoring") : final_set.to_list()) + ". (GPU affinity = " + gpu_cpus +
         " ; CPU affinity = " + mask + ").\n" + pre + "Channel 00/0 : " + std::to_string(local) + "[" + std::to_string(local) + "] -> " +
         std::to_string(local + 8) + "[" + std::to_string(local) + "] [send] via NET/IB/" + std::to_string(nic) + (gdr ? "/GDRDMA" : "") +
         "\n";
}

const char* const kNode0 = "0-55,112-167";
const char* const kNode1 = "56-111,168-223";

topo::Topology dgx() { return *discover::load_topology("example:dgx-h100"); }

NcclReport judge_text(const std::string& text) { return judge_nccl_log(dgx(), parse_nccl_logs({{"log", text}}), plan::Request{}); }

std::vector<Verdict> verdicts(const NcclRankReport& r) {
  std::vector<Verdict> v;
  for (const Finding& f : r.findings) v.push_back(f.verdict);
  return v;
}

bool noted(const NcclRankReport& r, const std::string& part) {
  for (const std::string& n : r.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

TEST(NcclCheck, BoundAsPlannedOnItsOwnNicIsOk) {
  NcclReport r = judge_text(rank228("n", 0, "0-13,112-125", kNode0, 0) + rank228("n", 1, "14-27,126-139", kNode0, 1));
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(verdicts_of(r.ranks[0]), "OK");
  EXPECT_EQ(verdicts_of(r.ranks[1]), "OK");
  EXPECT_EQ(r.ranks[0].planned->to_list(), "0-27,112-139") << "two ranks on GPUs 0 and 1 split node 0";
  EXPECT_FALSE(r.has_findings());
}

TEST(NcclCheck, TheHostsPlanIsForTheGpusTheRanksUsed) {
  // Two ranks on GPUs 4 and 5 only: the plan gives each a share of node 1, not GPUs 0 and 1's.
  NcclReport r = judge_text(rank228("n", 4, "56-83,168-195", kNode1, 4) + rank228("n", 5, "84-111,196-223", kNode1, 5));
  ASSERT_EQ(r.ranks.size(), 2u);
  ASSERT_TRUE(r.ranks[0].planned);
  EXPECT_TRUE(r.ranks[0].planned->is_subset_of(*CpuSet::parse_list(kNode1))) << r.ranks[0].planned->to_list();
  EXPECT_EQ(r.ranks[0].gpu, 4u);
}

TEST(NcclCheck, AffinityEmptyIntersectionIsMisplaced) {
  NcclReport r = judge_text(rank228("n", 0, "56-69,168-181", kNode0, 0));
  EXPECT_EQ(verdicts(r.ranks[0]), std::vector<Verdict>{Verdict::misplaced});
  EXPECT_NE(r.ranks[0].findings[0].reason.find("empty, ignoring"), std::string::npos) << r.ranks[0].findings[0].reason;
}

TEST(NcclCheck, AffinityGpuUnknownToNcclIsANoteAndTheTopologyJudges) {
  // NCCL does not know GPU 0's CPUs ("GPU affinity =  "): a note; the topology does, and the rank's are on them.
  NcclReport r = judge_text(rank228("n", 0, "0-13,112-125", "", 0));
  EXPECT_EQ(verdicts_of(r.ranks[0]), "OK");
  EXPECT_TRUE(noted(r.ranks[0], "does not know")) << r.ranks[0].notes.size();
  // ... and the topology's GPU CPUs still catch a rank off them.
  NcclReport off = judge_text(rank228("n", 0, "56-69,168-181", "", 0));
  EXPECT_EQ(verdicts(off.ranks[0]), std::vector<Verdict>{Verdict::misplaced});
}

TEST(NcclCheck, AffinityPartlyOffTheGpusCpusIsMisplaced) {
  NcclReport r = judge_text(rank228("n", 0, "50-61", kNode0, 0));
  EXPECT_EQ(verdicts(r.ranks[0]), std::vector<Verdict>{Verdict::misplaced});
  EXPECT_NE(r.ranks[0].findings[0].reason.find("56-61"), std::string::npos) << r.ranks[0].findings[0].reason;
}

TEST(NcclCheck, AffinitySilentBefore228IsMisplacedWhereTheGpusCpusAreKnown) {
  // Through 2.27 NCCL prints no affinity line for an empty set: with an init line and none, the rank was off its GPU.
  NcclReport r = judge_text(
      "NCCL version 2.22.3+cuda12.6\n"
      "n:1:2 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init START\n");
  EXPECT_EQ(verdicts(r.ranks[0]), std::vector<Verdict>{Verdict::misplaced});
  // 2.28+ always prints one: its absence is only noted (NCCL_DEBUG_SUBSYS without INIT, a cut log).
  NcclReport now = judge_text(
      "NCCL version 2.28.3+cuda12.9\n"
      "n:1:2 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init START\n");
  EXPECT_EQ(verdicts_of(now.ranks[0]), "OK");
  EXPECT_TRUE(noted(now.ranks[0], "no CPU affinity"));
}

TEST(NcclCheck, UnboundWhenTheRankHadMoreThanThePlan) {
  NcclReport r = judge_text(rank228("n", 0, "0-223", kNode0, 0));
  EXPECT_EQ(verdicts(r.ranks[0]), std::vector<Verdict>{Verdict::unbound});
  EXPECT_NE(r.ranks[0].findings[0].reason.find("224 CPU(s)"), std::string::npos);
}

TEST(NcclCheck, UnboundFromNcclsOwnSetBefore228) {
  // 2.22: only NCCL's set (the rank's CPUs within the GPU's) is logged: all of node 0 for both
  // ranks on GPUs 0 and 1, more than the half of it the plan gives each.
  std::string log;
  for (int l : {0, 1}) {
    std::string pre = "n:" + std::to_string(l + 1) + ":2 [" + std::to_string(l) + "] NCCL INFO ";
    log += pre + "NCCL version 2.22.3+cuda12.6\n" + pre + "ncclCommInitRank comm 0xa rank " + std::to_string(l) + " nranks 8 cudaDev " +
           std::to_string(l) + " nvmlDev 0 busId " + kBus[l] + " commId 0x1 - Init START\n" + pre + "Setting affinity for GPU " +
           std::to_string(l) + " to ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff\n";
  }
  NcclReport r = judge_text(log);
  EXPECT_EQ(r.ranks[0].nccl_cpus->to_list(), kNode0);
  EXPECT_EQ(verdicts(r.ranks[0]), (std::vector<Verdict>{Verdict::unbound, Verdict::overlap}));
}

TEST(NcclCheck, OverlapBetweenRanksOfOneHostNotAcrossHosts) {
  NcclReport r = judge_text(rank228("a", 0, "0-20", kNode0, 0) + rank228("a", 1, "14-27", kNode0, 1) + rank228("b", 2, "14-27", kNode0, 2));
  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_NE(verdicts_of(r.ranks[0]).find("OVERLAP"), std::string::npos);
  EXPECT_NE(verdicts_of(r.ranks[1]).find("OVERLAP"), std::string::npos);
  EXPECT_EQ(verdicts_of(r.ranks[2]).find("OVERLAP"), std::string::npos) << "host b's rank shares no host with them";
}

TEST(NcclCheck, IgnoreCpuAffinityOverlapsOtherRanksButIsNotUnbound) {
  std::string log;
  for (int l : {0, 1}) {
    std::string pre = "n:" + std::to_string(100 + l) + ":1 [" + std::to_string(l) + "] NCCL INFO ";
    log += pre + "ncclCommInitRank comm 0x" + std::to_string(l) + " rank " + std::to_string(l) + " nranks 2 cudaDev " + std::to_string(l) +
           " nvmlDev " + std::to_string(l) + " busId " + kBus[l] + " commId 0x1 - Init START\n" + pre +
           "ncclTopoGetCpuAffinity: Affinity for GPU " + std::to_string(l) + " is " + kNode0 + ". (GPU affinity = " + kNode0 + ").\n";
  }
  NcclReport r = judge_text(log);
  EXPECT_EQ(verdicts(r.ranks[0]), std::vector<Verdict>{Verdict::overlap});
  EXPECT_NE(r.ranks[0].findings[0].reason.find("NCCL_IGNORE_CPU_AFFINITY"), std::string::npos);
  EXPECT_TRUE(noted(r.ranks[0], "NCCL_IGNORE_CPU_AFFINITY=1"));
}

TEST(NcclCheck, RemoteNicFartherThanThePlans) {
  NcclReport r = judge_text(rank228("n", 0, "0-13,112-125", kNode0, 4));
  EXPECT_EQ(verdicts(r.ranks[0]), std::vector<Verdict>{Verdict::remote_nic});
  EXPECT_NE(r.ranks[0].findings[0].reason.find("mlx5_4 (SYS)"), std::string::npos) << r.ranks[0].findings[0].reason;
}

TEST(NcclCheck, RemoteNicNotJudgedForANicTheTopologyLacks) {
  NcclReport r = judge_text(rank228("n", 0, "0-13,112-125", kNode0, 8));  // mlx5_9: not in dgx-h100
  EXPECT_EQ(verdicts_of(r.ranks[0]), "OK");
  EXPECT_TRUE(noted(r.ranks[0], "mlx5_9"));
}

TEST(NcclCheck, NoGdrWhereThePlansNicIsPix) {
  NcclReport r = judge_text(rank228("n", 0, "0-13,112-125", kNode0, 0, false));
  EXPECT_EQ(verdicts(r.ranks[0]), std::vector<Verdict>{Verdict::no_gdr});
}

TEST(NcclCheck, NoGdrNotExpectedOverSockets) {
  NcclReport r = judge_text(
      "n:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init START\n"
      "n:1:1 [0] NCCL INFO NET/Socket : Using [0]ibp26s0:10.0.0.1<0>\n"
      "n:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n");
  EXPECT_EQ(r.ranks[0].gdr, false);
  EXPECT_EQ(verdicts_of(r.ranks[0]), "OK");
}

TEST(NcclCheck, AffinitySilenceInACutLogProvesNothing) {
  // No version line and no other rank's affinity line: the log may have been cut, so no finding.
  NcclReport cut = judge_text("n:1:1 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init START\n");
  EXPECT_EQ(verdicts_of(cut.ranks[0]), "OK");
  EXPECT_TRUE(noted(cut.ranks[0], "no version line"));
  // Another rank's hex line in the same log shows this NCCL prints them: the silent rank had an empty set.
  NcclReport whole = judge_text(
      "n:1:1 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init START\n"
      "n:2:2 [1] NCCL INFO comm 0xb rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2a000 commId 0x1 - Init START\n"
      "n:2:2 [1] NCCL INFO Setting affinity for GPU 1 to 3fff,00000000,00000000,00000000,0fffc000\n");
  EXPECT_EQ(verdicts(whole.ranks[0]), std::vector<Verdict>{Verdict::misplaced});
  EXPECT_EQ(verdicts_of(whole.ranks[1]), "OK");
}

TEST(NcclCheck, ARealDgxH100LogsGpusAreTheTopologysGpus) {
  // nvidia/nccl#1357's qh100-gpu19 (2.2x; its Init START lines as posted): the busIds name the
  // example DGX H100's GPUs 3-6, planned there, and nothing is claimed of the lines not posted.
  NcclReport r = judge_text(
      "qh100-gpu19:49360:49416 [6] NCCL INFO ncclCommInitRank comm 0x55d900e4a6c0 rank 6 nranks 16 cudaDev 6 nvmlDev 6 busId ba000 commId "
      "0xd8289d3e6e217d26 - Init START\n"
      "qh100-gpu19:49358:49415 [4] NCCL INFO ncclCommInitRank comm 0x55f93813b890 rank 4 nranks 16 cudaDev 4 nvmlDev 4 busId 9a000 commId "
      "0xd8289d3e6e217d26 - Init START\n"
      "qh100-gpu19:49359:49413 [5] NCCL INFO ncclCommInitRank comm 0x55c18f112200 rank 5 nranks 16 cudaDev 5 nvmlDev 5 busId ab000 commId "
      "0xd8289d3e6e217d26 - Init START\n"
      "qh100-gpu19:49357:49418 [3] NCCL INFO ncclCommInitRank comm 0x5555e0b324c0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 5d000 commId "
      "0xd8289d3e6e217d26 - Init START\n"
      "qh100-gpu20:39636:39690 [7] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/IB/SHARP [2]mlx5_4:1/IB/SHARP "
      "[3]mlx5_5:1/IB/SHARP [RO]; OOB ibp25s0:10.20.0.120<0>\n");
  ASSERT_EQ(r.ranks.size(), 5u);
  std::vector<unsigned> gpus;
  for (const NcclRankReport& x : r.ranks)
    if (x.host == "qh100-gpu19") gpus.push_back(x.gpu.value_or(99));
  EXPECT_EQ(gpus, (std::vector<unsigned>{3, 4, 5, 6}));
  EXPECT_FALSE(r.has_findings());
  EXPECT_TRUE(r.ranks[0].planned.has_value());
}

TEST(NcclCheck, AGpuTheTopologyLacksIsNotedNotPlanned) {
  NcclReport r = judge_text(
      "n:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 4e000 commId 0x1 - Init START\n"
      "n:1:1 [0] NCCL INFO ncclTopoGetCpuAffinity: Affinity for GPU 0 is 0-3. (GPU affinity = 0-7 ; CPU affinity = 0-3).\n");
  EXPECT_FALSE(r.ranks[0].planned);
  EXPECT_TRUE(noted(r.ranks[0], "not in the topology"));
  EXPECT_EQ(verdicts_of(r.ranks[0]), "OK") << "NCCL's own GPU CPUs hold the rank's";
}

TEST(NcclCheck, ProxyThreadOutsideThePlanIsNoted) {
  NcclReport r = judge_text(rank228("n", 0, "0-13,112-125", kNode0, 0) + "n:100:300 [0] NCCL INFO [Proxy Progress] Device 0 CPU core 60\n");
  EXPECT_TRUE(noted(r.ranks[0], "proxy thread ran on CPU 60"));
}

}  // namespace nccl_check_fixture

}  // namespace gpubind::check
