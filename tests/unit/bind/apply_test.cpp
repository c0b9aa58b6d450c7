#include "bind/apply.hpp"

#include <gtest/gtest.h>

#include "../../support/fake_tree.hpp"
#include "../../support/recording_binder.hpp"
#include "discover/source.hpp"

namespace gpubind::bind {

namespace {

struct PlannedMachine {
  plan::Plan plan;
  MachineState machine;
};

PlannedMachine planned_dgx(plan::Request r = {}) {
  auto t = discover::load_topology("example:dgx-h100");
  EXPECT_TRUE(t.ok());
  auto p = plan::make_plan(*t, r);
  EXPECT_TRUE(p.ok());
  return {*p, {t->cpus, t->cpus, CpuSet::of({0, 1})}};
}

bool has(const std::vector<std::string>& calls, const std::string& c) {
  return std::find(calls.begin(), calls.end(), c) != calls.end();
}

}  // namespace

TEST(ApplyBinding, SetsAffinityMemoryPolicyAndEnvironment) {
  PlannedMachine f = planned_dgx();
  testing::RecordingBinder b;
  std::vector<std::string> warnings;
  ASSERT_TRUE(apply_binding(f.plan, f.plan.ranks[5], f.machine, b, BestEffort::no, MemRefused::warn, warnings).ok());
  EXPECT_EQ(b.calls.at(0), "affinity 70-83,182-195");
  EXPECT_EQ(b.calls.at(1), "mempolicy preferred 1");
  EXPECT_TRUE(has(b.calls, "env GPUBIND_LOCAL_RANK=5"));
  EXPECT_TRUE(has(b.calls, "env GPUBIND_GPU=0000:ab:00.0"));
  EXPECT_TRUE(has(b.calls, "env GPUBIND_CPUS=70-83,182-195"));
  EXPECT_TRUE(has(b.calls, "env GPUBIND_MEM=1"));
  EXPECT_TRUE(has(b.calls, "env OMP_NUM_THREADS=14"));
  EXPECT_TRUE(warnings.empty());
}

TEST(ApplyBinding, BindAndInterleaveModes) {
  plan::Request r;
  r.mem = plan::MemPolicy::bind;
  PlannedMachine f = planned_dgx(r);
  testing::RecordingBinder b;
  std::vector<std::string> w;
  ASSERT_TRUE(apply_binding(f.plan, f.plan.ranks[0], f.machine, b, BestEffort::no, MemRefused::warn, w).ok());
  EXPECT_EQ(b.calls.at(1), "mempolicy bind 0");
  r.mem = plan::MemPolicy::interleave;
  PlannedMachine g = planned_dgx(r);
  testing::RecordingBinder c;
  ASSERT_TRUE(apply_binding(g.plan, g.plan.ranks[0], g.machine, c, BestEffort::no, MemRefused::warn, w).ok());
  EXPECT_EQ(c.calls.at(1), "mempolicy interleave 0");
}

TEST(ApplyBinding, CpusOutsideTheAllowedSetStopBeforeAnySyscall) {
  PlannedMachine f = planned_dgx();
  f.machine.allowed_cpus = CpuSet::range(0, 27);
  testing::RecordingBinder b;
  std::vector<std::string> w;
  auto s = apply_binding(f.plan, f.plan.ranks[3], f.machine, b, BestEffort::no, MemRefused::warn, w);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("outside this process's allowed CPUs"), std::string::npos);
  EXPECT_TRUE(b.calls.empty());  // nothing half-applied
}

TEST(ApplyBinding, OfflineCpusAndNodesAreRefused) {
  PlannedMachine f = planned_dgx();
  f.machine.online_cpus = CpuSet::range(0, 100);
  testing::RecordingBinder b;
  std::vector<std::string> w;
  EXPECT_FALSE(apply_binding(f.plan, f.plan.ranks[7], f.machine, b, BestEffort::no, MemRefused::warn, w).ok());
  f = planned_dgx();
  f.machine.online_nodes = CpuSet::of({0});
  EXPECT_FALSE(apply_binding(f.plan, f.plan.ranks[7], f.machine, b, BestEffort::no, MemRefused::warn, w).ok());
  EXPECT_TRUE(b.calls.empty());
}

TEST(ApplyBinding, BestEffortNarrowsAndWarns) {
  PlannedMachine f = planned_dgx();
  f.machine.allowed_cpus = CpuSet::range(0, 20);
  testing::RecordingBinder b;
  std::vector<std::string> w;
  ASSERT_TRUE(apply_binding(f.plan, f.plan.ranks[1], f.machine, b, BestEffort::yes, MemRefused::warn, w).ok());
  EXPECT_EQ(b.calls.at(0), "affinity 14-20");
  EXPECT_FALSE(w.empty());
}

TEST(ApplyBinding, FailedMemoryPolicyIsAnErrorUnlessBestEffort) {
  PlannedMachine f = planned_dgx();
  testing::RecordingBinder b;
  b.fail_mempolicy = true;
  std::vector<std::string> w;
  EXPECT_FALSE(apply_binding(f.plan, f.plan.ranks[0], f.machine, b, BestEffort::no, MemRefused::warn, w).ok());
  // Nothing half-applied (issue 12 item 5): the CPU affinity set first is put back.
  ASSERT_GE(b.calls.size(), 3u);
  EXPECT_EQ(b.calls[0], "affinity " + f.plan.ranks[0].cpus.to_list());
  EXPECT_EQ(b.calls[2], "affinity " + f.machine.allowed_cpus.to_list());
  for (const std::string& c : b.calls) EXPECT_NE(c.rfind("env ", 0), 0u) << c;
  testing::RecordingBinder lenient;
  lenient.fail_mempolicy = true;
  EXPECT_TRUE(apply_binding(f.plan, f.plan.ranks[0], f.machine, lenient, BestEffort::yes, MemRefused::warn, w).ok());
  EXPECT_FALSE(w.empty());
  // Best effort keeps what was applied: no undo.
  EXPECT_FALSE(has(lenient.calls, "mempolicy default"));
  EXPECT_FALSE(has(lenient.calls, "affinity " + f.machine.allowed_cpus.to_list()));
  EXPECT_EQ(lenient.env.at("GPUBIND_CPUS"), f.plan.ranks[0].cpus.to_list());
}

// Issue 32: Docker's and containerd's default seccomp profiles refuse set_mempolicy without
// CAP_SYS_NICE. The CPU binding stays, one warning says so, GPUBIND_MEM_POLICY says "refused".
TEST(ApplyBinding, MemoryPolicyRefusedByTheContainerKeepsTheCpuBinding) {
  PlannedMachine f = planned_dgx();
  testing::RecordingBinder b;
  b.refuse_mempolicy = true;
  std::vector<std::string> w;
  auto applied = apply_binding(f.plan, f.plan.ranks[5], f.machine, b, BestEffort::no, MemRefused::warn, w);
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  EXPECT_EQ(applied->memory, MemoryApplied::refused);
  EXPECT_EQ(b.calls.at(0), "affinity 70-83,182-195");
  EXPECT_FALSE(has(b.calls, "affinity " + f.machine.allowed_cpus.to_list()));  // not undone
  EXPECT_FALSE(has(b.calls, "mempolicy default"));
  EXPECT_EQ(b.env.at("GPUBIND_MEM_POLICY"), "refused");
  EXPECT_EQ(b.env.at("GPUBIND_CPUS"), "70-83,182-195");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("local rank 5: memory policy refused by the container (set_mempolicy: Operation not permitted): CPUs bound"),
            std::string::npos) << w[0];
}

TEST(ApplyBinding, MemoryPolicyRefusedIsAnErrorWhenRequired) {
  PlannedMachine f = planned_dgx();
  for (BestEffort be : {BestEffort::no, BestEffort::yes}) {
    testing::RecordingBinder b;
    b.refuse_mempolicy = true;
    std::vector<std::string> w;
    auto applied = apply_binding(f.plan, f.plan.ranks[0], f.machine, b, be, MemRefused::error, w);
    ASSERT_FALSE(applied.ok());
    EXPECT_EQ(applied.error().message(), "set_mempolicy: Operation not permitted");
    EXPECT_EQ(b.calls.back(), "affinity " + f.machine.allowed_cpus.to_list());  // the CPU binding undone
    EXPECT_TRUE(b.env.empty());
    EXPECT_TRUE(w.empty());
  }
}

TEST(ApplyBinding, OneNumaNodeSetsNoMemoryPolicy) {
  plan::Request r;
  r.mem = plan::MemPolicy::bind;
  PlannedMachine f = planned_dgx(r);  // rank 0: memory node 0; this machine has only node 0 online
  ASSERT_EQ(f.plan.ranks[0].mem_nodes, std::vector<unsigned>{0});
  MachineState m{f.machine.online_cpus, f.machine.allowed_cpus, CpuSet::of({0})};
  testing::RecordingBinder b;
  b.refuse_mempolicy = true;  // would be refused, were it called
  std::vector<std::string> w;
  auto applied = apply_binding(f.plan, f.plan.ranks[0], m, b, BestEffort::no, MemRefused::error, w);
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  EXPECT_EQ(applied->memory, MemoryApplied::one_node);
  for (const std::string& c : b.calls) EXPECT_NE(c.rfind("mempolicy", 0), 0u) << c;
  EXPECT_EQ(b.env.at("GPUBIND_MEM_POLICY"), "bind");
  EXPECT_TRUE(w.empty());
  // Two online nodes: called, and refused.
  m.online_nodes = CpuSet::of({0, 1});
  testing::RecordingBinder c;
  c.refuse_mempolicy = true;
  EXPECT_FALSE(apply_binding(f.plan, f.plan.ranks[0], m, c, BestEffort::no, MemRefused::error, w).ok());
  EXPECT_TRUE(has(c.calls, "mempolicy bind 0"));
}

TEST(ApplyBinding, RefusedEnvironmentUndoesAffinityMemoryPolicyAndVariables) {
  PlannedMachine f = planned_dgx();
  testing::RecordingBinder b;
  b.env["GPUBIND_LOCAL_RANK"] = "from the launcher";  // set before gpubind: must come back
  b.fail_env = "GPUBIND_CPUS";                       // the third variable set
  std::vector<std::string> w;
  auto s = apply_binding(f.plan, f.plan.ranks[0], f.machine, b, BestEffort::no, MemRefused::warn, w);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().what, "setenv GPUBIND_CPUS");
  EXPECT_EQ(b.env.size(), 1u);
  EXPECT_EQ(b.env["GPUBIND_LOCAL_RANK"], "from the launcher");
  EXPECT_TRUE(has(b.calls, "unset GPUBIND_GPU"));
  EXPECT_TRUE(has(b.calls, "mempolicy default"));
  EXPECT_EQ(b.calls.back(), "affinity " + f.machine.allowed_cpus.to_list());
}

TEST(ApplyBinding, PolicyNoneTouchesOnlyTheEnvironment) {
  plan::Request r;
  r.policy = plan::Policy::none;
  PlannedMachine f = planned_dgx(r);
  testing::RecordingBinder b;
  std::vector<std::string> w;
  ASSERT_TRUE(apply_binding(f.plan, f.plan.ranks[0], f.machine, b, BestEffort::no, MemRefused::warn, w).ok());
  for (const std::string& c : b.calls) EXPECT_EQ(c.rfind("env ", 0), 0u) << c;
}

TEST(MachineState, OnlineCpusAndNodesAreReadUnderTheRoot) {
  testing::FakeTree t;
  t.file("sys/devices/system/cpu/online", "0-3,8\n");
  auto root = sys::open_fsroot(t.root());
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(sys::online_cpus(**root)->to_list(), "0-3,8");
  EXPECT_EQ(sys::online_numa_nodes(**root)->to_list(), "0");  // no node directory: one node
  t.file("sys/devices/system/node/online", "0-1\n");
  EXPECT_EQ(sys::online_numa_nodes(**root)->to_list(), "0-1");
}

TEST(MachineState, BindingIsRefusedUnderAnyRootButThisSystem) {
  testing::FakeTree t;
  t.file("sys/devices/system/cpu/online", "0-3\n");
  auto root = sys::open_fsroot(t.root());
  ASSERT_TRUE(root.ok());
  auto m = current_machine_state(**root);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().why.find("applied to this machine (root /) only"), std::string::npos) << m.error().message();
  EXPECT_TRUE(live_machine_state().ok());
}

}  // namespace gpubind::bind

namespace gpubind::bind {

TEST(ApplyBinding, ThreadPoolSizesFollowTheRanksCoresButTheUsersOwnIsKept) {
  PlannedMachine f = planned_dgx();
  testing::RecordingBinder b;
  b.env["OPENBLAS_NUM_THREADS"] = "32";  // the user's, exported before gpubind ran
  std::vector<std::string> warnings;
  auto applied = apply_binding(f.plan, f.plan.ranks[5], f.machine, b, BestEffort::no, MemRefused::warn, warnings);
  ASSERT_TRUE(applied.ok());
  EXPECT_TRUE(has(b.calls, "env OMP_NUM_THREADS=14"));
  EXPECT_TRUE(has(b.calls, "env MKL_NUM_THREADS=14"));
  EXPECT_FALSE(std::any_of(b.calls.begin(), b.calls.end(), [](const std::string& c) { return c.starts_with("env OPENBLAS_NUM_THREADS"); }));
  EXPECT_EQ(b.env["OPENBLAS_NUM_THREADS"], "32");
  EXPECT_EQ(pools_note(*applied),
            "thread pools: OMP_NUM_THREADS=14, MKL_NUM_THREADS=14 set to its 14 core(s); OPENBLAS_NUM_THREADS=32 kept (set before "
            "gpubind, over its 14 core(s): its pools will wait for CPUs)");
  // A smaller size of the user's is kept without a word on CPUs; nothing set is no note.
  testing::RecordingBinder c;
  for (const char* n : plan::kPoolSizeEnv) c.env[n] = "1";
  applied = apply_binding(f.plan, f.plan.ranks[5], f.machine, c, BestEffort::no, MemRefused::warn, warnings);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(pools_note(*applied), "thread pools: OMP_NUM_THREADS=1, MKL_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1 kept (set before gpubind)");
  EXPECT_EQ(pools_note(Applied{}), "");
}

TEST(ApplyBinding, NcclProxyCpusetIsSetOnRequestAndTheUsersKept) {
  PlannedMachine f = planned_dgx();
  plan::RankBinding rb = f.plan.ranks[5];
  rb.env.push_back({plan::kNcclProxyCpusetEnv, "83,195"});
  testing::RecordingBinder b;
  std::vector<std::string> warnings;
  auto applied = apply_binding(f.plan, rb, f.machine, b, BestEffort::no, MemRefused::warn, warnings);
  ASSERT_TRUE(applied.ok());
  EXPECT_TRUE(has(b.calls, "env NCCL_PROXY_CPUSET=83,195"));
  EXPECT_NE(pools_note(*applied).find("NCCL_PROXY_CPUSET=83,195 set to its last core"), std::string::npos) << pools_note(*applied);
  testing::RecordingBinder c;
  c.env["NCCL_PROXY_CPUSET"] = "5";  // the user's
  applied = apply_binding(f.plan, rb, f.machine, c, BestEffort::no, MemRefused::warn, warnings);
  ASSERT_TRUE(applied.ok());
  EXPECT_FALSE(has(c.calls, "env NCCL_PROXY_CPUSET=83,195"));
  EXPECT_EQ(c.env["NCCL_PROXY_CPUSET"], "5");
  EXPECT_NE(pools_note(*applied).find("NCCL_PROXY_CPUSET=5 kept (set before gpubind)"), std::string::npos) << pools_note(*applied);
}

}  // namespace gpubind::bind
