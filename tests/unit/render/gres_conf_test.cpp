#include "render/gres_conf.hpp"

#include <gtest/gtest.h>

namespace gpubind::render {

// Two sockets with interleaved PU numbers (socket 0: even CPUs, socket 1: odd), as on many Dell
// servers: Slurm numbers socket 0's cores 0-3 and socket 1's 4-7, whatever the OS numbers.
TEST(GresConf, CoresUseSlurmsPackageOrder) {
  topo::Topology t;
  t.origin = "test";
  for (unsigned c = 0; c < 8; ++c) t.cores.push_back({CpuSet::of({c})});
  t.cpus = t.allowed_cpus = CpuSet::range(0, 7);
  t.packages = {{0, CpuSet::of({0, 2, 4, 6})}, {1, CpuSet::of({1, 3, 5, 7})}};
  t.numa_nodes = {{0, t.packages[0].cpus, 0, 0, ""}, {1, t.packages[1].cpus, 0, 1, ""}};
  EXPECT_EQ(topo::logical_core_ids(t), (std::vector<unsigned>{0, 4, 1, 5, 2, 6, 3, 7}));
  topo::Gpu g;
  g.pci = "0000:d8:00.0";
  g.vendor = topo::Vendor::nvidia;
  g.index = 1;
  g.name = "Tesla V100";
  g.numa = std::vector<unsigned>{1};
  g.cpus = t.packages[1].cpus;
  t.gpus.push_back(g);
  std::string out = gres_conf(t, "n1");
  EXPECT_NE(out.find("NodeName=n1 Name=gpu Type=tesla_v100 File=/dev/nvidia1 Cores=4-7\n"), std::string::npos) << out;
}

}  // namespace gpubind::render
