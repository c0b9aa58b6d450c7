#include <gtest/gtest.h>

#include "discover/source.hpp"
#include "topo/topology.hpp"

namespace gpubind::topo {

namespace {
PciDevice dev(std::vector<std::string> path, std::optional<std::vector<unsigned>> numa = std::vector<unsigned>{0}) {
  PciDevice d;
  d.pcie_path = std::move(path);
  d.numa = std::move(numa);
  return d;
}
}  // namespace

// Two devices behind the same switch (upstream port, one downstream port each): PIX.
TEST(PathClass, SameSwitchIsPIX) {
  auto a = dev({"hb:0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:00.0"});
  auto b = dev({"hb:0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:04.0"});
  EXPECT_EQ(path_class(a, b), PathClass::PIX);
}

// Two functions of one card (both directly under one bridge): PIX.
TEST(PathClass, SameParentBridgeIsPIX) {
  auto a = dev({"hb:0000:17", "0000:17:02.0"});
  EXPECT_EQ(path_class(a, a), PathClass::PIX);
}

// Two switches below one root port: PXB.
TEST(PathClass, NestedSwitchesArePXB) {
  auto a = dev({"hb:0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"});
  auto b = dev({"hb:0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:04.0"});
  EXPECT_EQ(path_class(a, b), PathClass::PXB);
}

// Different root ports of one host bridge: PHB.
TEST(PathClass, SameHostBridgeIsPHB) {
  auto a = dev({"hb:0000:00", "0000:00:01.0"});
  auto b = dev({"hb:0000:00", "0000:00:03.0"});
  EXPECT_EQ(path_class(a, b), PathClass::PHB);
}

// Different host bridges in the same NUMA node: NODE.
TEST(PathClass, SameNumaDifferentHostBridgeIsNODE) {
  auto a = dev({"hb:0000:15", "0000:15:01.0"}, std::vector<unsigned>{0});
  auto b = dev({"hb:0000:37", "0000:37:01.0"}, std::vector<unsigned>{0});
  EXPECT_EQ(path_class(a, b), PathClass::NODE);
}

// Different NUMA nodes: SYS.
TEST(PathClass, DifferentNumaIsSYS) {
  auto a = dev({"hb:0000:15"}, std::vector<unsigned>{0});
  auto b = dev({"hb:0000:97"}, std::vector<unsigned>{1});
  EXPECT_EQ(path_class(a, b), PathClass::SYS);
}

// Unknown locality on either side can't be shown to be the same node: SYS, never NODE.
TEST(PathClass, UnknownLocalityIsSYS) {
  auto a = dev({"hb:0001:00"}, std::nullopt);
  auto b = dev({"hb:0002:00"}, std::nullopt);
  EXPECT_EQ(path_class(a, b), PathClass::SYS);
}

TEST(PathClass, DgxA100ExampleGpuToNicIsPxbAsNvidiaSmiShowsIt) {
  // DGX/HGX A100 `nvidia-smi topo -m` shows PXB between a GPU and the HCAs of its switch (two
  // levels of PCIe switches), so the example does too (issue 33 item 11: it showed PIX).
  auto t = discover::load_topology("example:dgx-a100-nps4");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(topo::path_class(t->gpus[0], t->nics[0]), PathClass::PXB);
  EXPECT_EQ(topo::path_class(t->gpus[0], t->nics[1]), PathClass::PXB);
  EXPECT_EQ(topo::path_class(t->gpus[0], t->nics[2]), PathClass::SYS);
}

TEST(Topology, ValidateRejectsNoPUs) {
  Topology t;
  Status s = validate(t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().why.find("no processing units"), std::string::npos);
}

TEST(Topology, ValidateRejectsDeviceOnUnknownNode) {
  Topology t;
  t.cpus = t.allowed_cpus = CpuSet::range(0, 3);
  t.numa_nodes.push_back({0, t.cpus, 0, 0, ""});
  Gpu g;
  g.pci = "0000:01:00.0";
  g.numa = std::vector<unsigned>{5};
  t.gpus.push_back(g);
  EXPECT_FALSE(validate(t).ok());
  t.gpus[0].numa = std::vector<unsigned>{0};
  EXPECT_TRUE(validate(t).ok());
}

TEST(Topology, NumaDistanceByOsIndex) {
  Topology t;
  t.numa_nodes = {{0, CpuSet::of({0}), 0, 0, ""}, {8, CpuSet::of({1}), 0, 0, ""}};
  t.distances = {{10, 21}, {21, 10}};
  EXPECT_EQ(numa_distance(t, 0, 8), 21u);
  EXPECT_EQ(numa_distance(t, 8, 8), 10u);
  EXPECT_FALSE(numa_distance(t, 0, 1).has_value());
}

}  // namespace gpubind::topo
