#include "discover/classify.hpp"

#include <gtest/gtest.h>

namespace gpubind::discover {

TEST(Classify, VendorDisplayControllersAreGpus) {
  EXPECT_EQ(classify({0x10de, 0x2330, 0x0302, false}), DeviceRole::gpu);  // H100 (3D controller)
  EXPECT_EQ(classify({0x10de, 0x2230, 0x0300, false}), DeviceRole::gpu);  // RTX A6000 (VGA)
  EXPECT_EQ(classify({0x1002, 0x7408, 0x0380, false}), DeviceRole::gpu);  // MI250X (display other)
  EXPECT_EQ(classify({0x8086, 0x0bd5, 0x0380, false}), DeviceRole::gpu);  // Ponte Vecchio
}

TEST(Classify, ProcessingAcceleratorsAreGpus) {
  EXPECT_EQ(classify({0x1002, 0x74a1, 0x1200, false}), DeviceRole::gpu);  // MI300X
  EXPECT_EQ(classify({0x1bcf, 0x001c, 0x0b40, false}), DeviceRole::gpu);  // NEC Vector Engine
}

TEST(Classify, GpuClassesAreDisplayAndProcessingAccelerators) {
  for (uint32_t c : {0x0300u, 0x0302u, 0x0380u, 0x1200u}) EXPECT_TRUE(is_gpu_class(c)) << std::hex << c;
  for (uint32_t c : {0x0200u, 0x0207u, 0x0b40u, 0x0604u, 0x0100u, 0x0400u}) EXPECT_FALSE(is_gpu_class(c)) << std::hex << c;
}

TEST(Classify, BmcAndOnboardVgaAreNotGpus) {
  EXPECT_EQ(classify({0x1a03, 0x2000, 0x0300, false}), DeviceRole::none);  // ASPEED
  EXPECT_EQ(classify({0x102b, 0x0522, 0x0300, false}), DeviceRole::none);  // Matrox G200e
  EXPECT_EQ(classify({0x1002, 0x515e, 0x0300, false}), DeviceRole::none);  // ATI ES1000
  EXPECT_EQ(classify({0x8086, 0x37c8, 0x0b40, false}), DeviceRole::none);  // QuickAssist
}

TEST(Classify, NvidiaDriverListingWinsOverStrippedIds) {
  EXPECT_EQ(classify({0, 0, 0x0302, true}), DeviceRole::gpu);
  EXPECT_EQ(classify({0, 0, 0x0302, false}), DeviceRole::none);
}

TEST(Classify, SerialBusInfinibandHcasAreNics) {
  // ConnectX-2 (HP SL390s) reports the serial-bus InfiniBand class 0c06, not network 0207.
  EXPECT_EQ(classify({0x15b3, 0x6746, 0x0c06, false}), DeviceRole::nic);
}

TEST(Classify, NetworkClassesAreNics) {
  EXPECT_EQ(classify({0x15b3, 0x1021, 0x0207, false}), DeviceRole::nic);  // InfiniBand
  EXPECT_EQ(classify({0x8086, 0x1563, 0x0200, false}), DeviceRole::nic);  // Ethernet
  EXPECT_EQ(classify({0x17db, 0x0501, 0x0280, false}), DeviceRole::nic);  // other network
}

TEST(Classify, GpuIndexesFollowPciOrderPerVendor) {
  std::vector<topo::Gpu> gpus(3);
  gpus[0].pci = "0000:b0:00.0";
  gpus[0].vendor = topo::Vendor::nvidia;
  gpus[1].pci = "0000:10:00.0";
  gpus[1].vendor = topo::Vendor::nvidia;
  gpus[2].pci = "0000:05:00.0";
  gpus[2].vendor = topo::Vendor::amd;
  assign_gpu_indexes(gpus, {false, false, false});
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].pci, "0000:10:00.0");
  EXPECT_EQ(gpus[0].index, 0u);
  EXPECT_EQ(gpus[1].pci, "0000:b0:00.0");
  EXPECT_EQ(gpus[1].index, 1u);
  EXPECT_EQ(gpus[2].vendor, topo::Vendor::amd);
  EXPECT_EQ(gpus[2].index, 0u);
}

TEST(Classify, VendorLibraryIndexesKeptWhenComplete) {
  std::vector<topo::Gpu> gpus(2);
  gpus[0].pci = "0000:c1:00.0";
  gpus[0].vendor = topo::Vendor::amd;
  gpus[0].index = 4;
  gpus[1].pci = "0000:d1:00.0";
  gpus[1].vendor = topo::Vendor::amd;
  gpus[1].index = 0;
  assign_gpu_indexes(gpus, {true, true});
  EXPECT_EQ(gpus[0].pci, "0000:d1:00.0");
  EXPECT_EQ(gpus[0].index, 0u);
  EXPECT_EQ(gpus[1].index, 4u);
}

}  // namespace gpubind::discover
