// topo::cross_check's rules (topo/cross_check.hpp), one test each, on the DGX H100-like example
// (GPUs 0-3 on node 0, CPUs 0-55,112-167; 4-7 on node 1) and the VM with unknown GPU locality.
#include "topo/cross_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "../../support/test_machines.hpp"
#include "discover/source.hpp"

namespace gpubind::topo {

namespace {

using testing::example;

RuntimeGpu runtime_gpu(std::string pci, std::string uuid, std::optional<unsigned> numa, std::optional<CpuSet> cpus = std::nullopt) {
  RuntimeGpu g;
  g.pci = std::move(pci);
  g.uuid = std::move(uuid);
  g.name = "H100";
  g.numa = numa;
  g.cpus = std::move(cpus);
  return g;
}

RuntimeView view(std::vector<RuntimeGpu> gpus) {
  RuntimeView v;
  v.source = "NVML 12.535.54";
  v.vendor = Vendor::nvidia;
  v.gpus = std::move(gpus);
  return v;
}

// NVML's view of the example's eight GPUs, as the example itself places them (links unknown).
RuntimeView agreeing(const Topology& t) {
  RuntimeView v = view({});
  for (const Gpu& g : t.gpus) v.gpus.push_back(runtime_gpu(g.pci, "GPU-" + g.pci, g.numa->front(), g.cpus));
  return v;
}

const Gpu& gpu(const Topology& t, const std::string& pci) { return *find_gpu(t, pci); }

}  // namespace

TEST(CrossCheck, AgreeingLibraryFillsUuidsAndFindsNothing) {
  Topology t = example("dgx-h100");
  auto findings = cross_check(t, {agreeing(t)});
  EXPECT_TRUE(findings.empty());
  EXPECT_EQ(gpu(t, "0000:18:00.0").uuid, "GPU-0000:18:00.0");
  EXPECT_EQ(gpu(t, "0000:18:00.0").name, "NVIDIA H100 80GB HBM3");  // the topology's name stays
}

TEST(CrossCheck, WhereNumaNodesDisagreeTheTopologysIsKept) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.gpus[1].numa = 1;  // 0000:2a:00.0, on node 0 in the topology
  auto findings = cross_check(t, {v});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].gpu, "0000:2a:00.0");
  EXPECT_NE(findings[0].what.find("NUMA node 0 in the topology, 1 from the library"), std::string::npos);
  EXPECT_EQ(*gpu(t, "0000:2a:00.0").numa, std::vector<unsigned>{0});
}

// Issue 32: NVML's nvmlDeviceGetNumaNodeId names the node of the GPU's own memory (GH200: node 1
// while its CPUs are on node 0). It fills the topology's memory node and is never read as the
// GPU's CPU-side node; another memory node is a finding.
TEST(CrossCheck, TheGpusMemoryNodeIsNotItsCpusNode) {
  Topology t = example("gh200");
  t.gpus[0].memory_numa.clear();  // as hwloc discovers it live, without the driver's numa_status
  RuntimeGpu r = runtime_gpu("0009:01:00.0", t.gpus[0].uuid, std::nullopt);
  r.memory_numa = 1;
  EXPECT_TRUE(cross_check(t, {view({r})}).empty());
  EXPECT_EQ(t.gpus[0].memory_numa, std::vector<unsigned>{1});
  EXPECT_EQ(*t.gpus[0].numa, (std::vector<unsigned>{0, 1}));  // untouched
  r.memory_numa = 4;
  auto findings = cross_check(t, {view({r})});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].what.find("GPU memory on NUMA node 1 in the topology, 4 from the library: the topology's is kept"),
            std::string::npos) << findings[0].what;
  EXPECT_EQ(t.gpus[0].memory_numa, std::vector<unsigned>{1});
}

TEST(CrossCheck, WhereTheTopologyHasNoNumaNodeTheLibrarysIsTaken) {
  Topology t = example("cloud-vm-unknown-locality");
  RuntimeView v = view({runtime_gpu("0003:00:00.0", "GPU-c", 1)});
  auto findings = cross_check(t, {v});
  const Gpu& g = gpu(t, "0003:00:00.0");
  ASSERT_TRUE(g.numa.has_value());
  EXPECT_EQ(*g.numa, std::vector<unsigned>{1});
  EXPECT_EQ(g.cpus->to_list(), "24-47,72-95");  // node 1's CPUs
  auto it = std::find_if(findings.begin(), findings.end(), [](const auto& f) { return f.gpu == "0003:00:00.0"; });
  ASSERT_NE(it, findings.end());
  EXPECT_NE(it->what.find("the library's node 1 is used"), std::string::npos);  // the other three: unseen
}

// NVML has no call for the node of a GPU's CPUs: its CPU affinity, within one node, names it; an
// affinity of every CPU (a VM whose sysfs says -1) names none.
TEST(CrossCheck, WhereTheTopologyHasNoNumaNodeTheLibrarysCpuAffinityNamesIt) {
  Topology t = example("cloud-vm-unknown-locality");
  RuntimeView v = view({runtime_gpu("0003:00:00.0", "GPU-c", std::nullopt, CpuSet::parse_list("24-31").value()),
                        runtime_gpu("0004:00:00.0", "GPU-d", std::nullopt, t.cpus)});
  auto findings = cross_check(t, {v});
  ASSERT_TRUE(gpu(t, "0003:00:00.0").numa.has_value());
  EXPECT_EQ(*gpu(t, "0003:00:00.0").numa, std::vector<unsigned>{1});
  EXPECT_EQ(gpu(t, "0003:00:00.0").cpus->to_list(), "24-47,72-95");
  EXPECT_FALSE(gpu(t, "0004:00:00.0").numa.has_value());
  auto it = std::find_if(findings.begin(), findings.end(), [](const auto& f) { return f.gpu == "0003:00:00.0"; });
  ASSERT_NE(it, findings.end());
  EXPECT_NE(it->what.find("the library's node 1 (its CPU affinity 24-31) is used"), std::string::npos) << it->what;
}

TEST(CrossCheck, ANodeTheTopologyDoesNotHaveIsAFindingNotTaken) {
  Topology t = example("cloud-vm-unknown-locality");
  RuntimeView v = view({runtime_gpu("0001:00:00.0", "GPU-a", 7)});
  auto findings = cross_check(t, {v});
  EXPECT_FALSE(gpu(t, "0001:00:00.0").numa.has_value());
  ASSERT_EQ(findings[0].gpu, "0001:00:00.0");
  EXPECT_NE(findings[0].what.find("NUMA node 7, which the topology does not have"), std::string::npos);
}

TEST(CrossCheck, AGpuOnOneSideOnlyIsAFindingEitherWay) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.gpus.pop_back();                                                    // 0000:db:00.0 unseen by the library
  v.gpus.push_back(runtime_gpu("0000:ff:00.0", "GPU-ff", 1));  // not in the topology
  auto findings = cross_check(t, {v});
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].gpu, "0000:db:00.0");
  EXPECT_NE(findings[0].what.find("the library does not see it"), std::string::npos);
  EXPECT_EQ(findings[1].gpu, "0000:ff:00.0");
  EXPECT_NE(findings[1].what.find("the topology does not have it"), std::string::npos);
}

TEST(CrossCheck, WhereUuidsDifferTheLibrarysIsTaken) {
  Topology t = example("dgx-h100");
  t.gpus[0].uuid = "GPU-from-the-file";
  auto findings = cross_check(t, {agreeing(t)});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(t.gpus[0].uuid, "GPU-" + t.gpus[0].pci);
}

TEST(CrossCheck, CpusWiderThanTheTopologysAreAFindingNarrowerOnesAreNot) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.gpus[0].cpus = CpuSet::range(0, 55);  // within the node: NVML may leave out SMT siblings
  v.gpus[1].cpus = CpuSet::range(0, 223);
  auto findings = cross_check(t, {v});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].gpu, "0000:2a:00.0");
}

TEST(CrossCheck, OnlyTheLibrarysVendorIsJudged) {
  Topology t = example("dgx-h100");
  RuntimeView rsmi = view({});  // no AMD GPU here, and it sees none
  rsmi.vendor = Vendor::amd;
  EXPECT_TRUE(cross_check(t, {rsmi}).empty());
}

TEST(CrossCheck, WhereTheTopologyHasNoLinksTheLibrarysAreTakenSilently) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.links = t.links;  // every pair NV18 through the NVSwitches
  t.links.clear();  // a live sysfs view: Debian's hwloc knows no NVLink
  EXPECT_TRUE(cross_check(t, {v}).empty());
  ASSERT_NE(find_link(t, "0000:18:00.0", "0000:db:00.0"), nullptr);
  EXPECT_EQ(find_link(t, "0000:18:00.0", "0000:db:00.0")->count, 18u);
}

TEST(CrossCheck, WhereLinksDifferTheLibrarysAreUsedAndOneGpuIsOneFinding) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.links = t.links;  // every pair NV18 through the NVSwitches
  for (GpuLink& l : *v.links)
    if (l.a == "0000:5d:00.0" || l.b == "0000:5d:00.0") l.count = 16;  // two of its links down
  auto findings = cross_check(t, {v});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].gpu, "0000:5d:00.0");
  EXPECT_NE(findings[0].what.find("links to 0000:18:00.0, 0000:2a:00.0, 0000:3a:00.0, 0000:9a:00.0"), std::string::npos);
  EXPECT_NE(findings[0].what.find("NV18 in the topology, NV16 from the library"), std::string::npos);
  EXPECT_EQ(find_link(t, "0000:18:00.0", "0000:5d:00.0")->count, 16u);
  EXPECT_EQ(find_link(t, "0000:18:00.0", "0000:2a:00.0")->count, 18u);
}

TEST(CrossCheck, NoLinkUpAtAllIsOneFindingForAllGpus) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.links = std::vector<GpuLink>{};  // the fabric manager is not running
  auto findings = cross_check(t, {v});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].gpu, "");
  EXPECT_EQ(to_line(findings[0]), "cross-check: all GPUs (NVML 12.535.54): 28 pairs: NV18 in the topology, none from the library: "
                                  "the library's is used");
  EXPECT_TRUE(t.links.empty());
}

TEST(CrossCheck, UnknownLinksKeepTheTopologys) {
  Topology t = example("dgx-h100");
  size_t before = t.links.size();
  EXPECT_TRUE(cross_check(t, {agreeing(t)}).empty());  // an NVML without the NVLink calls
  EXPECT_EQ(t.links.size(), before);
}

TEST(CrossCheck, LinksOfGpusTheLibraryDoesNotSeeAreKept) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.gpus.pop_back();  // 0000:db:00.0
  v.links = std::vector<GpuLink>{};
  cross_check(t, {v});
  ASSERT_NE(find_link(t, "0000:18:00.0", "0000:db:00.0"), nullptr);
  EXPECT_EQ(find_link(t, "0000:18:00.0", "0000:2a:00.0"), nullptr);
}

TEST(CrossCheck, DirectLinksOnlyAddButNeverRemove) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.links = std::vector<GpuLink>{{"0000:18:00.0", "0000:2a:00.0", GpuLink::Kind::nvlink, 4}};
  v.direct_links_only = true;  // an old NVML: links into the NVSwitches are not known
  auto findings = cross_check(t, {v});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].what.find("NV18 in the topology, NV4 from the library"), std::string::npos);
  EXPECT_EQ(find_link(t, "0000:18:00.0", "0000:2a:00.0")->count, 4u);
  ASSERT_NE(find_link(t, "0000:18:00.0", "0000:3a:00.0"), nullptr);  // kept
  EXPECT_EQ(t.links.size(), 28u);
}

TEST(CrossCheck, ANarrowerPcieLinkIsDowntrained) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.gpus[2].pcie = PcieLinkState{5, 5, 8, 16};
  v.gpus[2].utilization = 0;  // idle or not
  auto findings = cross_check(t, {v});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].gpu, "0000:3a:00.0");
  EXPECT_NE(findings[0].what.find("PCIe link downtrained: x8 of x16"), std::string::npos);
}

TEST(CrossCheck, ALowerPcieGenerationIsDowntrainedOnlyWhileBusy) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.gpus[0].pcie = PcieLinkState{1, 5, 16, 16};
  v.gpus[0].utilization = 0;  // idle: the GPU saves power on the link
  v.gpus[1].pcie = PcieLinkState{3, 5, 16, 16};
  v.gpus[1].utilization = 80;
  auto findings = cross_check(t, {v});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].gpu, "0000:2a:00.0");
  EXPECT_NE(findings[0].what.find("Gen3 of Gen5 while 80 % busy"), std::string::npos);
}

MeasuredGpu measured(const std::string& pci, std::map<unsigned, double> gbps) {
  MeasuredGpu m{pci, "CUDA runtime", {}};
  for (const auto& [node, g] : gbps) m.bytes_per_second[node] = g * 1e9;
  return m;
}

TEST(CrossCheckMeasured, TheNearestNodeIsTheClearlyFastest) {
  EXPECT_EQ(nearest_measured(measured("0000:18:00.0", {{0, 24.0}, {1, 19.0}})), 0u);
  EXPECT_EQ(nearest_measured(measured("0000:18:00.0", {{0, 24.0}, {1, 22.5}})), std::nullopt);  // within 10 %
  EXPECT_EQ(nearest_measured(measured("0000:18:00.0", {{0, 24.0}})), std::nullopt);             // nothing to compare
}

TEST(CrossCheckMeasured, AGpuMeasuredNearerToAnotherNodeIsAFindingTheTopologysIsKept) {
  Topology t = example("dgx-h100");
  auto findings = cross_check_measured(t, {measured("0000:18:00.0", {{0, 12.0}, {1, 24.5}}),  // node 0 in the topology
                                           measured("0000:2a:00.0", {{0, 24.5}, {1, 19.0}})});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].gpu, "0000:18:00.0");
  EXPECT_EQ(findings[0].source, "CUDA runtime copies");
  EXPECT_NE(findings[0].what.find("copies from NUMA node 1 run at 24.5 GB/s, from its own node 0 at 12.0 GB/s"), std::string::npos);
  EXPECT_EQ(*gpu(t, "0000:18:00.0").numa, std::vector<unsigned>{0});
}

TEST(CrossCheckMeasured, WhereTheTopologyHasNoNodeTheNearestMeasuredIsTaken) {
  Topology t = example("cloud-vm-unknown-locality");
  auto findings = cross_check_measured(t, {measured("0003:00:00.0", {{0, 11.0}, {1, 23.0}})});
  ASSERT_EQ(findings.size(), 1u);
  const Gpu& g = gpu(t, "0003:00:00.0");
  ASSERT_TRUE(g.numa.has_value());
  EXPECT_EQ(*g.numa, std::vector<unsigned>{1});
  EXPECT_EQ(g.cpus->to_list(), "24-47,72-95");
}

TEST(CrossCheckMeasured, NoClearWinnerOrAnUnmeasuredOwnNodeSaysNothing) {
  Topology t = example("dgx-h100");
  EXPECT_TRUE(cross_check_measured(t, {measured("0000:18:00.0", {{0, 23.0}, {1, 24.0}})}).empty());
  Topology vm = example("cloud-vm-unknown-locality");
  EXPECT_TRUE(cross_check_measured(vm, {measured("0003:00:00.0", {{0, 23.0}, {1, 24.0}})}).empty());
  EXPECT_FALSE(gpu(vm, "0003:00:00.0").numa.has_value());
}

TEST(CrossCheckMeasured, AGpuTheTopologyLacksIsAFinding) {
  Topology t = example("dgx-h100");
  auto findings = cross_check_measured(t, {measured("0000:ff:00.0", {{0, 24.0}})});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].what.find("the topology does not have this GPU"), std::string::npos);
}

}  // namespace gpubind::topo
