// The peers' published rules (../shared/notes/peers.md), as `compare` re-implements them.
#include "plan/peers.hpp"

#include <gtest/gtest.h>

#include <set>

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

TEST(Peers, SlurmBlockGivesCoresInOrderAndTheGpuFollowsTheMask) {
  auto t = a100();
  auto b = peer_bindings(t, {}, Peer::slurm_block);
  ASSERT_TRUE(b.ok()) << b.error().message();
  // 128 cores / 8 tasks: 16 each from core 0. Task 0's mask (node 0) is near no GPU: it takes
  // the first free one; task 1's (node 1) is covered by GPU 2's CPUs.
  EXPECT_EQ((*b)[0].cpus.to_list(), "0-15,128-143");
  EXPECT_EQ((*b)[0].gpus[0].index, 0u);
  EXPECT_EQ((*b)[1].cpus.to_list(), "16-31,144-159");
  EXPECT_EQ((*b)[1].gpus[0].index, 2u);
  std::set<unsigned> gpus;
  for (const RankBinding& rb : *b) gpus.insert(rb.gpus[0].index);
  EXPECT_EQ(gpus.size(), 8u);  // one GPU per task
  EXPECT_EQ((*b)[0].mem_policy, MemPolicy::none);
}

TEST(Peers, SlurmCyclicDealsTasksToTheSocketsInTurn) {
  auto t = a100();
  auto b = peer_bindings(t, {}, Peer::slurm_cyclic);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ((*b)[0].cpus.to_list(), "0-15,128-143");    // socket 0, first 16 cores
  EXPECT_EQ((*b)[1].cpus.to_list(), "64-79,192-207");   // socket 1, first 16 cores
  EXPECT_EQ((*b)[2].cpus.to_list(), "16-31,144-159");   // socket 0, next 16
  EXPECT_EQ((*b)[2].gpus[0].index, 2u);
}

TEST(Peers, SlurmNeedsACorePerTask) {
  Request r;
  r.allowed = CpuSet::of({0, 1, 2});
  r.ranks = 4;
  auto b = peer_bindings(a100(), r, Peer::slurm_block);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("fewer usable cores"), std::string::npos);
}

TEST(Peers, OneProcessPerGpuOnly) {
  Request r;
  r.ranks = 16;
  auto b = peer_bindings(a100(), r, Peer::torchrun_exclusive);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("one process per GPU only"), std::string::npos);
}

}  // namespace gpubind::plan
