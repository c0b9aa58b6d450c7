// What exec does about a binding the launcher already made (issue 9: never replaced silently;
// kept on request when it is on the GPU's node and large enough).
#include "bind/launcher_binding.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"

namespace gpubind::bind {

namespace {

struct MachineAndPlan {
  topo::Topology t;
  plan::Plan p;
};

MachineAndPlan h100() {
  auto t = discover::load_topology("example:dgx-h100");
  EXPECT_TRUE(t.ok());
  auto p = plan::make_plan(*t, {});
  EXPECT_TRUE(p.ok());
  return {*t, *p};
}

std::string omp(const plan::RankBinding& rb) {
  for (const auto& [k, v] : rb.env)
    if (k == "OMP_NUM_THREADS") return v;
  return "";
}

}  // namespace

TEST(LauncherBinding, UnpinnedRankIsNotReported) {
  MachineAndPlan f = h100();
  plan::RankBinding rb = f.p.ranks[0];
  LauncherBinding lb = judge_launcher_binding(f.t, rb, f.t.allowed_cpus, f.t.allowed_cpus, false);
  EXPECT_EQ(lb.kind, LauncherBinding::Kind::unpinned);
  EXPECT_EQ(lb.note, "");
}

TEST(LauncherBinding, SameAsThePlanIsNotReported) {
  MachineAndPlan f = h100();
  plan::RankBinding rb = f.p.ranks[0];
  LauncherBinding lb = judge_launcher_binding(f.t, rb, rb.cpus, f.t.allowed_cpus, false);
  EXPECT_EQ(lb.kind, LauncherBinding::Kind::same);
  EXPECT_EQ(lb.note, "");
}

TEST(LauncherBinding, AnotherSocketIsReplacedWithANote) {
  MachineAndPlan f = h100();
  plan::RankBinding rb = f.p.ranks[0];
  LauncherBinding lb = judge_launcher_binding(f.t, rb, CpuSet::of({56}), f.t.allowed_cpus, false);
  EXPECT_EQ(lb.kind, LauncherBinding::Kind::replaced);
  EXPECT_NE(lb.note.find("replaces the launcher's binding to CPUs 56 with 0-13,112-125"), std::string::npos) << lb.note;
}

TEST(LauncherBinding, AWholeSocketIsNarrowedWithANote) {
  MachineAndPlan f = h100();
  plan::RankBinding rb = f.p.ranks[0];
  LauncherBinding lb = judge_launcher_binding(f.t, rb, CpuSet::range(0, 55) | CpuSet::range(112, 167), f.t.allowed_cpus, false);
  EXPECT_EQ(lb.kind, LauncherBinding::Kind::narrowed);
  EXPECT_NE(lb.note.find("narrows"), std::string::npos) << lb.note;
}

TEST(LauncherBinding, KeepTakesALauncherBindingOnTheGpusNodeWithEnoughCores) {
  MachineAndPlan f = h100();
  plan::RankBinding rb = f.p.ranks[0];
  CpuSet launcher = CpuSet::range(20, 39) | CpuSet::range(132, 151);  // 20 cores on node 0
  LauncherBinding lb = judge_launcher_binding(f.t, rb, launcher, f.t.allowed_cpus, true);
  EXPECT_EQ(lb.kind, LauncherBinding::Kind::kept);
  EXPECT_EQ(rb.cpus, launcher);
  EXPECT_EQ(omp(rb), "20");
}

TEST(LauncherBinding, KeepMovesNcclsProxyCpusetToTheKeptCpusLastCore) {
  MachineAndPlan f = h100();
  plan::RankBinding rb = f.p.ranks[0];
  rb.env.push_back({plan::kNcclProxyCpusetEnv, "13,125"});
  CpuSet launcher = CpuSet::range(20, 39) | CpuSet::range(132, 151);
  judge_launcher_binding(f.t, rb, launcher, f.t.allowed_cpus, true);
  std::string proxy;
  for (const auto& [k, v] : rb.env)
    if (k == plan::kNcclProxyCpusetEnv) proxy = v;
  EXPECT_EQ(proxy, "39,151");
}

TEST(LauncherBinding, KeepRefusesCpusOffTheGpusNode) {
  MachineAndPlan f = h100();
  plan::RankBinding rb = f.p.ranks[0];
  CpuSet planned = rb.cpus;
  LauncherBinding lb = judge_launcher_binding(f.t, rb, CpuSet::range(50, 69), f.t.allowed_cpus, true);
  EXPECT_EQ(lb.kind, LauncherBinding::Kind::replaced);
  EXPECT_EQ(rb.cpus, planned);
  EXPECT_NE(lb.note.find("not kept: CPUs 56-69 are off the GPU's node"), std::string::npos) << lb.note;
}

TEST(LauncherBinding, KeepRefusesFewerCoresThanThePlan) {
  MachineAndPlan f = h100();
  plan::RankBinding rb = f.p.ranks[0];
  LauncherBinding lb = judge_launcher_binding(f.t, rb, CpuSet::of({0, 112}), f.t.allowed_cpus, true);
  EXPECT_EQ(lb.kind, LauncherBinding::Kind::widened);
  EXPECT_NE(lb.note.find("1 core(s) where the plan gives 14"), std::string::npos) << lb.note;
}

TEST(LauncherBinding, WholeNumaNodePinningIsRecognised) {
  auto t = discover::load_topology("example:dgx-a100-nps4");
  ASSERT_TRUE(t.ok());
  CpuSet node0 = topo::cpus_of_nodes(*t, {0});
  EXPECT_TRUE(pinned_to_whole_numa_nodes(*t, node0, t->allowed_cpus));
  EXPECT_TRUE(pinned_to_whole_numa_nodes(*t, node0 | topo::cpus_of_nodes(*t, {1}), t->allowed_cpus));
  EXPECT_FALSE(pinned_to_whole_numa_nodes(*t, CpuSet::of({0, 128}), t->allowed_cpus));  // one core
  EXPECT_FALSE(pinned_to_whole_numa_nodes(*t, t->allowed_cpus, t->allowed_cpus));       // not pinned
  // Within a cgroup, a node's allowed part counts as the whole node.
  CpuSet allowed = CpuSet::range(0, 7) | CpuSet::range(128, 135) | topo::cpus_of_nodes(*t, {1});
  EXPECT_TRUE(pinned_to_whole_numa_nodes(*t, CpuSet::range(0, 7) | CpuSet::range(128, 135), allowed));
}

}  // namespace gpubind::bind
