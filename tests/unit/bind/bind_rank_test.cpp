// bind::bind_rank, the sequence `gpubind exec` and the SPANK plugin share, on the DGX H100-like
// example (8 GPUs, 2 nodes; closest gives local rank r 14 cores of its GPU's node) with a
// RecordingBinder. Memory nodes are given (allowed_mems) so nothing is read from this machine
// but which GPU device files it can open.
#include "bind/bind_rank.hpp"

#include <gtest/gtest.h>

#include "../../support/recording_binder.hpp"
#include "discover/source.hpp"

namespace gpubind::bind {
namespace {

topo::Topology dgx_h100() {
  auto t = discover::load_topology("example:dgx-h100");
  EXPECT_TRUE(t.ok());
  return *t;
}

CpuSet cpus(const char* list) { return *CpuSet::parse_list(list); }

// Local rank `rank` of 8 under srun (SLURM_LOCALID), which pinned it to `launcher` CPUs.
RankRequest under_srun(const topo::Topology& t, unsigned rank, const char* launcher) {
  RankRequest r;
  r.options.ranks = 8;
  r.options.allowed_mems = "0-1";
  r.local = {rank, 8u, "SLURM_LOCALID"};
  r.from = AllowedFrom::cgroup;
  r.machine = {t.cpus, cpus(launcher), CpuSet::range(0, 1)};
  r.launcher_pinned = true;
  r.policy_open = true;
  r.hint = "give --local-size or -n";
  return r;
}

TEST(BindRank, UnderSrunPlansOverTheNodesCpusAndReplacesTheLaunchersCore) {
  topo::Topology t = dgx_h100();
  testing::RecordingBinder b;
  auto bound = bind_rank(t, under_srun(t, 1, "1"), b);  // srun --cpu-bind=cores: one core
  ASSERT_TRUE(bound.ok()) << bound.error().message();
  EXPECT_EQ(bound->plan.ranks.size(), 8u);
  EXPECT_EQ(bound->binding.cpus, cpus("14-27,126-139"));
  EXPECT_FALSE(bound->split_sockets);
  EXPECT_NE(bound->launcher_note.find("14-27,126-139"), std::string::npos) << bound->launcher_note;
  ASSERT_TRUE(bound->applied.ok()) << bound->applied.error().message();
  // Widened past the launcher's one CPU: allowed within the node's (cgroup's) CPUs.
  EXPECT_EQ(b.calls.at(0), "affinity 14-27,126-139");
  EXPECT_EQ(b.calls.at(1), "mempolicy preferred 0");
  EXPECT_EQ(b.env.at("GPUBIND_LOCAL_RANK"), "1");
}

TEST(BindRank, ALauncherThatPinnedWholeNumaNodesGetsSocketSplit) {
  topo::Topology t = dgx_h100();
  testing::RecordingBinder b;
  auto bound = bind_rank(t, under_srun(t, 0, "0-55,112-167"), b);  // srun --cpu-bind=ldoms
  ASSERT_TRUE(bound.ok()) << bound.error().message();
  EXPECT_TRUE(bound->split_sockets);
  EXPECT_EQ(bound->request.policy, plan::Policy::socket_split);
  EXPECT_EQ(bound->binding.cpus.count(), 28u);  // a node's worth of a package's cores: 112 PUs over 4 ranks
}

TEST(BindRank, ALauncherBindingThatIsGpubindsOwnPlanIsKept) {
  // plan --format rankfile -> mpirun --rankfile -> exec (issue 33 item 8): 2 ranks on the DGX H100
  // take GPUs 0 and 4, a whole NUMA node each; the rankfile pins rank 1 to exactly that node. It is
  // not taken for --bind-to numa and re-planned socket-split.
  topo::Topology t = dgx_h100();
  testing::RecordingBinder b;
  RankRequest r = under_srun(t, 1, "56-111,168-223");
  r.options.ranks = 2;
  r.local = {1, 2u, "OMPI_COMM_WORLD_LOCAL_RANK"};
  auto bound = bind_rank(t, r, b);
  ASSERT_TRUE(bound.ok()) << bound.error().message();
  EXPECT_FALSE(bound->split_sockets);
  EXPECT_EQ(bound->request.policy, plan::Policy::closest);
  EXPECT_EQ(bound->binding.cpus, cpus("56-111,168-223"));
}

TEST(BindRank, APolicySomebodyChoseIsNotSwitchedForTheLaunchersNumaPinning) {
  topo::Topology t = dgx_h100();
  testing::RecordingBinder b;
  RankRequest r = under_srun(t, 0, "0-55,112-167");
  r.policy_open = false;  // --policy closest, or policy = in gpubind.conf
  auto bound = bind_rank(t, r, b);
  ASSERT_TRUE(bound.ok());
  EXPECT_FALSE(bound->split_sockets);
  EXPECT_EQ(bound->request.policy, plan::Policy::closest);
  EXPECT_EQ(bound->binding.cpus, cpus("0-13,112-125"));
}

TEST(BindRank, KeepLauncherBindingKeepsAPinningAsGoodAsThePlans) {
  topo::Topology t = dgx_h100();
  RankRequest r = under_srun(t, 0, "28-41,140-153");  // 14 cores of GPU 0's node, not the plan's
  testing::RecordingBinder replaced;
  auto plain = bind_rank(t, r, replaced);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->binding.cpus, cpus("0-13,112-125"));
  r.keep_launcher = true;
  testing::RecordingBinder kept;
  auto keep = bind_rank(t, r, kept);
  ASSERT_TRUE(keep.ok());
  EXPECT_EQ(keep->binding.cpus, cpus("28-41,140-153"));
  EXPECT_EQ(kept.calls.at(0), "affinity 28-41,140-153");
}

TEST(BindRank, ADryRunPlansAndAppliesNothing) {
  topo::Topology t = dgx_h100();
  RankRequest r = under_srun(t, 3, "0-223");
  r.from = AllowedFrom::topology;
  r.launcher_pinned = false;
  r.apply = false;
  testing::RecordingBinder b;
  auto bound = bind_rank(t, r, b);
  ASSERT_TRUE(bound.ok());
  EXPECT_TRUE(bound->applied.ok());
  EXPECT_TRUE(b.calls.empty());
  EXPECT_EQ(bound->binding.gpus.at(0).index, 3u);
}

TEST(BindRank, ARefusedSyscallIsTheAppliedErrorAndThePlanIsKept) {
  topo::Topology t = dgx_h100();
  testing::RecordingBinder b;
  b.fail_affinity = true;
  auto bound = bind_rank(t, under_srun(t, 2, "0-223"), b);
  ASSERT_TRUE(bound.ok());
  ASSERT_FALSE(bound->applied.ok());
  EXPECT_NE(bound->applied.error().message().find("sched_setaffinity"), std::string::npos) << bound->applied.error().message();
  EXPECT_EQ(bound->binding.cpus, cpus("28-41,140-153"));
  EXPECT_TRUE(b.env.empty());  // nothing exported for a rank left unbound
}

TEST(BindRank, ARankBeyondThePlanNamesItsVariableAndTheHint) {
  topo::Topology t = dgx_h100();
  RankRequest r = under_srun(t, 5, "0-223");
  r.options.ranks = 2;
  testing::RecordingBinder b;
  auto bound = bind_rank(t, r, b);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.error().message(), "SLURM_LOCALID=5: the plan has only 2 local ranks; give --local-size or -n");
  EXPECT_TRUE(b.calls.empty());
}

TEST(BindRank, BadOptionsAreAnErrorNamingTheOption) {
  topo::Topology t = dgx_h100();
  RankRequest r = under_srun(t, 0, "0-223");
  r.options.reserve = "0-";
  testing::RecordingBinder b;
  auto bound = bind_rank(t, r, b);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.error().what, "--reserve");
}

}  // namespace
}  // namespace gpubind::bind
