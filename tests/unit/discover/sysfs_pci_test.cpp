#include "discover/sysfs_pci.hpp"

#include <gtest/gtest.h>

#include "../../support/fake_tree.hpp"
#include "topo/topology.hpp"

namespace gpubind::discover {

namespace {
// One switch (0000:16:00.0 upstream, 0000:17:00.0/0000:17:01.0 downstream) holding a GPU and a
// ConnectX HCA, on NUMA node 1; a VM-style NIC with numa_node -1 under another host bridge.
void build(gpubind::testing::FakeTree& t) {
  t.pci("pci0000:15/0000:15:01.0", "0x060400", "0x8086", 1, "4-7");
  t.pci("pci0000:15/0000:15:01.0/0000:16:00.0", "0x060400", "0x1000", 1, "4-7");
  t.pci("pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0", "0x060400", "0x1000", 1, "4-7");
  t.pci("pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0", "0x060400", "0x1000", 1, "4-7");
  t.pci("pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0", "0x030200", "0x10de", 1, "4-7");
  t.pci("pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0", "0x020700", "0x15b3", 1, "4-7");
  t.dir("sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/infiniband/mlx5_0");
  t.dir("sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/net/ib0");
  t.pci("pci0001:00/0001:00:00.0", "0x020000", "0x1af4", -1, "0-7");
  t.dir("sys/devices/pci0001:00/0001:00:00.0/virtio3/net/eth0");
  t.file("proc/driver/nvidia/gpus/0000:18:00.0/information",
         "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\nGPU UUID: \t GPU-0a1b2c3d-0000-1111-2222-333344445555\n");
}

const SysfsPciDevice* find(const std::vector<SysfsPciDevice>& v, const std::string& pci) {
  for (const auto& d : v)
    if (d.pci == pci) return &d;
  return nullptr;
}
}  // namespace

TEST(SysfsPci, ReadsIdsClassAndLocality) {
  gpubind::testing::FakeTree t;
  build(t);
  auto root = sys::open_fsroot(t.root());
  ASSERT_TRUE(root.ok());
  auto devs = scan_sysfs_pci(**root);
  ASSERT_TRUE(devs.ok()) << devs.error().message();
  const SysfsPciDevice* gpu = find(*devs, "0000:18:00.0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->vendor_id, 0x10de);
  EXPECT_EQ(gpu->class_id, 0x0302u);
  EXPECT_EQ(gpu->local_cpus->to_list(), "4-7");
  EXPECT_TRUE(gpu->nvidia_driver_bound);
  EXPECT_EQ(gpu->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu->uuid, "GPU-0a1b2c3d-0000-1111-2222-333344445555");
}

TEST(SysfsPci, PathFollowsTheSysfsLink) {
  gpubind::testing::FakeTree t;
  build(t);
  auto root = sys::open_fsroot(t.root());
  auto devs = scan_sysfs_pci(**root);
  ASSERT_TRUE(devs.ok());
  const SysfsPciDevice* gpu = find(*devs, "0000:18:00.0");
  const SysfsPciDevice* nic = find(*devs, "0000:19:00.0");
  ASSERT_TRUE(gpu && nic);
  EXPECT_EQ(gpu->pcie_path, (std::vector<std::string>{"hb:0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:00.0"}));
  EXPECT_EQ(nic->os_names, (std::vector<std::string>{"ib0", "mlx5_0"}));
  topo::PciDevice a, b;
  a.pcie_path = gpu->pcie_path;
  b.pcie_path = nic->pcie_path;
  EXPECT_EQ(topo::path_class(a, b), topo::PathClass::PIX);
}

TEST(SysfsPci, UnknownNumaNodeAndVirtioNames) {
  gpubind::testing::FakeTree t;
  build(t);
  auto root = sys::open_fsroot(t.root());
  auto devs = scan_sysfs_pci(**root);
  ASSERT_TRUE(devs.ok());
  const SysfsPciDevice* vm = find(*devs, "0001:00:00.0");
  ASSERT_NE(vm, nullptr);
  ASSERT_TRUE(vm->local_cpus.has_value());
  EXPECT_EQ(vm->local_cpus->to_list(), "0-7");  // numa_node -1: the kernel lists every CPU
  EXPECT_EQ(vm->os_names, std::vector<std::string>{"eth0"});
  EXPECT_EQ(vm->pcie_path, std::vector<std::string>{"hb:0001:00"});
}

TEST(SysfsPci, TrimmedCaptureDropsUnknownBridgesAndPlainDirectories) {
  gpubind::testing::FakeTree t;
  // The bridge 0000:5f:03.0 is in the device path but not registered; 0004:05:00.0 is a plain
  // directory (no symlink), as in hwloc's trimmed POWER9 capture.
  t.file("sys/devices/pci0000:5d/0000:5d:02.0/0000:5f:03.0/0000:60:00.0/class", "0x0b4000\n");
  t.link("sys/bus/pci/devices/0000:60:00.0", "../../../devices/pci0000:5d/0000:5d:02.0/0000:5f:03.0/0000:60:00.0");
  t.pci("pci0000:5d/0000:5d:02.0", "0x060400", "0x8086", 0, "0-3");
  t.file("sys/bus/pci/devices/0004:05:00.0/class", "0x030200\n");
  auto root = sys::open_fsroot(t.root());
  auto devs = scan_sysfs_pci(**root);
  ASSERT_TRUE(devs.ok());
  EXPECT_EQ(find(*devs, "0000:60:00.0")->pcie_path, (std::vector<std::string>{"hb:0000:5d", "0000:5d:02.0"}));
  EXPECT_EQ(find(*devs, "0004:05:00.0")->pcie_path, std::vector<std::string>{"hb:0004:05"});
}

// Issue 32: an Intel GPU Max 1550 has two stacks, each a Level Zero device in the FLAT hierarchy.
// The xe driver lists tile0/ and tile1/ under the PCI device; i915 gt/gt0 and gt/gt1 under the card.
TEST(SysfsPci, IntelGpuStacksFromXeTilesOrI915Gts) {
  gpubind::testing::FakeTree t;
  t.pci("pci0000:18/0000:18:00.0", "0x038000", "0x8086", 0, "0-3");
  t.dir("sys/devices/pci0000:18/0000:18:00.0/tile0/gt0");
  t.dir("sys/devices/pci0000:18/0000:18:00.0/tile1/gt1");
  t.dir("sys/devices/pci0000:18/0000:18:00.0/drm/card1");
  t.pci("pci0000:3a/0000:3a:00.0", "0x038000", "0x8086", 0, "0-3");
  t.dir("sys/devices/pci0000:3a/0000:3a:00.0/drm/card2/gt/gt0");
  t.dir("sys/devices/pci0000:3a/0000:3a:00.0/drm/card2/gt/gt1");
  t.dir("sys/devices/pci0000:3a/0000:3a:00.0/drm/renderD129");
  t.pci("pci0000:9a/0000:9a:00.0", "0x038000", "0x8086", 1, "4-7");  // no driver's view: unknown
  auto root = sys::open_fsroot(t.root());
  ASSERT_TRUE(root.ok());
  auto devs = scan_sysfs_pci(**root);
  ASSERT_TRUE(devs.ok()) << devs.error().message();
  EXPECT_EQ(find(*devs, "0000:18:00.0")->stacks, 2u);
  EXPECT_EQ(find(*devs, "0000:3a:00.0")->stacks, 2u);
  EXPECT_EQ(find(*devs, "0000:9a:00.0")->stacks, 0u);
}

TEST(SysfsPci, NoPciBusIsAnEmptyList) {
  gpubind::testing::FakeTree t;
  t.dir("sys/devices");
  auto root = sys::open_fsroot(t.root());
  auto devs = scan_sysfs_pci(**root);
  ASSERT_TRUE(devs.ok());
  EXPECT_TRUE(devs->empty());
}

}  // namespace gpubind::discover
