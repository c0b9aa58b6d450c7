// What the libraries of a rank's environment will do to its threads' CPUs (bind/pinning.hpp): one
// test per knob, on the DGX H100-like example (8 ranks of 14 cores; GPU 3 on node 0, CPUs 0-55,112-167).
#include "bind/pinning.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"
#include "topo/pinning_env.hpp"

namespace gpubind::bind {

namespace pinning_fixture {
struct Planned {
  topo::Topology t;
  plan::Plan p;
};
Planned dgx8() {
  auto t = discover::load_topology("example:dgx-h100");
  EXPECT_TRUE(t.ok());
  auto p = plan::make_plan(*t, {});
  EXPECT_TRUE(p.ok());
  return {*t, *p};
}
bool mentions(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}
}  // namespace pinning_fixture
using namespace pinning_fixture;

TEST(Pinning, NcclIgnoreCpuAffinityWidensItsThreadsToTheGpusNodeOverOtherRanks) {
  Planned f = dgx8();
  auto lines = pinning_notes(f.t, f.p, f.p.ranks[3], {{"NCCL_IGNORE_CPU_AFFINITY", "1"}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "NCCL_IGNORE_CPU_AFFINITY=1: NCCL will pin its threads to GPU 3's 112 CPUs 0-55,112-167, 84 of them outside this "
            "rank's 42-55,154-167 (local rank(s) 0,1,2's): unset NCCL_IGNORE_CPU_AFFINITY (or set it to 0)");
  EXPECT_TRUE(pinning_notes(f.t, f.p, f.p.ranks[3], {{"NCCL_IGNORE_CPU_AFFINITY", "0"}}).empty());  // off: NCCL keeps to the rank's
  EXPECT_TRUE(pinning_notes(f.t, f.p, f.p.ranks[3], {}).empty());
}

TEST(Pinning, NcclProxyCpusetInsideOrOutsideTheRanksCpus) {
  Planned f = dgx8();
  auto in = pinning_notes(f.t, f.p, f.p.ranks[0], {{"NCCL_PROXY_CPUSET", "13"}});
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0], "NCCL_PROXY_CPUSET=13: NCCL 2.28 and later pin its proxy threads to CPUs 13");
  auto out = pinning_notes(f.t, f.p, f.p.ranks[0], {{"NCCL_PROXY_CPUSET", "13,14"}});
  EXPECT_TRUE(mentions(out, "1 of them outside this rank's 0-13,112-125 (local rank(s) 1's): unset NCCL_PROXY_CPUSET")) << out[0];
  // NCCL reads no ranges: "13-14" is CPU 13, inside the rank's; a word is CPU 0 (strtoull).
  auto range = pinning_notes(f.t, f.p, f.p.ranks[1], {{"NCCL_PROXY_CPUSET", "20-21"}});
  EXPECT_TRUE(mentions(range, "to CPUs 20 (NCCL reads CPU ids between commas, each a C number: no ranges)")) << range[0];
  EXPECT_TRUE(mentions(pinning_notes(f.t, f.p, f.p.ranks[0], {{"NCCL_PROXY_CPUSET", "x"}}), "to CPUs 0 ("));
  EXPECT_TRUE(
      mentions(pinning_notes(f.t, f.p, f.p.ranks[0], {{"NCCL_PROXY_CPUSET", "99999"}}), "NCCL leaves its proxy threads where they are"));
}

TEST(Pinning, NcclCpuListIsReadAsNcclReadsIt) {
  namespace pe = topo::pinning_env;
  EXPECT_EQ(pe::nccl_cpu_list("27,139").to_list(), "27,139");
  EXPECT_EQ(pe::nccl_cpu_list("0-3").to_list(), "0") << "strtoull stops at '-'";
  EXPECT_EQ(pe::nccl_cpu_list("0x10,010,9").to_list(), "8-9,16") << "hex and octal as C numbers";
  EXPECT_EQ(pe::nccl_cpu_list(",,5,").to_list(), "5") << "strtok skips empty tokens";
  EXPECT_EQ(pe::nccl_cpu_list(" 7").to_list(), "7");
  EXPECT_EQ(pe::nccl_cpu_list("abc").to_list(), "0");
  EXPECT_EQ(pe::nccl_cpu_list("-1,99999999999999999999").to_list(), "") << "no room in NCCL's set";
  EXPECT_EQ(pe::nccl_cpu_list("").to_list(), "");
}

TEST(Pinning, AmdGraphCpuAffinityAndNumaBind) {
  Planned f = dgx8();
  auto graph = pinning_notes(f.t, f.p, f.p.ranks[4], {{"AMD_GRAPH_CPU_AFFINITY", "1"}});
  ASSERT_EQ(graph.size(), 1u);
  EXPECT_TRUE(mentions(graph, "pins the thread launching a HIP graph to GPU 4's NUMA node, CPUs 56-111,168-223 for each launch"))
      << graph[0];
  EXPECT_TRUE(mentions(graph, "(local rank(s) 5,6,7's): unset AMD_GRAPH_CPU_AFFINITY")) << graph[0];
  auto held = pinning_notes(f.t, f.p, f.p.ranks[4], {{"AMD_GRAPH_CPU_AFFINITY", "1"}, {"AMD_GRAPH_CPU_AFFINITY_HOLD", "1"}});
  EXPECT_TRUE(mentions(held, "holds it there until the graph is destroyed")) << held[0];
  auto bind = pinning_notes(f.t, f.p, f.p.ranks[4], {{"AMD_GRAPH_NUMA_BIND", "1"}});
  ASSERT_EQ(bind.size(), 1u);
  EXPECT_EQ(bind[0],
            "AMD_GRAPH_NUMA_BIND=1: the HIP runtime places its graph launch buffers on GPU 4's nearest NUMA node (preferred; no thread is "
            "pinned)");
  plan::RankBinding elsewhere = f.p.ranks[4];
  elsewhere.mem_nodes = {0};
  EXPECT_TRUE(mentions(pinning_notes(f.t, f.p, elsewhere, {{"AMD_GRAPH_NUMA_BIND", "1"}}), ", not the rank's memory node(s) 0"));
  EXPECT_TRUE(pinning_notes(f.t, f.p, f.p.ranks[4], {{"AMD_GRAPH_NUMA_BIND", "0"}}).empty());
}

TEST(Pinning, AmdCpuAffinityAndGompCpuAffinity) {
  Planned f = dgx8();
  auto hip = pinning_notes(f.t, f.p, f.p.ranks[0], {{"AMD_CPU_AFFINITY", "1"}});
  ASSERT_EQ(hip.size(), 1u);
  EXPECT_TRUE(mentions(hip, "the HIP runtime pins the thread that initializes it to GPU 0's NUMA node, CPUs 0-55,112-167")) << hip[0];
  EXPECT_TRUE(mentions(hip, ": set AMD_CPU_AFFINITY=0")) << hip[0];
  auto gomp = pinning_notes(f.t, f.p, f.p.ranks[0], {{"GOMP_CPU_AFFINITY", "0-3 200"}});
  EXPECT_TRUE(mentions(gomp, "0-3 (4 of the rank's 28): threads beyond those share them")) << gomp[0];
  EXPECT_TRUE(
      mentions(pinning_notes(f.t, f.p, f.p.ranks[0], {{"GOMP_CPU_AFFINITY", "200"}}), "none of the rank's 0-13,112-125: it pins none"));
  EXPECT_EQ(parse_gomp_cpu_list("0 3 1-2 4-10:2")->to_list(), "0-4,6,8,10");
  EXPECT_EQ(parse_gomp_cpu_list("1,5"), CpuSet::of({1, 5}));
  EXPECT_EQ(parse_gomp_cpu_list("3-1"), std::nullopt);
  EXPECT_EQ(parse_gomp_cpu_list(" "), std::nullopt);
}

TEST(Pinning, AStartingMaskNarrowerThanTheCgroupIsNamedByWhatNarrowedIt) {
  Planned f = dgx8();
  EXPECT_EQ(narrowed_before(f.t, f.t.allowed_cpus, {}), std::nullopt);
  auto node1 = narrowed_before(f.t, *CpuSet::parse_list("56-111,168-223"), {});
  ASSERT_TRUE(node1);
  EXPECT_NE(node1->find("they are NUMA node 1's: a runtime imported before gpubind (HIP with AMD_CPU_AFFINITY=1)"), std::string::npos)
      << *node1;
  auto hip = narrowed_before(f.t, *CpuSet::parse_list("0-3"), {{"AMD_CPU_AFFINITY", "1"}});
  ASSERT_TRUE(hip);
  EXPECT_NE(hip->find("AMD_CPU_AFFINITY is on"), std::string::npos) << *hip;
  EXPECT_NE(hip->find("planned within 0-3"), std::string::npos) << *hip;
}

}  // namespace gpubind::bind
