// What Slurm tells the SPANK plugin about a step (bind/slurm_step.hpp): the user's CPU binding
// told apart from task/affinity's, and each task's GPUs under per-task GPU binding. The
// variables are as Slurm 22.05, 24.11 and 26.05 set them (recorded on the test clusters, tests/slurm).
#include <gtest/gtest.h>

#include "../../support/test_machines.hpp"
#include "bind/slurm_step.hpp"

namespace gpubind::bind {

using Rows = std::vector<std::vector<unsigned>>;

TEST(SlurmStep, AnExplicitCpuBindIsTheUsers) {
  // srun --cpu-bind=map_cpu:1,0 exports these to the step.
  EnvMap step = {{"SLURM_CPU_BIND", "quiet,map_cpu:1,0"}, {"SLURM_CPU_BIND_TYPE", "map_cpu:"}, {"SLURM_CPU_BIND_LIST", "1,0"}};
  EXPECT_EQ(user_cpu_binding(step), "map_cpu:1,0");
  step = {{"SLURM_CPU_BIND", "quiet,none"}, {"SLURM_CPU_BIND_TYPE", "none"}, {"SLURM_CPU_BIND_LIST", ""}};
  EXPECT_EQ(user_cpu_binding(step), "none");
}

TEST(SlurmStep, VerbosityAloneIsNoBinding) {
  // srun --cpu-bind=verbose: a request to be told, not a binding.
  EnvMap step = {{"SLURM_CPU_BIND", "verbose"}, {"SLURM_CPU_BIND_TYPE", ""}, {"SLURM_CPU_BIND_LIST", "verbose"}};
  EXPECT_EQ(user_cpu_binding(step), std::nullopt);
  EXPECT_EQ(user_cpu_binding({{"SLURM_CPU_BIND", "quiet"}}), std::nullopt);
  EXPECT_EQ(user_cpu_binding({}), std::nullopt);
  EXPECT_EQ(user_cpu_binding({{"SLURM_CPU_BIND", "verbose,cores"}}), "cores");
}

TEST(SlurmStep, NoPerTaskGpuBindingLeavesThePlanAsIs) {
  EXPECT_EQ(slurm_task_gpus("0,1", "0,1", "", 2, 0), std::nullopt);
  EXPECT_EQ(slurm_task_gpus("", "1", "gpu:per_task:1", 2, 0), std::nullopt);
  EXPECT_EQ(slurm_task_gpus("0,1", "3", "gpu:per_task:1", 2, 0), std::nullopt);  // not a GPU of the step
  EXPECT_EQ(slurm_task_gpus("0,x", "0", "gpu:per_task:1", 2, 0), std::nullopt);
  // The largest index ends its range (an unsigned loop counter wrapped and never ended).
  auto g = slurm_task_gpus("0,4294967295", "4294967295", "gpu:map_gpu:0,4294967295", 2, 1);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->rows, (Rows{{0}, {1}}));
  // A list no Slurm writes (more than 65536 GPUs) is not expanded.
  std::string huge;
  for (int i = 0; i < 20; ++i) huge += "0-4000,";
  EXPECT_EQ(slurm_task_gpus(huge + "1", "1", "", 2, 0), std::nullopt);
}

TEST(SlurmStep, GpusPerTaskGiveTasksTheStepsGpusInTurn) {
  // srun -n2 --gpus-per-task=1 on GPUs 0 and 2: task 0 gets 0, task 1 gets 2.
  auto g = slurm_task_gpus("0,2", "2", "gpu:per_task:1", 2, 1);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->exact);
  EXPECT_EQ(g->rows, (Rows{{0}, {1}}));
  g = slurm_task_gpus("0-3", "2,3", "gpu:per_task:2", 2, 1);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->rows, (Rows{{0, 1}, {2, 3}}));
}

// Slurm 24.11 on writes SLURMD_TRES_BIND as gres/NAME:TYPE parts apart at '+' (srun
// --gpus-per-task=1 gives "gres/gpu:per_task:1" and no SLURM_GPUS_PER_TASK, as Debian's 24.11.5
// and 26.05.5 showed), with --tres-bind's map:/mask: beside --gpu-bind's map_gpu:/mask_gpu:.
TEST(SlurmStep, Slurm2411sGresSyntaxIsReadAs2205s) {
  auto g = slurm_task_gpus("0,2", "2", "gres/gpu:per_task:1", 2, 1);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->exact);
  EXPECT_EQ(g->rows, (Rows{{0}, {1}}));
  for (const char* rule : {"gres/gpu:map_gpu:1,0", "gres/gpu:map:1,0", "gres/gpu:verbose,map:1,0+gres/nic:closest",
                           "gres/nic:closest+gres/gpu:mask:0x2,0x1"}) {
    g = slurm_task_gpus("0,1", "1", rule, 2, 0);
    ASSERT_TRUE(g) << rule;
    EXPECT_TRUE(g->exact) << rule;
    EXPECT_EQ(g->rows, (Rows{{1}, {0}})) << rule;
  }
  g = slurm_task_gpus("0,1", "0", "gres/nic:closest", 2, 0);  // no GPU rule: the task's GPU, the others' assumed
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->exact);
}

TEST(SlurmStep, MapGpuNamesEveryTasksGpu) {
  auto g = slurm_task_gpus("0,1", "1", "gpu:map_gpu:1,0", 2, 0);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->exact);
  EXPECT_EQ(g->rows, (Rows{{1}, {0}}));
  // Repeats, and verbose before the rule.
  g = slurm_task_gpus("0,1", "0", "gpu:verbose,map_gpu:1*2,0*2", 4, 2);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->rows, (Rows{{1}, {1}, {0}, {0}}));
  // A listed GPU outside the step: Slurm binds that task to the step's first GPU.
  g = slurm_task_gpus("0,2", "0", "gpu:map_gpu:2,1", 2, 1);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->rows, (Rows{{1}, {0}}));
}

TEST(SlurmStep, MaskGpuNamesEveryTasksGpus) {
  auto g = slurm_task_gpus("0-3", "2,3", "gpu:mask_gpu:0x3,0xc", 2, 1);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->exact);
  EXPECT_EQ(g->rows, (Rows{{0, 1}, {2, 3}}));
}

TEST(SlurmStep, ClosestGivesThisTaskItsGpuAndAssumesTheOthers) {
  // --gpu-bind=closest says nothing of the other tasks: this task on its GPU, the task that held
  // it by default moved to this task's default GPU.
  auto g = slurm_task_gpus("0,1", "1", "gpu:closest", 2, 0);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->exact);
  EXPECT_EQ(g->rows, (Rows{{1}, {0}}));
  EXPECT_NE(g->how.find("assumed"), std::string::npos) << g->how;
  // A rule whose rows disagree with the task's own GPUs is not trusted either.
  g = slurm_task_gpus("0,1", "0", "gpu:map_gpu:1,0", 2, 0);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->exact);
  EXPECT_EQ(g->rows, (Rows{{0}, {1}}));
}

// Two packages numbered round-robin (CPU 0 on package 0, CPU 1 on package 1...), two PUs per
// core with siblings n and n+8: Slurm's core 0 is package 0's first core, its core 4 package 1's.
topo::Topology round_robin_node() {
  topo::Topology t;
  t.cpus = t.allowed_cpus = CpuSet::range(0, 15);
  for (unsigned p = 0; p < 2; ++p) {
    CpuSet pkg;
    for (unsigned c = p; c < 8; c += 2) {
      t.cores.push_back({CpuSet::of({c, c + 8})});
      pkg |= CpuSet::of({c, c + 8});
    }
    t.packages.push_back({p, pkg});
  }
  return t;
}

TEST(SlurmStep, SlurmsCoresAreNumberedSocketBySocket) {
  topo::Topology t = round_robin_node();
  auto cpus = slurm_core_cpus(t, "0-1");
  ASSERT_TRUE(cpus.ok()) << cpus.error().message();
  EXPECT_EQ(cpus->to_list(), "0,2,8,10");
  cpus = slurm_core_cpus(t, "4,7");
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(cpus->to_list(), "1,7,9,15");
}

// Sub-NUMA clusters numbered round-robin: within package 0 hwloc (and so Slurm) numbers node 0's
// cores (CPUs 0,4,8,12) before node 2's (2,6,10,14); by lowest CPU, core 1 was CPU 2, of the other
// node.
TEST(SlurmStep, SlurmsCoresFollowHwlocsOrderThroughSubNumaClusters) {
  topo::Topology t = testing::round_robin_snc2();
  auto cpus = slurm_core_cpus(t, "0-3");
  ASSERT_TRUE(cpus.ok()) << cpus.error().message();
  EXPECT_EQ(cpus->to_list(), "0,4,8,12");
  cpus = slurm_core_cpus(t, "4");
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(cpus->to_list(), "2");
}

TEST(SlurmStep, SlurmsCoresBeyondThisMachineAreRefused) {
  topo::Topology t = round_robin_node();
  auto cpus = slurm_core_cpus(t, "6-8");
  ASSERT_FALSE(cpus.ok());
  EXPECT_NE(cpus.error().message().find("core 8 is beyond this machine's 8 cores"), std::string::npos) << cpus.error().message();
  EXPECT_FALSE(slurm_core_cpus(t, "x").ok());
  EXPECT_FALSE(slurm_core_cpus(topo::Topology{}, "0").ok());
}

}  // namespace gpubind::bind
