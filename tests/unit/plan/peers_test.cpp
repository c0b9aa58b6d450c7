// The peers' published rules (../shared/notes/peers.md), as `compare` re-implements them.
#include "plan/peers.hpp"
#include "plan/compare.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "../../support/test_machines.hpp"
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

// NVIDIA gpu_affinity's own expectations (github.com/NVIDIA/gpu_affinity, tests/test_dgx.py),
// mode UNIQUE_CONTIGUOUS, scope SOCKET, balanced, ALL_LOGICAL (siblings at +128 on DGX A100, +112
// on DGX H100), transcribed as first-core ranges of each GPU's set.
CpuSet with_siblings(std::vector<std::pair<unsigned, unsigned>> ranges, unsigned offset) {
  CpuSet s;
  for (auto [from, to] : ranges)
    for (unsigned c = from; c < to; ++c) {
      s.set(c);
      s.set(c + offset);
    }
  return s;
}

TEST(Peers, GpuAffinitySocketMatchesNvidiasDgxA100Test) {
  // test_dgx.py DGXA100.test_unique_contiguous_socket: GPU 0 = cores 48-55 (its node 3) and 32-39
  // (GPU-less node 2 dealt out to node 3's cores), and so on.
  const std::map<unsigned, std::vector<std::pair<unsigned, unsigned>>> reference = {
      {0, {{48, 56}, {32, 40}}},   {1, {{56, 64}, {40, 48}}},   {2, {{16, 24}, {0, 8}}},    {3, {{24, 32}, {8, 16}}},
      {4, {{112, 120}, {96, 104}}}, {5, {{120, 128}, {104, 112}}}, {6, {{80, 88}, {64, 72}}}, {7, {{88, 96}, {72, 80}}}};
  auto t = a100();
  auto b = peer_bindings(t, {}, Peer::gpu_affinity_socket);
  ASSERT_TRUE(b.ok()) << b.error().message();
  for (const auto& [gpu, ranges] : reference) EXPECT_EQ((*b)[gpu].cpus, with_siblings(ranges, 128)) << "GPU " << gpu;
  Score s = score_plan(t, *b, usable_cpus(t, {}));
  EXPECT_EQ(*s.cpu_locality, 0.5);  // as gpubind's socket-split: half of each rank's cores local
}

TEST(Peers, GpuAffinitySocketMatchesNvidiasDgxH100Test) {
  // test_dgx.py DGXH100.test_unique_contiguous (node and socket scope alike): 14 cores per GPU in
  // order, 0-13 for GPU 0 ... 98-111 for GPU 7.
  auto t = *discover::load_topology("example:dgx-h100");
  auto b = peer_bindings(t, {}, Peer::gpu_affinity_socket);
  ASSERT_TRUE(b.ok()) << b.error().message();
  for (unsigned g = 0; g < 8; ++g) EXPECT_EQ((*b)[g].cpus, with_siblings({{14 * g, 14 * g + 14}}, 112)) << "GPU " << g;
}

// PyTorch's own expectations for torchrun --numa-binding (pytorch/pytorch, test/test_numa_binding.py):
// its mock machine has `sockets` packages of `nodes` NUMA nodes, each with `gpus` GPUs and `l3s`
// L3 caches of `cores` two-PU cores, numbered in order with siblings adjacent, as hwloc's
// synthetic topology numbers them.
topo::Topology torch_mock(unsigned sockets, unsigned nodes, unsigned gpus, unsigned l3s, unsigned cores) {
  return testing::synthetic_with_gpus("pack:" + std::to_string(sockets) + " numa:" + std::to_string(nodes) + " l3:" +
                                          std::to_string(l3s) + " core:" + std::to_string(cores) + " pu:2",
                                      std::vector<unsigned>(sockets * nodes, gpus));
}

TEST(Peers, TorchrunExclusiveMatchesPytorchsTest) {
  // test_exclusive_numa_binding: 3 cores on node 0 for 2 GPUs: rank 0 --physcpubind=0-3 (the
  // extra core), rank 1 4-5.
  auto b = peer_bindings(torch_mock(2, 1, 2, 1, 3), {}, Peer::torchrun_exclusive);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ((*b)[0].cpus.to_list(), "0-3");
  EXPECT_EQ((*b)[1].cpus.to_list(), "4-5");
  // test_exclusive_raises_if_too_few_physical_cores: 1 core for 2 GPUs is an error.
  auto too_few = peer_bindings(torch_mock(2, 1, 2, 1, 1), {}, Peer::torchrun_exclusive);
  ASSERT_FALSE(too_few.ok());
  EXPECT_NE(too_few.error().message().find("fewer physical cores than GPUs on NUMA node 0"), std::string::npos);
}

TEST(Peers, TorchrunCoreComplexMatchesPytorchsTests) {
  // test_core_complex_numa_binding_with_extra_l3: rank 3 (node 1's second GPU) gets node 1's
  // second L3, 24-29.
  auto extra = peer_bindings(torch_mock(2, 1, 2, 3, 3), {}, Peer::torchrun_core_complex);
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ((*extra)[3].cpus.to_list(), "24-29");
  // test_core_complex_numa_binding_with_fewer_l3_than_gpu: one L3 per node, rank 3 shares it.
  auto fewer = peer_bindings(torch_mock(2, 1, 2, 1, 3), {}, Peer::torchrun_core_complex);
  ASSERT_TRUE(fewer.ok());
  EXPECT_EQ((*fewer)[3].cpus.to_list(), "6-11");
  // test_core_complex_prefers_caches_with_more_cpus: affinity {0,4,6,7,9}: the L3 with the most
  // of them, 6-7,9.
  Request some;
  some.allowed = CpuSet::of({0, 4, 6, 7, 9});
  auto most = peer_bindings(torch_mock(1, 1, 1, 3, 3), some, Peer::torchrun_core_complex);
  ASSERT_TRUE(most.ok());
  EXPECT_EQ((*most)[0].cpus.to_list(), "6-7,9");
  // test_core_complex_tiebreak_prefers_lower_cache_key: two equal L3s, the lower one.
  auto tie = peer_bindings(torch_mock(1, 1, 1, 2, 1), {}, Peer::torchrun_core_complex);
  ASSERT_TRUE(tie.ok());
  EXPECT_EQ((*tie)[0].cpus.to_list(), "0-1");
}

TEST(Peers, TorchrunReadsAnUnknownNodeAsNodeZero) {
  // test_binds_to_node_0_if_node_stored_as_minus_one.
  auto t = torch_mock(2, 1, 1, 1, 2);
  t.gpus[1].numa.reset();
  auto b = peer_bindings(t, {}, Peer::torchrun_exclusive);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE((*b)[1].cpus.is_subset_of(topo::cpus_of_nodes(t, {0})));
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

namespace gpubind::plan {

TEST(Compare, EveryStrategyIsPlannedFromTheSameRequestAndScored) {
  auto t = a100();
  Request req;
  req.policy = Policy::cpu_only;  // ignored: every strategy is planned
  auto c = compare_strategies(t, req);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->ranks, 8u);
  EXPECT_EQ(c->topology_origin, t.origin);
  ASSERT_EQ(c->strategies.size(), 11u);  // 6 of gpubind's policies, then 5 peers' rules
  std::map<std::string, const StrategyOutcome*> by_name;
  for (const StrategyOutcome& s : c->strategies) by_name[s.name] = &s;
  EXPECT_TRUE(by_name.at("closest")->gpubind_policy);
  EXPECT_FALSE(by_name.at("torchrun-exclusive")->gpubind_policy);
  // Scores differ as the strategies do: closest keeps every rank's CPUs on its GPU's node and
  // gives no CPU twice; GPU-unaware blocks from CPU 0 do not.
  const Score& closest = by_name.at("closest")->plan->score;
  const Score& cpu_only = by_name.at("cpu-only")->plan->score;
  EXPECT_EQ(closest.cpu_locality, 1.0);
  EXPECT_EQ(closest.overlap_cpus, 0u);
  ASSERT_TRUE(cpu_only.cpu_locality.has_value());
  EXPECT_LT(*cpu_only.cpu_locality, 1.0);
  EXPECT_EQ(by_name.at("closest")->plan->policy, Policy::closest);
}

TEST(Compare, APeerThatCannotPlanSaysWhyAndTheOthersStillScore) {
  // 16 ranks on 8 GPUs: gpubind's policies share each GPU between two ranks; the peers' rules
  // run one process per GPU only.
  auto t = a100();
  Request req;
  req.ranks = 16;
  auto c = compare_strategies(t, req);
  ASSERT_TRUE(c.ok()) << c.error().message();
  size_t failed = 0;
  for (const StrategyOutcome& s : c->strategies) {
    if (s.plan) continue;
    ++failed;
    EXPECT_FALSE(s.gpubind_policy) << s.name;  // gpubind's own policies always plan
    EXPECT_NE(s.error.find("one process per GPU"), std::string::npos) << s.name << ": " << s.error;
  }
  EXPECT_GT(failed, 0u);
  EXPECT_EQ(c->ranks, 16u);
}

TEST(Compare, ARequestNoPolicyCanPlanIsAnError) {
  auto t = a100();
  Request req;
  req.require_gpu = true;
  req.env["CUDA_VISIBLE_DEVICES"] = "";  // no GPU visible, and one is required
  EXPECT_FALSE(compare_strategies(t, req).ok());
}

}  // namespace gpubind::plan
