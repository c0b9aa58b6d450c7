#include "topo/launcher_env.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpubind::topo {

namespace {
LocalRank must(const std::map<std::string, std::string>& env) {
  auto r = detect_local_rank(env);
  EXPECT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r.ok() && r->has_value());
  return r.ok() && r->has_value() ? **r : LocalRank{};
}
}  // namespace

TEST(LocalRank, SlurmWithStepTasksPerNode) {
  LocalRank lr = must({{"SLURM_LOCALID", "3"}, {"SLURM_STEP_TASKS_PER_NODE", "8(x2)"}, {"SLURM_NODEID", "1"}});
  EXPECT_EQ(lr.rank, 3u);
  EXPECT_EQ(lr.size, 8u);
  EXPECT_EQ(lr.source, "SLURM_LOCALID");
}

TEST(LocalRank, SlurmUnevenNodesUseTheNodesOwnCount) {
  LocalRank lr = must({{"SLURM_LOCALID", "1"}, {"SLURM_TASKS_PER_NODE", "4(x2),2"}, {"SLURM_NODEID", "2"}});
  EXPECT_EQ(lr.size, 2u);
}

TEST(LocalRank, SlurmStepCountsWinOverJobCounts) {
  LocalRank lr = must({{"SLURM_LOCALID", "0"}, {"SLURM_TASKS_PER_NODE", "8"}, {"SLURM_STEP_TASKS_PER_NODE", "2"}});
  EXPECT_EQ(lr.size, 2u);
}

TEST(LocalRank, OpenMpi) {
  LocalRank lr = must({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(lr.rank, 1u);
  EXPECT_EQ(lr.size, 2u);
  EXPECT_EQ(lr.source, "OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST(LocalRank, MpichAndIntelMpi) {
  EXPECT_EQ(must({{"MPI_LOCALRANKID", "5"}, {"MPI_LOCALNRANKS", "8"}}).source, "MPI_LOCALRANKID");
}

TEST(LocalRank, PmiPalsMvapichFluxJsm) {
  EXPECT_EQ(must({{"PMI_LOCAL_RANK", "0"}, {"PMI_LOCAL_SIZE", "4"}}).size, 4u);
  EXPECT_EQ(must({{"PALS_LOCAL_RANKID", "2"}, {"PALS_LOCAL_SIZE", "4"}}).rank, 2u);
  EXPECT_EQ(must({{"MV2_COMM_WORLD_LOCAL_RANK", "1"}, {"MV2_COMM_WORLD_LOCAL_SIZE", "2"}}).rank, 1u);
  LocalRank flux = must({{"FLUX_TASK_LOCAL_ID", "3"}});
  EXPECT_EQ(flux.rank, 3u);
  EXPECT_FALSE(flux.size.has_value());
  EXPECT_EQ(must({{"JSM_NAMESPACE_LOCAL_RANK", "1"}, {"JSM_NAMESPACE_LOCAL_SIZE", "6"}}).size, 6u);
}

TEST(LocalRank, TorchrunStyle) {
  LocalRank lr = must({{"LOCAL_RANK", "7"}, {"LOCAL_WORLD_SIZE", "8"}});
  EXPECT_EQ(lr.rank, 7u);
  EXPECT_EQ(lr.source, "LOCAL_RANK");
}

TEST(LocalRank, FirstMatchWins) {
  // Eight srun tasks on this node, one of them the process: Slurm's task id is its place here.
  LocalRank lr = must({{"SLURM_LOCALID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "8"}, {"LOCAL_RANK", "5"}, {"LOCAL_WORLD_SIZE", "8"}});
  EXPECT_EQ(lr.source, "SLURM_LOCALID");
  LocalRank ompi = must({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"LOCAL_RANK", "0"}});
  EXPECT_EQ(ompi.rank, 1u);
}

TEST(LocalRank, ALauncherInsideAOneTaskSlurmStepWins) {
  // srun --ntasks-per-node=1 torchrun --nproc-per-node=8: every worker inherits SLURM_LOCALID 0.
  LocalRank lr = must({{"SLURM_LOCALID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}, {"LOCAL_RANK", "5"}, {"LOCAL_WORLD_SIZE", "8"}});
  EXPECT_EQ(lr.source, "LOCAL_RANK");
  EXPECT_EQ(lr.rank, 5u);
  EXPECT_EQ(*lr.size, 8u);
  // Slurm's counts unknown: the same.
  EXPECT_EQ(must({{"SLURM_LOCALID", "0"}, {"LOCAL_RANK", "5"}, {"LOCAL_WORLD_SIZE", "8"}}).source, "LOCAL_RANK");
  // A launcher of one rank inside it says nothing new: Slurm's stays.
  EXPECT_EQ(must({{"SLURM_LOCALID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "1"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}}).source,
            "SLURM_LOCALID");
  // mpirun inside an srun task (one per node): Open MPI's.
  EXPECT_EQ(must({{"SLURM_LOCALID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}})
                .rank,
            3u);
}

TEST(LocalRank, EveryVariableItReadsIsListedForCopying) {
  const auto& names = local_rank_env_names();
  for (const auto& v : launcher_env::kLocalRank) {
    EXPECT_NE(std::find(names.begin(), names.end(), v.rank), names.end()) << v.rank;
    if (v.size) {
      EXPECT_NE(std::find(names.begin(), names.end(), v.size), names.end()) << v.size;
    }
  }
  for (const char* n : launcher_env::kSlurmCounts) EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

TEST(GlobalRank, FromTheLaunchersVariable) {
  EXPECT_EQ(global_rank({{"OMPI_COMM_WORLD_RANK", "11"}}), 11);
  EXPECT_EQ(global_rank({{"RANK", "3"}, {"SLURM_PROCID", "9"}}), 3);
  EXPECT_EQ(global_rank({{"SLURM_PROCID", "x"}}), -1);
  EXPECT_EQ(global_rank({}), -1);
  EXPECT_EQ(global_rank_env_names().size(), std::size(launcher_env::kGlobalRank));
}

TEST(LocalRank, NoneSet) {
  auto r = detect_local_rank({{"HOME", "/root"}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(LocalRank, NonsenseIsAnError) {
  EXPECT_FALSE(detect_local_rank({{"LOCAL_RANK", "one"}}).ok());
  EXPECT_FALSE(detect_local_rank({{"LOCAL_RANK", "-1"}}).ok());
  EXPECT_FALSE(detect_local_rank({{"LOCAL_RANK", "4"}, {"LOCAL_WORLD_SIZE", "4"}}).ok());
  EXPECT_FALSE(detect_local_rank({{"SLURM_LOCALID", "0"}, {"SLURM_TASKS_PER_NODE", "4(x"}}).ok());
  EXPECT_FALSE(detect_local_rank({{"SLURM_LOCALID", "0"}, {"SLURM_TASKS_PER_NODE", "4"}, {"SLURM_NODEID", "3"}}).ok());
}

TEST(LocalRank, ExpandsSlurmCounts) {
  EXPECT_EQ(*expand_slurm_counts("2(x3),1"), (std::vector<unsigned>{2, 2, 2, 1}));
  EXPECT_EQ(*expand_slurm_counts("16"), std::vector<unsigned>{16});
  EXPECT_FALSE(expand_slurm_counts("2(x0)").has_value());
  EXPECT_FALSE(expand_slurm_counts("x").has_value());
}

TEST(LocalRank, SlurmCountsNamingMoreThanTheNodeLimitAreRefused) {
  // 10 parts of 100000 nodes each fit; the audit's 130 KB value (about 13000 such parts, 1.3e9
  // entries) is refused at the part that passes the limit, not expanded.
  std::string fits, huge;
  for (int i = 0; i < 10; ++i) fits += std::string(i ? "," : "") + "2(x100000)";
  for (int i = 0; i < 13000; ++i) huge += std::string(i ? "," : "") + "2(x100000)";
  ASSERT_TRUE(expand_slurm_counts(fits).has_value());
  EXPECT_EQ(expand_slurm_counts(fits)->size(), 1000000u);
  EXPECT_FALSE(expand_slurm_counts(huge).has_value());
  EXPECT_FALSE(expand_slurm_counts(fits + ",1(x48577)").has_value());
  EXPECT_TRUE(expand_slurm_counts(fits + ",1(x48576)").has_value());
}

}  // namespace gpubind::topo
