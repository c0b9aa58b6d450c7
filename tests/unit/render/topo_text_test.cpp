#include "render/plan_render.hpp"
#include "render/topo_text.hpp"

#include <gtest/gtest.h>

#include "../../support/test_machines.hpp"
#include "discover/nccl_loader.hpp"
#include "discover/source.hpp"

namespace gpubind::render {

namespace {
using testing::example;
}  // namespace

TEST(TopoTable, ListsCpulessNodes) {
  std::string out = topo_table(example("gh200"));
  EXPECT_NE(out.find("(1 CPU-less)"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu-less GPUMemory"), std::string::npos) << out;
}

TEST(TopoTable, UnknownLocalityIsSaidPlainly) {
  // The GPU rows say "unknown" in the NUMA and CPUS columns; the loader's warnings (which the
  // CLI prints on stderr) say why.
  topo::Topology t = example("cloud-vm-unknown-locality");
  std::string out = topo_table(t);
  EXPECT_NE(out.find("unknown  unknown  hb:0001:00"), std::string::npos) << out;
  EXPECT_EQ(out.find("warnings:"), std::string::npos) << out;
  ASSERT_FALSE(t.warnings.empty());
  EXPECT_NE(t.warnings[0].find("locality unknown"), std::string::npos);
}

TEST(TopoMatrix, NvlinkAndPixCells) {
  std::string out = topo_matrix(example("dgx-h100"));
  // Row GPU0: self, NV18 to the other seven, then NIC columns.
  auto row = out.substr(out.find("\nGPU0"));
  row = row.substr(1, row.find('\n', 1));
  EXPECT_NE(row.find("NV18"), std::string::npos) << row;
  EXPECT_NE(row.find("PIX"), std::string::npos) << row;
  EXPECT_NE(row.find("0-55,112-167"), std::string::npos) << row;
}

TEST(TopoMatrix, GpuMemoryNodeColumn) {
  std::string out = topo_matrix(example("gh200"));
  auto row = out.substr(out.find("\nGPU0") + 1);
  row = row.substr(0, row.find('\n'));
  EXPECT_EQ(row.substr(row.size() - 1), "1") << row;
}

}  // namespace gpubind::render

namespace gpubind::render {

TEST(CoreMap, OneBracketPerPackageOneCharacterPerPu) {
  auto t = discover::load_topology("pack:2 core:2 pu:2");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(core_map(*t, CpuSet::of({0, 1, 4})), "[BB/..][B./..]");
  EXPECT_EQ(core_map(*t, CpuSet()), "[../..][../..]");
}

}  // namespace gpubind::render

namespace gpubind::render {

// Issue 10, matrix defects.
TEST(TopoMatrix, MixedVendorsGetUniqueGpuLabels) {
  topo::Topology t = *discover::load_topology("example:dgx-h100");
  t.gpus[1].vendor = topo::Vendor::amd;  // an NVIDIA GPU 0 and an AMD GPU 0
  t.gpus[1].index = 0;
  std::string out = topo_matrix(t);
  std::string head = out.substr(0, out.find('\n'));
  EXPECT_EQ(head.find("GPU0"), head.rfind("GPU0")) << head;  // once in the header
  EXPECT_NE(head.find("GPU1"), std::string::npos) << head;
  EXPECT_NE(out.find("GPU1: amd 0 (0000:2a:00.0"), std::string::npos) << out;
}

TEST(TopoMatrix, NicsInRdmaDeviceOrderAsNvidiaSmi) {
  topo::Topology t = *discover::load_topology("example:dgx-h100");
  std::string out = topo_matrix(t);
  // nvidia-smi numbers NICs by mlx5 index: mlx5_0 is NIC0 (PIX to GPU0), the storage mlx5_8 last.
  EXPECT_NE(out.find("NIC0: ibp26s0,mlx5_0"), std::string::npos) << out;
  EXPECT_NE(out.find("NIC8: enp11s0f0np0,mlx5_8"), std::string::npos) << out;
  auto row = out.substr(out.find("\nGPU0"), 80);
  EXPECT_NE(row.find("PIX"), std::string::npos);
  EXPECT_LT(row.find("PIX"), row.find("NODE")) << row;
}

TEST(TopoMatrix, NcclFilesSayPhbOrNodeIsUnknown) {
  const char* xml = R"(<system version="1">
  <cpu numaid="0" affinity="0000000f" arch="x86_64">
    <pci busid="0000:10:00.0" class="0x060400" vendor="0x1000" device="0xc010">
      <pci busid="0000:11:00.0" class="0x030200" vendor="0x10de" device="0x20b0"><gpu dev="0" sm="80" rank="0"/></pci>
    </pci>
    <pci busid="0000:20:00.0" class="0x060400" vendor="0x1000" device="0xc010">
      <pci busid="0000:21:00.0" class="0x020700" vendor="0x15b3" device="0x101b"><nic><net name="mlx5_0" dev="0"/></nic></pci>
    </pci>
  </cpu>
</system>)";
  auto t = discover::load_nccl_xml(xml, "test");
  ASSERT_TRUE(t.ok()) << t.error().message();
  std::string out = topo_matrix(*t);
  EXPECT_NE(out.find("PHB?"), std::string::npos) << out;
  EXPECT_NE(out.find("the source (an NCCL/RCCL file) has no host bridges"), std::string::npos);
}

}  // namespace gpubind::render
