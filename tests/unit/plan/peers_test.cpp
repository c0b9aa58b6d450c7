// The peers' published rules (../shared/notes/peers.md), as `compare` re-implements them.
#include "plan/peers.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"

namespace gpubind::plan {

namespace {
topo::Topology a100() { return *discover::load_topology("example:dgx-a100-nps4"); }
}  // namespace

TEST(Peers, TorchrunExclusiveSplitsTheNodesCoresAmongItsGpus) {
  auto t = a100();
  auto b = peer_bindings(t, {}, Peer::torchrun_exclusive);
  ASSERT_TRUE(b.ok()) << b.error().message();
  // GPUs 0 and 1 share NUMA node 3 (cores 48-63): 8 cores each, all siblings.
  EXPECT_EQ((*b)[0].cpus.to_list(), "48-55,176-183");
  EXPECT_EQ((*b)[1].cpus.to_list(), "56-63,184-191");
  EXPECT_EQ((*b)[0].mem_policy, MemPolicy::none);
}

TEST(Peers, TorchrunCoreComplexGivesOneL3GroupPerGpu) {
  auto t = a100();
  auto b = peer_bindings(t, {}, Peer::torchrun_core_complex);
  ASSERT_TRUE(b.ok());
  // Rome CCX = 4 cores (8 PUs): GPU 0 and 1 get different L3 groups of node 3.
  EXPECT_EQ((*b)[0].cpus.count(), 8u);
  EXPECT_FALSE((*b)[0].cpus.intersects((*b)[1].cpus));
  EXPECT_TRUE((*b)[0].cpus.is_subset_of(topo::cpus_of_nodes(t, {3})));
}

TEST(Peers, GpuAffinitySocketSplitsTheSocketInGpuOrderIgnoringNodes) {
  auto t = a100();
  auto b = peer_bindings(t, {}, Peer::gpu_affinity_socket);
  ASSERT_TRUE(b.ok());
  // socket 0's 64 cores split 16 each in GPU order: GPU 0 (node 3) gets node 0's cores.
  EXPECT_EQ((*b)[0].cpus.to_list(), "0-15,128-143");
  Score s = score_plan(t, *b, usable_cpus(t, {}));
  EXPECT_EQ(*s.cpu_locality, 0.0);
}

TEST(Peers, OneProcessPerGpuOnly) {
  Request r;
  r.ranks = 16;
  auto b = peer_bindings(a100(), r, Peer::torchrun_exclusive);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("one process per GPU only"), std::string::npos);
}

}  // namespace gpubind::plan
