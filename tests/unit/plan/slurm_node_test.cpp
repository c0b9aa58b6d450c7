// The Slurm node plan's rules: which Cores= each release's slurmctld accepts
// (_check_core_range_matches_sock in src/interfaces/gres.c of slurm-24-11-0-1, slurm-25-05-8-1,
// slurm-25-11-0-1 and slurm-26-05-3-1), how slurmd counts sockets under each SlurmdParameters
// word, and the choice between them. One test per rule and per fallback.
#include "plan/slurm_node.hpp"

#include <gtest/gtest.h>

#include "../../support/test_machines.hpp"

namespace gpubind::plan {
namespace {

SlurmVersion version(const char* text) {
  auto v = parse_slurm_version(text);
  EXPECT_TRUE(v.ok()) << text;
  return v.ok() ? *v : SlurmVersion{};
}

// 2 packages x 2 NUMA nodes x 2 L3s x 4 cores x 2 PUs (32 cores), GPUs on the given NUMA nodes.
topo::Topology nps2(const std::vector<unsigned>& gpus_on) {
  return testing::synthetic_with_gpus("pack:2 numa:2 l3:2 core:4 pu:2", gpus_on);
}

const CpuSet& cores_of(const SlurmNodePlan& p, size_t gpu) { return p.gpus.at(gpu).cores; }

TEST(SlurmVersion, TakesWhatSitesAndSlurmdVSay) {
  EXPECT_EQ(version("25.11").text(), "25.11");
  EXPECT_EQ(version("25.11.4").text(), "25.11.4");
  EXPECT_EQ(version("slurm 25.11.4").text(), "25.11.4");
  EXPECT_EQ(version("slurm-wlm 22.05.8\n").text(), "22.05.8");
  EXPECT_EQ(version("25.11.0-0rc1").text(), "25.11.0");
  EXPECT_EQ(version("24.5").text(), "24.05");
}

TEST(SlurmVersion, RefusesWhatSlurmNeverReleased) {
  for (const char* bad : {"", "25", "25.12", "24.08", "99.11", "25.11.x", "25.11.4.1", "latest", "-1.5"}) {
    auto v = parse_slurm_version(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.error().what, "--slurm-version");
    EXPECT_EQ(v.error().kind, ErrorKind::usage);
  }
  EXPECT_NE(parse_slurm_version("25.12").error().why.find("no release 25.12"), std::string::npos);
}

TEST(SlurmCoresRule, AnyBefore2411WholeSocketsIn2411And2505OneSocketOrAllFrom2511) {
  EXPECT_EQ(slurm_cores_rule(version("22.05")), SlurmCoresRule::any);
  EXPECT_EQ(slurm_cores_rule(version("24.05.8")), SlurmCoresRule::any);
  EXPECT_EQ(slurm_cores_rule(version("24.11.0")), SlurmCoresRule::whole_sockets);
  EXPECT_EQ(slurm_cores_rule(version("25.05")), SlurmCoresRule::whole_sockets);
  EXPECT_EQ(slurm_cores_rule(version("25.11")), SlurmCoresRule::one_socket_or_all);
  EXPECT_EQ(slurm_cores_rule(version("26.05.3")), SlurmCoresRule::one_socket_or_all);
  EXPECT_FALSE(slurm_node_parameters(version("25.05")));
  EXPECT_TRUE(slurm_node_parameters(version("25.11")));
}

// slurmctld's check on a node of 2 sockets of 4 cores.
TEST(SlurmAccepts, EachReleasesCheckOnTwoSocketsOfFourCores) {
  SlurmSockets s;
  s.sockets = {CpuSet::range(0, 3), CpuSet::range(4, 7)};
  s.cores_per_socket = 4;
  struct Case {
    const char* cores;
    bool any, whole, one;
  } cases[] = {
      {"0-3", true, true, true},    // one whole socket
      {"4-7", true, true, true},    //
      {"0-7", true, true, true},    // every core: 25.11's "no socket affinity"
      {"0-1", true, false, false},  // part of a socket
      {"0-4", true, false, false},  // a socket and part of another
      {"0,4", true, false, false},  // a core of each
  };
  for (const Case& c : cases) {
    CpuSet cores = *CpuSet::parse_list(c.cores);
    EXPECT_EQ(slurm_accepts(cores, s, SlurmCoresRule::any), c.any) << c.cores;
    EXPECT_EQ(slurm_accepts(cores, s, SlurmCoresRule::whole_sockets), c.whole) << c.cores;
    EXPECT_EQ(slurm_accepts(cores, s, SlurmCoresRule::one_socket_or_all), c.one) << c.cores;
  }
  // Two whole sockets of three: 24.11 takes it, 25.11 does not (slurm commit 06fa614909).
  s.sockets.push_back(CpuSet::range(8, 11));
  EXPECT_TRUE(slurm_accepts(CpuSet::range(0, 7), s, SlurmCoresRule::whole_sockets));
  EXPECT_FALSE(slurm_accepts(CpuSet::range(0, 7), s, SlurmCoresRule::one_socket_or_all));
  EXPECT_TRUE(slurm_accepts(CpuSet::range(0, 11), s, SlurmCoresRule::one_socket_or_all));
}

TEST(SlurmSockets, EachDefinitionCountsItsObjectsInSlurmsCoreNumbering) {
  topo::Topology t = nps2({});
  SlurmSockets pkg = slurm_sockets(t, SlurmSocket::package);
  EXPECT_EQ(pkg.sockets.size(), 2u);
  EXPECT_EQ(pkg.cores_per_socket, 16u);
  EXPECT_EQ(pkg.threads_per_core, 2u);
  SlurmSockets numa = slurm_sockets(t, SlurmSocket::numa_node);
  EXPECT_EQ(numa.kind, "NUMA node");
  EXPECT_EQ(numa.sockets.size(), 4u);
  EXPECT_EQ(numa.sockets[1], CpuSet::range(8, 15));
  SlurmSockets l3 = slurm_sockets(t, SlurmSocket::l3cache);
  EXPECT_EQ(l3.sockets.size(), 8u);
  EXPECT_EQ(l3.cores_per_socket, 4u);
  EXPECT_TRUE(pkg.unusable.empty() && numa.unusable.empty() && l3.unusable.empty());
}

// hwloc hangs a NUMA node whose CPUs are its package's below the package: numa_node_as_socket
// then counts packages, whatever the NUMA nodes are.
TEST(SlurmSockets, NumaNodeAsSocketIsThePackageWhenANodeIsAWholePackage) {
  topo::Topology t = testing::synthetic_with_gpus("pack:2 numa:1 l3:2 core:4 pu:1", {});
  SlurmSockets numa = slurm_sockets(t, SlurmSocket::numa_node);
  EXPECT_EQ(numa.kind, "package");
  EXPECT_EQ(numa.sockets.size(), 2u);
}

TEST(SlurmSockets, UnevenSocketsAreUnusable) {
  topo::Topology t = nps2({});
  t.packages[1].cpus = t.packages[1].cpus - *CpuSet::parse_list("62-63");  // a package of 17 cores and one of 15
  t.packages[0].cpus |= *CpuSet::parse_list("62-63");
  EXPECT_NE(slurm_sockets(t, SlurmSocket::package).unusable.find("different numbers of cores"), std::string::npos);
}

TEST(SlurmSockets, NoL3KnownIsUnusable) {
  topo::Topology t = nps2({});
  t.l3_domains.clear();
  EXPECT_NE(slurm_sockets(t, SlurmSocket::l3cache).unusable.find("no L3 is known"), std::string::npos);
}

// Round-robin sub-NUMA clusters: each NUMA node's cores are consecutive in Slurm's numbering
// (hwloc's tree order), not in OS CPU order.
TEST(SlurmSockets, RoundRobinNumbersStillGiveConsecutiveSockets) {
  topo::Topology t = testing::round_robin_snc2();
  SlurmSockets numa = slurm_sockets(t, SlurmSocket::numa_node);
  ASSERT_TRUE(numa.unusable.empty()) << numa.unusable;
  EXPECT_EQ(numa.sockets.size(), 4u);
  EXPECT_EQ(numa.cores_per_socket, 4u);
}

// An NCCL topology file names NUMA nodes but no packages: slurmd's default cannot be counted here,
// numa_node_as_socket can (and changes nothing where each node is a package).
TEST(SlurmSockets, UnknownPackagesAreUnusableAndNumaNodesServe) {
  topo::Topology t = nps2({1, 1, 1, 1});
  t.packages.clear();
  EXPECT_NE(slurm_sockets(t, SlurmSocket::package).unusable.find("which cores share a package"), std::string::npos);
  SlurmNodePlan p = plan_slurm_node(t, version("25.11"));
  EXPECT_EQ(p.sockets.definition, SlurmSocket::numa_node);
  EXPECT_EQ(p.widened_cores(), 0u);
}

TEST(PlanSlurmNode, Before2411EachGpuKeepsItsOwnCoresOnPackages) {
  SlurmNodePlan p = plan_slurm_node(nps2({1, 0, 0, 1}), version("22.05"));
  EXPECT_EQ(p.sockets.definition, SlurmSocket::package);
  EXPECT_EQ(cores_of(p, 0), CpuSet::range(0, 7));
  EXPECT_EQ(cores_of(p, 1), CpuSet::range(24, 31));
  EXPECT_EQ(p.widened_cores(), 0u);
}

TEST(PlanSlurmNode, GpusOfWholePackagesKeepSlurmdsDefaultSockets) {
  topo::Topology t = testing::synthetic_with_gpus("pack:2 numa:1 l3:2 core:4 pu:1", {2, 2});
  SlurmNodePlan p = plan_slurm_node(t, version("25.11"));
  EXPECT_EQ(p.sockets.definition, SlurmSocket::package);
  EXPECT_EQ(cores_of(p, 3), CpuSet::range(8, 15));
  EXPECT_EQ(p.widened_cores(), 0u);
}

TEST(PlanSlurmNode, GpusOfOneNumaNodeEachCountNumaNodesAsSockets) {
  for (const char* v : {"24.11", "25.11"}) {
    SlurmNodePlan p = plan_slurm_node(nps2({1, 1, 1, 1}), version(v));
    EXPECT_EQ(p.sockets.definition, SlurmSocket::numa_node) << v;
    EXPECT_EQ(cores_of(p, 1), CpuSet::range(8, 15)) << v;
    EXPECT_EQ(p.widened_cores(), 0u) << v;
  }
}

TEST(PlanSlurmNode, GpusOfOneL3EachCountL3sAsSockets) {
  topo::Topology t = nps2({});
  for (unsigned i = 0; i < 8; ++i) {
    topo::Gpu g;
    g.index = i;
    g.pci = "0000:" + std::to_string(10 + i) + ":00.0";
    g.vendor = topo::Vendor::amd;
    g.cpus = t.l3_domains[i].cpus;
    g.numa = std::vector<unsigned>{t.numa_nodes[i / 2].os_index};
    t.gpus.push_back(g);
  }
  SlurmNodePlan p = plan_slurm_node(t, version("25.11"));
  EXPECT_EQ(p.sockets.definition, SlurmSocket::l3cache);
  EXPECT_EQ(cores_of(p, 5), CpuSet::range(20, 23));
  EXPECT_EQ(p.widened_cores(), 0u);
}

// Fallback: a GPU whose own cores no definition makes whole (two of four NUMA nodes on 25.11):
// its sockets' cores under 24.11, every core under 25.11, and the plan counts what was added.
TEST(PlanSlurmNode, FallbackWidensToWholeSocketsOrEveryCore) {
  topo::Topology t = nps2({});
  topo::Gpu g;
  g.pci = "0000:10:00.0";
  g.vendor = topo::Vendor::nvidia;
  g.numa = std::vector<unsigned>{t.numa_nodes[0].os_index, t.numa_nodes[2].os_index};
  g.cpus = t.numa_nodes[0].cpus | t.numa_nodes[2].cpus;  // one node of each package
  t.gpus.push_back(g);
  SlurmNodePlan old = plan_slurm_node(t, version("24.11"));
  EXPECT_EQ(cores_of(old, 0), (CpuSet::range(0, 7) | CpuSet::range(16, 23)));  // two whole NUMA sockets
  EXPECT_EQ(old.widened_cores(), 0u);
  SlurmNodePlan now = plan_slurm_node(t, version("25.11"));
  EXPECT_EQ(cores_of(now, 0), CpuSet::range(0, 31));
  EXPECT_EQ(now.widened_cores(), 16u);
  EXPECT_EQ(now.sockets.definition, SlurmSocket::package);  // a tie: the default wins
}

// Fallback: the definition that adds fewest cores wins, not the first that works at all.
TEST(PlanSlurmNode, FallbackChoosesTheDefinitionThatAddsFewestCores) {
  topo::Topology t = nps2({});
  topo::Gpu g;
  g.pci = "0000:10:00.0";
  g.vendor = topo::Vendor::nvidia;
  g.numa = std::vector<unsigned>{t.numa_nodes[0].os_index};
  g.cpus = t.l3_domains[0].cpus | *CpuSet::parse_list("16");  // cores 0-3 (an L3) and core 8 (PU 16, the next NUMA node)
  t.gpus.push_back(g);
  SlurmNodePlan p = plan_slurm_node(t, version("24.11"));
  EXPECT_EQ(p.sockets.definition, SlurmSocket::l3cache);  // two L3s add 3 cores; two NUMA nodes or a package 11
  EXPECT_EQ(cores_of(p, 0), (CpuSet::range(0, 3) | CpuSet::range(8, 11)));
}

TEST(PlanSlurmNode, NoEvenSocketsMeansNoCoresAndSaysWhy) {
  topo::Topology t = nps2({1, 0, 0, 0});
  t.packages[1].cpus = t.packages[1].cpus - *CpuSet::parse_list("62-63");
  t.packages[0].cpus |= *CpuSet::parse_list("62-63");
  t.numa_nodes[3].cpus = t.numa_nodes[3].cpus - *CpuSet::parse_list("62-63");
  t.numa_nodes[0].cpus |= *CpuSet::parse_list("62-63");
  t.l3_domains.clear();
  SlurmNodePlan p = plan_slurm_node(t, version("25.11"));
  EXPECT_TRUE(cores_of(p, 0).empty());
  EXPECT_NE(p.no_cores.find("different numbers of cores"), std::string::npos) << p.no_cores;
  SlurmNodePlan old = plan_slurm_node(t, version("22.05"));
  EXPECT_FALSE(cores_of(old, 0).empty());  // before 24.11 nothing is checked
}

TEST(PlanSlurmNode, AGpuOfUnknownLocalityGetsNoCores) {
  topo::Topology t = nps2({1, 1, 1, 1});
  t.gpus[2].cpus.reset();
  t.gpus[2].numa.reset();
  SlurmNodePlan p = plan_slurm_node(t, version("25.11"));
  EXPECT_TRUE(cores_of(p, 2).empty());
  EXPECT_EQ(p.sockets.definition, SlurmSocket::numa_node);
}

// CoreSpecCount (node_conf_select_spec_cores): the last core of each socket, last socket first,
// then the core before it; spec_cores_first: the first core of each socket, first socket first.
TEST(SlurmCoreSpec, CountTakesTheLastCoreOfEachSocketInTurnOrTheFirstWithSpecCoresFirst) {
  EXPECT_EQ(slurm_core_spec_cores(2, 4, 1, false), CpuSet::of({7}));
  EXPECT_EQ(slurm_core_spec_cores(2, 4, 3, false), CpuSet::of({3, 6, 7}));
  EXPECT_EQ(slurm_core_spec_cores(2, 4, 3, true), CpuSet::of({0, 1, 4}));
  EXPECT_EQ(slurm_core_spec_cores(2, 4, 20, false), CpuSet::range(0, 7));  // no more than the node has
  EXPECT_TRUE(slurm_core_spec_cores(2, 4, 0, false).empty());
}

// CpuSpecList's ids are CPUs numbered core by core: id / ThreadsPerCore is the core.
TEST(SlurmCoreSpec, CpuSpecListIdsAreCoresTimesThreads) {
  EXPECT_EQ(slurm_cpu_spec_cores(CpuSet::of({0, 1, 14}), 2), CpuSet::of({0, 7}));
  EXPECT_EQ(slurm_cpu_spec_cores(CpuSet::of({0, 1, 14}), 1), CpuSet::of({0, 1, 14}));
}

// RestrictedCoresPerGPU (_set_gpu_spec): each line in turn gets N x its count of its Cores=,
// lowest first, skipping specialized cores and those an earlier line got.
TEST(SlurmRestrictedCores, EachLineInTurnGetsItsLowestFreeCores) {
  std::vector<SlurmGresGpus> lines{{CpuSet::range(0, 3), 1}, {CpuSet::range(0, 3), 1}, {CpuSet::range(4, 7), 2}};
  SlurmRestrictedCores r = slurm_restricted_cores(lines, CpuSet::of({0}), 1);
  EXPECT_FALSE(r.down());
  ASSERT_EQ(r.per_line.size(), 3u);
  EXPECT_EQ(r.per_line[0], CpuSet::of({1}));
  EXPECT_EQ(r.per_line[1], CpuSet::of({2}));
  EXPECT_EQ(r.per_line[2], CpuSet::of({4, 5}));  // a line of two GPUs gets two
  EXPECT_EQ(r.all, CpuSet::of({1, 2, 4, 5}));
}

TEST(SlurmRestrictedCores, ALineShortOfFreeCoresSetsTheNodeDown) {
  std::vector<SlurmGresGpus> lines{{CpuSet::range(0, 3), 1}, {CpuSet::range(0, 3), 1}};
  SlurmRestrictedCores r = slurm_restricted_cores(lines, CpuSet::of({3}), 2);
  EXPECT_TRUE(r.down());
  ASSERT_TRUE(r.short_line);
  EXPECT_EQ(*r.short_line, 1u);
  EXPECT_EQ(r.got, 1u);  // core 2: 0-1 went to the first line, 3 is specialized
  EXPECT_FALSE(slurm_restricted_cores(lines, CpuSet{}, 2).down());
}

TEST(SlurmRestrictedCores, NoLineWithCoresSetsTheNodeDownAndALineWithoutIsSkipped) {
  EXPECT_TRUE(slurm_restricted_cores({{CpuSet{}, 1}}, CpuSet{}, 1).no_cores);
  SlurmRestrictedCores r = slurm_restricted_cores({{CpuSet{}, 1}, {CpuSet::range(4, 7), 1}}, CpuSet{}, 1);
  EXPECT_FALSE(r.down());
  EXPECT_EQ(r.all, CpuSet::of({4}));
  EXPECT_FALSE(slurm_restricted_cores_known(version("23.11")));
  EXPECT_TRUE(slurm_restricted_cores_known(version("24.05")));
}

}  // namespace
}  // namespace gpubind::plan
