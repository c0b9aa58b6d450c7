// topo::cross_check's rules (topo/cross_check.hpp), one test each, on the DGX H100-like example
// (GPUs 0-3 on node 0, CPUs 0-55,112-167; 4-7 on node 1) and the VM with unknown GPU locality.
#include "topo/cross_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "discover/source.hpp"

namespace gpubind::topo {

namespace {

Topology example(const std::string& name) {
  auto t = discover::load_topology("example:" + name);
  EXPECT_TRUE(t.ok());
  return *t;
}

// NVML's view of the example's eight GPUs, as the example itself places them.
RuntimeView agreeing(const Topology& t) {
  RuntimeView v{"NVML 12.535.54", Vendor::nvidia, {}};
  for (const Gpu& g : t.gpus) v.gpus.push_back({g.pci, "GPU-" + g.pci, "H100", g.numa->front(), g.cpus, {}});
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

TEST(CrossCheck, WhereTheTopologyHasNoNumaNodeTheLibrarysIsTaken) {
  Topology t = example("cloud-vm-unknown-locality");
  RuntimeView v{"NVML", Vendor::nvidia, {{"0003:00:00.0", "GPU-c", "A100", 1, std::nullopt, {}}}};
  auto findings = cross_check(t, {v});
  const Gpu& g = gpu(t, "0003:00:00.0");
  ASSERT_TRUE(g.numa.has_value());
  EXPECT_EQ(*g.numa, std::vector<unsigned>{1});
  EXPECT_EQ(g.cpus->to_list(), "24-47,72-95");  // node 1's CPUs
  auto it = std::find_if(findings.begin(), findings.end(), [](const auto& f) { return f.gpu == "0003:00:00.0"; });
  ASSERT_NE(it, findings.end());
  EXPECT_NE(it->what.find("the library's node 1 is used"), std::string::npos);  // the other three: unseen
}

TEST(CrossCheck, ANodeTheTopologyDoesNotHaveIsAFindingNotTaken) {
  Topology t = example("cloud-vm-unknown-locality");
  RuntimeView v{"NVML", Vendor::nvidia, {{"0001:00:00.0", "GPU-a", "A100", 7, std::nullopt, {}}}};
  auto findings = cross_check(t, {v});
  EXPECT_FALSE(gpu(t, "0001:00:00.0").numa.has_value());
  ASSERT_EQ(findings[0].gpu, "0001:00:00.0");
  EXPECT_NE(findings[0].what.find("NUMA node 7, which the topology does not have"), std::string::npos);
}

TEST(CrossCheck, AGpuOnOneSideOnlyIsAFindingEitherWay) {
  Topology t = example("dgx-h100");
  RuntimeView v = agreeing(t);
  v.gpus.pop_back();                                                    // 0000:db:00.0 unseen by the library
  v.gpus.push_back({"0000:ff:00.0", "GPU-ff", "H100", 1, std::nullopt, {}});  // not in the topology
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
  RuntimeView rsmi{"ROCm SMI", Vendor::amd, {}};  // no AMD GPU here, and it sees none
  EXPECT_TRUE(cross_check(t, {rsmi}).empty());
}

}  // namespace gpubind::topo
