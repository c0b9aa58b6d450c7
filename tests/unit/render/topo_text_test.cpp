#include "render/plan_render.hpp"
#include "render/topo_text.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"

namespace gpubind::render {

namespace {
topo::Topology example(const std::string& name) {
  auto t = discover::load_topology(std::string(GPUBIND_SOURCE_DIR) + "/data/examples/" + name);
  EXPECT_TRUE(t.ok());
  return *t;
}
}  // namespace

TEST(TopoTable, ListsCpulessNodes) {
  std::string out = topo_table(example("gh200.json"));
  EXPECT_NE(out.find("(1 CPU-less)"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu-less GPUMemory"), std::string::npos) << out;
}

TEST(TopoTable, UnknownLocalityIsSaidPlainly) {
  // The GPU rows say "unknown" in the NUMA and CPUS columns; the loader's warnings (which the
  // CLI prints on stderr) say why.
  topo::Topology t = example("cloud-vm-unknown-locality.json");
  std::string out = topo_table(t);
  EXPECT_NE(out.find("unknown  unknown  hb:0001:00"), std::string::npos) << out;
  EXPECT_EQ(out.find("warnings:"), std::string::npos) << out;
  ASSERT_FALSE(t.warnings.empty());
  EXPECT_NE(t.warnings[0].find("locality unknown"), std::string::npos);
}

TEST(TopoMatrix, NvlinkAndPixCells) {
  std::string out = topo_matrix(example("dgx-h100.json"));
  // Row GPU0: self, NV18 to the other seven, then NIC columns.
  auto row = out.substr(out.find("\nGPU0"));
  row = row.substr(1, row.find('\n', 1));
  EXPECT_NE(row.find("NV18"), std::string::npos) << row;
  EXPECT_NE(row.find("PIX"), std::string::npos) << row;
  EXPECT_NE(row.find("0-55,112-167"), std::string::npos) << row;
}

TEST(TopoMatrix, GpuMemoryNodeColumn) {
  std::string out = topo_matrix(example("gh200.json"));
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
