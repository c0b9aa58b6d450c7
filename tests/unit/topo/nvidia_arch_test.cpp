// The NVIDIA device-ID -> compute capability table that CUDA's FASTEST_FIRST order depends on
// (issue 10 item 7), checked on boards whose IDs are public (pci.ids) and seen in the corpus.
#include <gtest/gtest.h>

#include "topo/topology.hpp"

namespace gpubind::topo {

TEST(NvidiaArch, BoardsMapToTheirChipsComputeCapability) {
  struct Board {
    uint16_t id;
    unsigned cc;
    const char* name;
  };
  const Board boards[] = {
      {0x06d2, 20, "Tesla M2070"}, {0x1094, 20, "Tesla M2075"},   {0x1021, 35, "Tesla K20Xm"},
      {0x102d, 37, "Tesla K80"},   {0x15f9, 60, "Tesla P100 SXM2"}, {0x1b81, 61, "GeForce GTX 1070"},
      {0x1db1, 70, "Tesla V100 SXM2"}, {0x1eb8, 75, "Tesla T4"},  {0x20b0, 80, "A100 SXM4 40GB"},
      {0x20b5, 80, "A100 PCIe 80GB"},  {0x2236, 86, "A10"},       {0x26b9, 89, "L40S"},
      {0x2324, 90, "H800"},        {0x2330, 90, "H100 SXM5"},     {0x2901, 100, "B200"},
  };
  for (const Board& b : boards) EXPECT_EQ(nvidia_compute_capability(b.id), b.cc) << b.name;
}

TEST(NvidiaArch, UnknownIdsAreNotGuessed) {
  EXPECT_EQ(nvidia_compute_capability(0x0000), std::nullopt);  // NCCL files without a device ID
  EXPECT_EQ(nvidia_compute_capability(0x1234), std::nullopt);
  EXPECT_EQ(nvidia_compute_capability(0xffff), std::nullopt);
}

}  // namespace gpubind::topo
