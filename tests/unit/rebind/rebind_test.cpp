// gpubind rebind's rules (rebind/rebind.hpp), one test each, on hand-made process states of the
// dgx-h100 example; and moving them (rebind/move.hpp) with a recording TaskMover over fixture
// /proc trees.
#include "rebind/rebind.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "discover/source.hpp"
#include "probe/probe.hpp"
#include "rebind/move.hpp"
#include "topo/binding_env.hpp"
#include "../../support/fake_tree.hpp"

namespace gpubind::rebind {

namespace {

const std::vector<std::string> kGpus = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                                        "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};

topo::Topology dgx() { return *discover::load_topology("example:dgx-h100"); }

// A process of `threads` threads (pid, pid+1...), each allowed every CPU of the machine.
probe::ProcessState proc(int pid, std::map<std::string, std::string> env, unsigned threads = 2) {
  probe::ProcessState p;
  p.pid = pid;
  p.ppid = 1;
  p.comm = "python";
  p.env = std::move(env);
  p.cpus_allowed = CpuSet::range(0, 223);
  p.mems_allowed = CpuSet::range(0, 1);
  for (unsigned i = 0; i < threads; ++i) {
    probe::ThreadState t;
    t.tid = pid + int(i);
    t.comm = i == 0 ? "python" : "worker";
    t.cpus_allowed = p.cpus_allowed;
    p.threads.push_back(t);
  }
  return p;
}

probe::ProcessState rank(int pid, unsigned local, unsigned size, const std::string& context_gpu = "") {
  probe::ProcessState p = proc(pid, {{"LOCAL_RANK", std::to_string(local)}, {"LOCAL_WORLD_SIZE", std::to_string(size)}});
  if (!context_gpu.empty()) p.context_gpus = {context_gpu};
  return p;
}

Planned plan_of(const std::vector<probe::ProcessState>& states, Options o = {}, const std::map<int, CpuSet>& cgroups = {}) {
  return make_plan(dgx(), states, cgroups, o);
}

// What exec plans for `ranks` ranks on the machine: rank r on GPU r.
plan::Plan exec_plan(unsigned ranks) {
  plan::Request r;
  r.ranks = ranks;
  return *plan::make_plan(dgx(), r);
}

const RankPlan* rank_of(const Planned& p, int pid) {
  for (const RankPlan& r : p.plan.ranks)
    if (r.pid() == pid) return &r;
  return nullptr;
}

std::string refusals(const Planned& p) {
  std::string s;
  for (const Error& e : p.refusals) s += e.message() + "\n";
  return s;
}

}  // namespace

TEST(RebindThreads, AThreadAllowedExactlyTheRanksCpusIsLeft) {
  EXPECT_EQ(thread_action(CpuSet::range(0, 13), CpuSet::range(0, 13), false), ThreadAction::already);
  EXPECT_EQ(thread_action(CpuSet::range(0, 13), CpuSet::range(0, 13), true), ThreadAction::already);
}

TEST(RebindThreads, AThreadPinnedWithinTheRanksCpusIsLeftUnlessAllThreads) {
  EXPECT_EQ(thread_action(CpuSet::of({3}), CpuSet::range(0, 13), false), ThreadAction::within);
  EXPECT_EQ(thread_action(CpuSet::of({3}), CpuSet::range(0, 13), true), ThreadAction::move);
}

TEST(RebindThreads, AThreadAllowedWiderOrElsewhereMoves) {
  EXPECT_EQ(thread_action(CpuSet::range(0, 223), CpuSet::range(0, 13), false), ThreadAction::move);
  EXPECT_EQ(thread_action(CpuSet::range(56, 69), CpuSet::range(0, 13), false), ThreadAction::move);
  EXPECT_EQ(thread_action(CpuSet::range(10, 20), CpuSet::range(0, 13), false), ThreadAction::move);
}

TEST(RebindPlan, EachRankGetsWhatExecPlansForItsGpu) {
  std::vector<probe::ProcessState> states;
  for (unsigned r = 0; r < 8; ++r) states.push_back(rank(100 + 10 * int(r), r, 8, kGpus[r]));
  Planned p = plan_of(states);
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  plan::Plan expected = exec_plan(8);
  ASSERT_EQ(p.plan.ranks.size(), 8u);
  for (unsigned r = 0; r < 8; ++r) {
    const RankPlan* rp = rank_of(p, 100 + 10 * int(r));
    ASSERT_NE(rp, nullptr);
    EXPECT_EQ(rp->cpus, expected.ranks[r].cpus) << "rank " << r;
    EXPECT_EQ(rp->mem_nodes, expected.ranks[r].mem_nodes);
    EXPECT_EQ(rp->gpu_source, "its GPU context");
    for (const ThreadPlan& t : rp->processes[0].threads) EXPECT_EQ(t.action, ThreadAction::move);
  }
}

TEST(RebindPlan, ARankGoesWhereItsOwnGpuIsWhateverItsLocalRank) {
  // Local rank 0 drives GPU 5 (on socket 1), local rank 1 GPU 0: each follows its GPU.
  Planned p = plan_of({rank(100, 0, 2, kGpus[5]), rank(200, 1, 2, kGpus[0])});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  topo::Topology t = dgx();
  EXPECT_TRUE(rank_of(p, 100)->cpus.is_subset_of(topo::cpus_of_nodes(t, {1})));
  EXPECT_TRUE(rank_of(p, 200)->cpus.is_subset_of(topo::cpus_of_nodes(t, {0})));
  EXPECT_EQ(rank_of(p, 100)->mem_nodes, std::vector<unsigned>{1});
}

TEST(RebindPlan, AGpuDaemonIsSkipped) {
  probe::ProcessState daemon = proc(50, {});
  daemon.comm = "nvidia-persiste";  // the kernel keeps 15 bytes of its name
  daemon.gpus = kGpus;
  Planned p = plan_of({daemon, rank(100, 0, 1, kGpus[0])});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  ASSERT_EQ(p.plan.skipped.size(), 1u);
  EXPECT_EQ(p.plan.skipped[0].pid, 50);
  EXPECT_NE(p.plan.skipped[0].why.find("GPU daemon"), std::string::npos);
  EXPECT_EQ(p.plan.ranks.size(), 1u);
}

TEST(RebindPlan, AProcessWithNeitherRankVariableNorGpuIsSkipped) {
  Planned p = plan_of({proc(60, {}), rank(100, 0, 1, kGpus[0])});
  ASSERT_EQ(p.plan.skipped.size(), 1u);
  EXPECT_EQ(p.plan.skipped[0].why, "not a rank: no rank variable and no GPU");
}

TEST(RebindPlan, AProcessThatCouldNotBeReadIsNoPermissionNotSkippedAsNotARank) {
  // Another user's rank read without root: its status is world-readable, its environment and open
  // files are not, so nothing tells it is a rank. It was skipped as "not a rank" (exit 0).
  probe::ProcessState other = proc(70, {});
  other.denied = "/proc/70/environ: Permission denied";
  probe::ProcessState orphan = proc(80, {});  // read whole: no rank, skipped as before
  Planned p = plan_of({other, orphan, rank(100, 0, 1, kGpus[0])});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  ASSERT_EQ(p.denied.size(), 1u);
  EXPECT_EQ(p.denied[0].what, "PID 70 (python)");
  EXPECT_EQ(p.denied[0].kind, ErrorKind::permission);
  EXPECT_EQ(p.denied[0].why.rfind("no permission to read it (/proc/70/environ: Permission denied)", 0), 0u) << p.denied[0].why;
  ASSERT_EQ(p.plan.skipped.size(), 1u);
  EXPECT_EQ(p.plan.skipped[0].pid, 80);
  EXPECT_EQ(p.plan.ranks.size(), 1u);  // the rank that was read still moves
  probe::ProcessState child = proc(105, {});  // under a rank that was read: it belongs to that rank
  child.ppid = 100;
  child.denied = "/proc/105/fd: Permission denied";
  EXPECT_TRUE(plan_of({rank(100, 0, 1, kGpus[0]), child}).denied.empty());
}

TEST(RebindPlan, TheBatchScriptAndItsSrunClientAreNoTasks) {
  // `srun --overlap --jobid J gpubind rebind --match 'python.*train'`: the batch script's
  // `srun python train.py` matched and carried the batch step's SLURM_LOCALID=0: refused (exit 4).
  std::map<std::string, std::string> batch = {{"SLURM_JOB_ID", "5"}, {"SLURM_LOCALID", "0"}, {"SLURM_TASKS_PER_NODE", "2"}};
  probe::ProcessState script = proc(40, batch);
  script.comm = "bash";
  probe::ProcessState srun = proc(41, batch);
  srun.comm = "srun";
  srun.ppid = 40;
  std::vector<probe::ProcessState> states = {script, srun};
  for (unsigned local : {0u, 1u}) {
    probe::ProcessState task = proc(int(100 + 100 * local), {{"SLURM_JOB_ID", "5"}, {"SLURM_STEP_ID", "0"}, {"SLURM_LOCALID", std::to_string(local)},
                                                            {"SLURM_STEP_TASKS_PER_NODE", "2"}});
    task.context_gpus = {kGpus[local]};
    states.push_back(task);
  }
  Planned p = plan_of(states);
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  EXPECT_EQ(p.plan.ranks.size(), 2u);
  ASSERT_EQ(p.plan.skipped.size(), 2u);
  EXPECT_EQ(p.plan.skipped[0].why.rfind("not a task: a process of Slurm job 5 outside its steps", 0), 0u) << p.plan.skipped[0].why;
  EXPECT_EQ(p.plan.skipped[1].why, "an srun client: its tasks run in a step");
}

TEST(RebindPlan, AForgedJobIdDoesNotJoinAnotherUsersJob) {
  // Another user starts a process with the victim's SLURM_JOB_ID and LOCAL_RANK=1: it joined the
  // job's plan, and root pinned the victim's rank to half its CPUs to make room for it.
  probe::ProcessState victim = proc(100, {{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}, {"SLURM_LOCALID", "0"}});
  victim.context_gpus = {kGpus[0]};
  victim.uid = 1000;
  victim.slurm_job_seen = "7";
  victim.slurm_evidence = "its cgroup is job 7's";
  probe::ProcessState intruder = proc(300, {{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}, {"SLURM_LOCALID", "1"}});
  intruder.context_gpus = {kGpus[1]};
  intruder.uid = 1001;
  Planned p = plan_of({victim, intruder});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  ASSERT_EQ(p.plan.ranks.size(), 1u);
  EXPECT_EQ(p.plan.ranks[0].pid(), 100);
  EXPECT_EQ(p.plan.ranks[0].cpus, plan_of({victim}).plan.ranks[0].cpus);  // the victim's plan as if alone
  ASSERT_EQ(p.plan.skipped.size(), 1u);
  EXPECT_EQ(p.plan.skipped[0].pid, 300);
  EXPECT_NE(p.plan.skipped[0].why.find("neither its cgroup nor a slurmstepd of the job is above it"), std::string::npos) << p.plan.skipped[0].why;
  // One that runs in another job (its own) is not this one's either.
  intruder.slurm_job_seen = "9";
  intruder.slurm_evidence = "its cgroup is job 9's";
  Planned q = plan_of({victim, intruder});
  ASSERT_EQ(q.plan.skipped.size(), 1u);
  EXPECT_EQ(q.plan.skipped[0].why.rfind("claims Slurm job 7 but runs in job 9 (its cgroup is job 9's)", 0), 0u) << q.plan.skipped[0].why;
  // Where the node says nothing of either (a captured tree), two users claiming one job: left alone.
  victim.slurm_job_seen.clear();
  intruder.slurm_job_seen.clear();
  Planned r = plan_of({victim, intruder});
  EXPECT_TRUE(r.plan.ranks.empty());
  EXPECT_EQ(r.plan.skipped.size(), 2u);
}

TEST(RebindPlan, ASweepOfSingleGpuStepsIsOneJobEachStepNumberingItsOwnTasks) {
  // `srun -n1 --gpus=1 ... &` four times in one allocation: four tasks of local rank 0 in four steps.
  std::vector<probe::ProcessState> states;
  for (unsigned step = 0; step < 4; ++step) {
    probe::ProcessState task = proc(int(100 + 100 * step), {{"SLURM_JOB_ID", "5"}, {"SLURM_STEP_ID", std::to_string(step)}, {"SLURM_LOCALID", "0"}});
    task.context_gpus = {kGpus[step]};
    states.push_back(task);
  }
  Planned p = plan_of(states);
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  ASSERT_EQ(p.plan.ranks.size(), 4u);
  // Planned together: GPUs 0-3 share node 0, which is split four ways, as exec splits it for the
  // ranks of GPUs 0-3 (planned apart, each would have had the whole node).
  plan::Plan want = exec_plan(8);
  for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(rank_of(p, int(100 + 100 * i))->cpus.to_list(), want.ranks[i].cpus.to_list()) << i;
  states.push_back(states[0]);  // one step's local rank twice: still refused
  states.back().pid = 900;
  states.back().context_gpus = {kGpus[5]};
  EXPECT_FALSE(plan_of(states).refusals.empty());
}

TEST(RebindPlan, AProcessUnderARankMovesWithIt) {
  probe::ProcessState loader = proc(105, {});  // a data loader worker: no variables read
  loader.ppid = 100;
  probe::ProcessState inherited = rank(106, 0, 1);  // a helper that inherited the rank's variables
  inherited.ppid = 105;
  Planned p = plan_of({rank(100, 0, 1, kGpus[0]), loader, inherited});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  ASSERT_EQ(p.plan.ranks.size(), 1u);
  ASSERT_EQ(p.plan.ranks[0].processes.size(), 3u);
  EXPECT_EQ(p.plan.ranks[0].processes[0].pid, 100);
  EXPECT_TRUE(p.plan.skipped.empty());
}

TEST(RebindPlan, ItsGpuContextWinsOverTheDeviceFilesItHolds) {
  probe::ProcessState r = rank(100, 0, 1, kGpus[3]);
  r.gpus = kGpus;  // CUDA opens every visible GPU's device file
  Planned p = plan_of({r});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  EXPECT_EQ(p.plan.ranks[0].gpus, std::vector<std::string>{kGpus[3]});
}

TEST(RebindPlan, GpubindGpuNamesTheGpuAmongSeveralHeld) {
  probe::ProcessState r = proc(100, {{"GPUBIND_GPU", kGpus[6]}});
  r.gpus = kGpus;
  Planned p = plan_of({r});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  EXPECT_EQ(p.plan.ranks[0].gpus, std::vector<std::string>{kGpus[6]});
  EXPECT_EQ(p.plan.ranks[0].gpu_source, "GPUBIND_GPU (gpubind bound it)");
}

TEST(RebindPlan, TheOneDeviceFileItHoldsNamesTheGpu) {
  probe::ProcessState r = proc(100, {});
  r.gpus = {kGpus[4]};
  Planned p = plan_of({r});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  EXPECT_EQ(p.plan.ranks[0].gpus, std::vector<std::string>{kGpus[4]});
}

TEST(RebindPlan, SeveralGpusHeldAreToldByExecsLocalRankRule) {
  probe::ProcessState r = rank(100, 2, 4);
  r.gpus = kGpus;
  std::vector<probe::ProcessState> states = {r};
  for (unsigned i : {0u, 1u, 3u}) {
    states.push_back(rank(200 + int(i), i, 4));
    states.back().gpus = kGpus;
  }
  Planned p = plan_of(states);
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  EXPECT_EQ(rank_of(p, 100)->gpus, std::vector<std::string>{kGpus[2]});
  EXPECT_NE(rank_of(p, 100)->gpu_source.find("as exec binds"), std::string::npos);
}

TEST(RebindPlan, ALocalRankGpuItDoesNotHoldIsRefused) {
  probe::ProcessState r = rank(100, 0, 1);
  r.gpus = {kGpus[5], kGpus[6]};
  Planned p = plan_of({r});
  ASSERT_EQ(p.refusals.size(), 1u);
  EXPECT_NE(p.refusals[0].why.find("cannot be told"), std::string::npos);
  EXPECT_TRUE(p.plan.ranks.empty());
}

TEST(RebindPlan, SeveralGpusHeldWithoutLocalRankAreRefused) {
  probe::ProcessState r = proc(100, {{"RANK", "3"}});
  r.gpus = {kGpus[0], kGpus[1]};
  Planned p = plan_of({r});
  ASSERT_EQ(p.refusals.size(), 1u) << refusals(p);
  EXPECT_EQ(p.refusals[0].what, "PID 100 (python)");
  EXPECT_NE(p.refusals[0].why.find("holds 2 GPUs open"), std::string::npos);
}

TEST(RebindPlan, TwoRanksClaimingOneLocalRankAreRefused) {
  Planned p = plan_of({rank(100, 0, 2, kGpus[0]), rank(200, 0, 2, kGpus[1])});
  ASSERT_FALSE(p.refusals.empty());
  EXPECT_NE(refusals(p).find("claims local rank 0"), std::string::npos);
  EXPECT_TRUE(p.plan.ranks.empty());
}

TEST(RebindPlan, FewerRanksSelectedThanItsLauncherStartedIsRefused) {
  Planned p = plan_of({rank(100, 0, 4, kGpus[0]), rank(200, 1, 4, kGpus[1])});
  ASSERT_EQ(p.refusals.size(), 1u) << refusals(p);
  EXPECT_NE(p.refusals[0].why.find("say 4 local ranks"), std::string::npos);
}

TEST(RebindPlan, ALocalRankAboveThoseSelectedMeansTheOthersRunHereToo) {
  // No size variable, but local rank 3 says ranks 0-2 run here too: one rank alone is refused.
  probe::ProcessState r = proc(100, {{"LOCAL_RANK", "3"}});
  r.context_gpus = {kGpus[3]};
  Planned p = plan_of({r});
  ASSERT_EQ(p.refusals.size(), 1u) << refusals(p);
  EXPECT_NE(p.refusals[0].why.find("say 4 local ranks"), std::string::npos);
  r.env["LOCAL_RANK"] = "0";
  EXPECT_TRUE(plan_of({r}).refusals.empty());
}

TEST(RebindPlan, RanksWhoseGpusOverlapAreRefused) {
  probe::ProcessState a = proc(100, {}), b = proc(200, {});
  a.context_gpus = {kGpus[0], kGpus[1]};
  b.context_gpus = {kGpus[1], kGpus[2]};
  Planned p = plan_of({a, b});
  ASSERT_EQ(p.refusals.size(), 1u) << refusals(p);
  EXPECT_NE(p.refusals[0].why.find("overlap"), std::string::npos);
}

TEST(RebindPlan, TwoRanksSharingOneGpuSplitItsCpus) {
  Planned p = plan_of({rank(100, 0, 2, kGpus[0]), rank(200, 1, 2, kGpus[0])});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  const RankPlan *a = rank_of(p, 100), *b = rank_of(p, 200);
  EXPECT_FALSE(a->cpus.intersects(b->cpus));
  EXPECT_TRUE((a->cpus | b->cpus).is_subset_of(topo::cpus_of_nodes(dgx(), {0})));
}

TEST(RebindPlan, ARanksCpusStayWithinItsCgroup) {
  // Both ranks' cgroups allow socket 0's first 28 cores only: planned over those.
  CpuSet cg = CpuSet::range(0, 27) | CpuSet::range(112, 139);
  Planned p = plan_of({rank(100, 0, 2, kGpus[0]), rank(200, 1, 2, kGpus[1])}, {}, {{100, cg}, {200, cg}});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  for (const RankPlan& r : p.plan.ranks) {
    EXPECT_TRUE(r.cpus.is_subset_of(cg)) << r.cpus.to_list();
    EXPECT_EQ(r.cgroup, cg);
  }
}

TEST(RebindPlan, PlannedCpusWhollyOutsideItsCgroupAreRefused) {
  // Two ranks of one job in different cgroups (per-task cgroups): rank 0's planned CPUs lie on
  // GPU 0's node, its cgroup on the other socket.
  Planned p = plan_of({rank(100, 0, 2, kGpus[0]), rank(200, 1, 2, kGpus[4])}, {},
                      {{100, CpuSet::range(56, 60)}, {200, CpuSet::range(0, 4) | CpuSet::range(61, 111)}});
  EXPECT_NE(refusals(p).find("are all outside its cgroup's cpuset"), std::string::npos) << refusals(p);
  EXPECT_TRUE(p.plan.ranks.empty());
}

TEST(RebindPlan, EachJobIsPlannedOverItsOwnCgroup) {
  auto job = [](int pid, unsigned local, const std::string& id, const std::string& gpu) {
    probe::ProcessState s = rank(pid, local, 2, gpu);
    s.env["SLURM_JOB_ID"] = id;
    s.env["SLURM_STEP_ID"] = "0";  // a task of the job's first step
    return s;
  };
  CpuSet first = CpuSet::range(0, 27), second = CpuSet::range(28, 55);
  Planned p = plan_of({job(100, 0, "7", kGpus[0]), job(101, 1, "7", kGpus[1]), job(200, 0, "8", kGpus[2]), job(201, 1, "8", kGpus[3])},
                      {}, {{100, first}, {101, first}, {200, second}, {201, second}});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  EXPECT_TRUE(rank_of(p, 100)->cpus.is_subset_of(first));
  EXPECT_TRUE(rank_of(p, 101)->cpus.is_subset_of(first));
  EXPECT_TRUE(rank_of(p, 200)->cpus.is_subset_of(second));
  EXPECT_TRUE(rank_of(p, 201)->cpus.is_subset_of(second));
  EXPECT_EQ(rank_of(p, 200)->job, "8");
}

TEST(RebindPlan, PagesGoToThePlannedNodeOnlyWhereCpusetMemsAllowsIt) {
  probe::ProcessState r = rank(100, 0, 1, kGpus[4]);
  r.mems_allowed = CpuSet::of({0});
  Planned p = plan_of({r});
  ASSERT_TRUE(p.refusals.empty()) << refusals(p);
  EXPECT_TRUE(p.plan.ranks[0].mem_nodes.empty());
  ASSERT_EQ(p.plan.ranks[0].notes.size(), 1u);
  EXPECT_NE(p.plan.ranks[0].notes[0].find("pages stay"), std::string::npos);
}

TEST(RebindPlan, NoMemoryPolicyOrNoMemoryLeavesPages) {
  Options none;
  none.base.mem = plan::MemPolicy::none;
  EXPECT_TRUE(plan_of({rank(100, 0, 1, kGpus[0])}, none).plan.ranks[0].mem_nodes.empty());
  Options threads_only;
  threads_only.memory = false;
  EXPECT_TRUE(plan_of({rank(100, 0, 1, kGpus[0])}, threads_only).plan.ranks[0].mem_nodes.empty());
  EXPECT_EQ(plan_of({rank(100, 0, 1, kGpus[0])}).plan.ranks[0].mem_nodes, std::vector<unsigned>{0});
}

TEST(RebindPlan, ThreadsPinnedWithinTheirRanksCpusAreLeftUnlessAllThreads) {
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  plan::Plan expected = exec_plan(1);
  r.threads[1].cpus_allowed = CpuSet::of({*expected.ranks[0].cpus.first()});  // NCCL's proxy thread, pinned
  Planned p = plan_of({r});
  EXPECT_EQ(p.plan.ranks[0].processes[0].threads[1].action, ThreadAction::within);
  Options all;
  all.all_threads = true;
  EXPECT_EQ(plan_of({r}, all).plan.ranks[0].processes[0].threads[1].action, ThreadAction::move);
}

// --- moving: a recording TaskMover over a fixture /proc tree ---

namespace {

class RecordingMover : public sys::TaskMover {
 public:
  std::vector<std::string> calls;
  std::map<int, CpuSet> affinities;                       // every thread's, as the kernel holds them
  std::map<int, ErrorKind> fail_set;                      // set_affinity of this thread fails so
  std::function<void(int tid)> on_set;                    // after a successful set
  std::function<void(int pid)> on_migrate;                // after a successful migrate_pages
  std::optional<ErrorKind> fail_migrate;
  uint64_t clock = 0;
  std::map<int, uint64_t> start_times;  // each PID's process now (absent: the one probed)
  std::set<int> ended;                  // held processes that ended since
  std::set<int> holding;

  Status hold(int pid, uint64_t start_time) override {
    calls.push_back("hold " + std::to_string(pid));
    if (auto it = start_times.find(pid); it != start_times.end() && it->second != start_time)
      return Error{"PID " + std::to_string(pid), "no longer the process probed", ErrorKind::not_found};
    holding.insert(pid);
    return Ok{};
  }
  bool held_alive(int pid) override { return !ended.count(pid); }
  void release(int pid) override { holding.erase(pid); }

  Result<CpuSet> affinity(int tid) override {
    auto it = affinities.find(tid);
    if (it == affinities.end()) return Error{"sched_getaffinity", "No such process", ErrorKind::not_found};
    return it->second;
  }
  Status set_affinity(int tid, const CpuSet& cpus) override {
    calls.push_back("affinity " + std::to_string(tid) + " " + cpus.to_list());
    if (auto it = fail_set.find(tid); it != fail_set.end())
      return Error{"sched_setaffinity " + std::to_string(tid), it->second == ErrorKind::permission ? "Operation not permitted" : "Invalid argument", it->second};
    if (!affinities.count(tid)) return Error{"sched_setaffinity", "No such process", ErrorKind::not_found};
    affinities[tid] = cpus;
    if (on_set) on_set(tid);
    return Ok{};
  }
  Result<uint64_t> migrate_pages(int pid, const CpuSet& from, const CpuSet& to) override {
    calls.push_back("migrate " + std::to_string(pid) + " " + from.to_list() + " -> " + to.to_list());
    clock += 25'000'000;
    if (fail_migrate) return Error{"migrate_pages", "refused", *fail_migrate};
    if (on_migrate) on_migrate(pid);
    return uint64_t{3};
  }
  uint64_t now_ns() override { return clock; }
};

// A fixture /proc with each process's threads and numa_maps, and the mover's view of them.
struct Fixture {
  testing::FakeTree tree;
  RecordingMover mover;
  std::unique_ptr<sys::FsRoot> root;

  void process(const probe::ProcessState& s, const std::string& numa_maps) {
    for (const probe::ThreadState& t : s.threads) thread(s.pid, t.tid, t.cpus_allowed);
    tree.file("proc/" + std::to_string(s.pid) + "/numa_maps", numa_maps);
  }
  void thread(int pid, int tid, const CpuSet& cpus) {
    tree.file("proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm", "worker\n");
    mover.affinities[tid] = cpus;
  }
  Outcome run(const MovePlan& plan, bool dry_run = false) {
    auto opened = sys::open_fsroot(tree.root());
    root = std::move(opened.value());
    return move(plan, *root, &mover, dry_run);
  }
};

const std::string kOnNode1 = "7f0000000000 default anon=100 dirty=100 N1=100 kernelpagesize_kB=4\n"
                             "7f1000000000 default anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n"
                             "55d000000000 default file=/usr/bin/python3 mapped=50 N1=50 kernelpagesize_kB=4\n";
const std::string kOnNode0 = "7f0000000000 default anon=100 dirty=100 N0=100 kernelpagesize_kB=4\n"
                             "7f1000000000 default anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n";

}  // namespace

TEST(RebindMove, EveryThreadMovesIncludingOneStartedMeanwhile) {
  Fixture f;
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  f.process(r, kOnNode0);
  Planned p = plan_of({r});
  // While the first thread is moved, an unmoved one starts thread 150 with the old CPUs.
  f.mover.on_set = [&](int tid) {
    if (tid == 100) f.thread(100, 150, CpuSet::range(0, 223));
  };
  Outcome o = f.run(p.plan);
  const RankPlan& rp = p.plan.ranks[0];
  for (int tid : {100, 101, 150}) EXPECT_EQ(f.mover.affinities[tid], rp.cpus) << tid;
  EXPECT_EQ(o.threads_moved(), 3u);
  EXPECT_EQ(o.ranks[0].processes[0].threads.size(), 3u);
}

TEST(RebindMove, AThreadThatEndsMidwayIsSkippedWithANote) {
  Fixture f;
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  f.process(r, kOnNode0);
  f.mover.affinities.erase(101);  // listed, but gone when asked
  Outcome o = f.run(plan_of({r}).plan);
  const ProcessMove& pm = o.ranks[0].processes[0];
  EXPECT_FALSE(pm.error);
  ASSERT_EQ(pm.threads.size(), 2u);
  EXPECT_TRUE(pm.threads[0].moved);
  EXPECT_EQ(pm.threads[1].note, "ended before it was moved");
  EXPECT_EQ(o.failed + o.refused, 0u);
}

TEST(RebindMove, APidTheRankLeftToAnotherProcessIsSkippedNeverMoved) {
  // Rank 0 ended while rebind was busy with an earlier rank, and its PID went to the next process:
  // root moved that one and reported it as the rank. Each process is held (a pidfd) and checked
  // against the start time probed before anything of it changes.
  Fixture f;
  probe::ProcessState a = rank(100, 0, 2, kGpus[0]), b = rank(200, 1, 2, kGpus[1]);
  a.start_time = 4242;
  b.start_time = 4343;
  f.process(a, kOnNode0);
  f.process(b, kOnNode0);
  f.mover.start_times[100] = 9999;  // PID 100 is another process now
  Outcome o = f.run(plan_of({a, b}).plan);
  ASSERT_EQ(o.ranks.size(), 2u);
  EXPECT_NE(o.ranks[0].processes[0].gone.find("no longer the process probed"), std::string::npos) << o.ranks[0].processes[0].gone;
  EXPECT_TRUE(o.ranks[0].processes[0].threads.empty());
  for (const std::string& c : f.mover.calls) EXPECT_EQ(c.find("affinity 10"), std::string::npos) << c;  // nothing of PID 100's
  EXPECT_EQ(o.ranks[1].processes[0].threads.size(), 2u);
  EXPECT_TRUE(f.mover.holding.empty());  // every hold released
  EXPECT_EQ(o.failed + o.refused, 0u);
}

TEST(RebindMove, ARankThatEndsWhileItsThreadsMoveIsStoppedThere) {
  Fixture f;
  probe::ProcessState a = rank(100, 0, 1, kGpus[0]);
  a.start_time = 4242;
  f.process(a, kOnNode1);
  f.mover.on_set = [&](int) { f.mover.ended.insert(100); };  // it ends after its first thread moved
  Outcome o = f.run(plan_of({a}).plan);
  const ProcessMove& m = o.ranks[0].processes[0];
  EXPECT_EQ(m.threads.size(), 1u);  // the second thread's id may be another process's by now
  EXPECT_NE(m.gone.find("ended while its threads were moved"), std::string::npos) << m.gone;
  for (const std::string& c : f.mover.calls) EXPECT_EQ(c.find("migrate"), std::string::npos) << c;
}

TEST(RebindMove, AProcessThatEndedIsSkippedNotAnError) {
  Fixture f;
  probe::ProcessState a = rank(100, 0, 2, kGpus[0]), b = rank(200, 1, 2, kGpus[1]);
  f.process(b, kOnNode0);  // 100 has no /proc entry: it ended after the probe
  Outcome o = f.run(plan_of({a, b}).plan);
  ASSERT_EQ(o.ranks.size(), 2u);
  EXPECT_EQ(o.ranks[0].processes[0].gone, "ended while its threads were moved");
  EXPECT_FALSE(o.ranks[0].processes[0].error);
  EXPECT_EQ(o.ranks[1].processes[0].threads.size(), 2u);
  EXPECT_EQ(o.failed + o.refused, 0u);
}

TEST(RebindMove, NoPermissionStopsThatProcessAndTheOthersMove) {
  Fixture f;
  probe::ProcessState a = rank(100, 0, 2, kGpus[0]), b = rank(200, 1, 2, kGpus[1]);
  f.process(a, kOnNode0);
  f.process(b, kOnNode0);
  f.mover.fail_set[100] = ErrorKind::permission;
  Outcome o = f.run(plan_of({a, b}).plan);
  EXPECT_EQ(o.refused, 1u);
  EXPECT_EQ(o.failed, 0u);
  ASSERT_TRUE(o.ranks[0].processes[0].error);
  EXPECT_EQ(o.ranks[0].processes[0].error->kind, ErrorKind::permission);
  ASSERT_EQ(o.ranks[0].processes[0].threads.size(), 1u);  // the first thread refused; nothing of it changed
  EXPECT_FALSE(o.ranks[0].processes[0].threads[0].moved);
  ASSERT_EQ(o.errors().size(), 1u);
  EXPECT_NE(o.errors()[0].why.find("nothing of it changed"), std::string::npos);
  EXPECT_EQ(o.ranks[1].processes[0].threads.size(), 2u);
  EXPECT_TRUE(o.ranks[1].processes[0].threads[1].moved);
}

TEST(RebindMove, AFailurePartWaySaysExactlyWhatMoved) {
  Fixture f;
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  r.threads.push_back(r.threads[1]);
  r.threads[2].tid = 102;
  f.process(r, kOnNode1);
  f.mover.fail_set[101] = ErrorKind::failed;
  Outcome o = f.run(plan_of({r}).plan);
  const ProcessMove& pm = o.ranks[0].processes[0];
  EXPECT_EQ(o.failed, 1u);
  ASSERT_TRUE(pm.error);
  ASSERT_EQ(pm.threads.size(), 2u);  // thread 100 moved; 101 failed; 102 not reached
  EXPECT_TRUE(pm.threads[0].moved);
  EXPECT_FALSE(pm.threads[1].moved);
  EXPECT_EQ(pm.threads[1].note, "not moved: sched_setaffinity 101: Invalid argument");
  ASSERT_EQ(o.errors().size(), 1u);
  EXPECT_NE(o.errors()[0].why.find("1 of its threads had moved"), std::string::npos);
  EXPECT_EQ(f.mover.affinities[102], CpuSet::range(0, 223));
  EXPECT_FALSE(pm.memory.done);  // pages are not moved after a failure
}

TEST(RebindMove, PagesOnOtherNodesMigrateAndAreCounted) {
  Fixture f;
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  f.process(r, kOnNode1);
  f.mover.on_migrate = [&](int pid) { f.tree.file("proc/" + std::to_string(pid) + "/numa_maps", kOnNode0); };
  Outcome o = f.run(plan_of({r}).plan);
  const MemoryMove& m = o.ranks[0].processes[0].memory;
  ASSERT_TRUE(m.done) << m.note;
  EXPECT_EQ(m.from, CpuSet::of({1}));
  EXPECT_EQ(m.to, CpuSet::of({0}));
  EXPECT_EQ(m.ns, 25'000'000u);
  EXPECT_EQ(m.not_moved, 3u);
  EXPECT_EQ(o.pages_moved(), 100u);  // anonymous pages only: the binary's page cache is not the rank's
  EXPECT_EQ(f.mover.calls.back(), "migrate 100 1 -> 0");
}

TEST(RebindMove, AMemoryPolicyBindingAnotherNodeIsSaidPagesMovedNowComeBack) {
  // numactl --membind=1: the report said "node 1 -> 0", but every page allocated afterwards went
  // to node 1 again; no process can change another's policy.
  Fixture f;
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  std::string bound = "7f0000000000 bind:1 anon=100 dirty=100 N1=100 kernelpagesize_kB=4\n"
                      "7f0000100000 bind:1 anon=5 dirty=5 N1=5 kernelpagesize_kB=4\n"
                      "7f0000200000 default file=/usr/bin/python3 mapped=10 N1=10 kernelpagesize_kB=4\n";
  f.process(r, bound);
  f.mover.on_migrate = [&](int pid) { f.tree.file("proc/" + std::to_string(pid) + "/numa_maps", kOnNode0); };
  Outcome o = f.run(plan_of({r}).plan);
  const MemoryMove& m = o.ranks[0].processes[0].memory;
  ASSERT_TRUE(m.done) << m.note;
  EXPECT_EQ(m.policy, "bind:1");
  std::vector<std::string> w = o.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rfind("PID 100 (python): its memory policy (numa_maps: bind:1) sends every page it allocates to node 1, not the planned 0", 0), 0u) << w[0];
  EXPECT_NE(w[0].find("restart it under the planned binding"), std::string::npos);
  // A policy within the planned nodes (or the default) says nothing.
  Fixture g;
  g.process(r, "7f0000000000 prefer:0 anon=100 dirty=100 N1=100 kernelpagesize_kB=4\n");
  g.mover.on_migrate = [&](int pid) { g.tree.file("proc/" + std::to_string(pid) + "/numa_maps", kOnNode0); };
  EXPECT_TRUE(g.run(plan_of({r}).plan).warnings().empty());
  EXPECT_EQ(probe::numa_maps_policy(kOnNode1), "");
  EXPECT_EQ(probe::policy_nodes("interleave:0-1"), CpuSet::range(0, 1));
  EXPECT_EQ(probe::policy_nodes("bind=static:1"), CpuSet::of({1}));
}

TEST(RebindMove, PagesARefusingSeccompProfileKeepsWhereTheyAreAreAWarning) {
  Fixture f;
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  f.process(r, kOnNode1);
  f.mover.fail_migrate = ErrorKind::permission;  // as Debian podman's default seccomp profile does
  Outcome o = f.run(plan_of({r}).plan);
  const ProcessMove& pm = o.ranks[0].processes[0];
  EXPECT_FALSE(pm.error);
  EXPECT_EQ(o.failed + o.refused, 0u);
  EXPECT_TRUE(pm.memory.refused);
  EXPECT_EQ(o.threads_moved(), 2u);
  ASSERT_EQ(o.warnings().size(), 1u);
  EXPECT_NE(o.warnings()[0].find("its threads moved, its pages on node 1 did not"), std::string::npos) << o.warnings()[0];
}

TEST(RebindMove, PagesAlreadyOnTheNodeAreNotMigrated) {
  Fixture f;
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  f.process(r, kOnNode0);
  Outcome o = f.run(plan_of({r}).plan);
  EXPECT_EQ(o.ranks[0].processes[0].memory.note, "already on node 0");
  for (const std::string& c : f.mover.calls) EXPECT_EQ(c.find("migrate"), std::string::npos) << c;
}

TEST(RebindMove, ADryRunChangesNothing) {
  Fixture f;
  probe::ProcessState r = rank(100, 0, 1, kGpus[0]);
  r.pages_per_node = std::map<unsigned, uint64_t>{{1, 100}, {0, 10}};
  f.process(r, kOnNode1);
  Outcome o = f.run(plan_of({r}).plan, true);
  EXPECT_TRUE(o.dry_run);
  EXPECT_TRUE(f.mover.calls.empty());
  EXPECT_EQ(o.ranks[0].processes[0].memory.from, CpuSet::of({1}));
  EXPECT_EQ(o.threads_moved(), 0u);
}

// --- watch --enforce: the Enforcer's decisions, and apply_repins through the recording mover ---

namespace {

// Two ranks bound where the plan puts them (every thread on its rank's CPUs).
std::vector<probe::ProcessState> bound_job() {
  std::vector<probe::ProcessState> states = {rank(100, 0, 2, kGpus[0]), rank(200, 1, 2, kGpus[4])};
  Planned p = plan_of(states);
  for (probe::ProcessState& s : states)
    for (probe::ThreadState& t : s.threads) t.cpus_allowed = rank_of(p, s.pid)->cpus;
  return states;
}

}  // namespace

TEST(Enforce, AThreadAllowedOffItsRanksCpusIsPutBack) {
  Enforcer e({});
  std::vector<probe::ProcessState> states = bound_job();
  EXPECT_TRUE(e.decide(dgx(), states, {}, 0).empty());
  CpuSet target = states[0].threads[0].cpus_allowed;
  states[0].threads[1].cpus_allowed = CpuSet::range(0, 223);  // a runtime reset it
  std::vector<Repin> r = e.decide(dgx(), states, {}, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].tid, 101);
  EXPECT_EQ(r[0].rank_pid, 100);
  EXPECT_EQ(r[0].from, CpuSet::range(0, 223));
  EXPECT_EQ(r[0].to, target);
  EXPECT_EQ(r[0].target, "plan");
  EXPECT_EQ(r[0].outcome, RepinOutcome::planned);
}

TEST(Enforce, AThreadPinnedWithinItsRanksCpusIsNoDrift) {
  Enforcer e({});
  std::vector<probe::ProcessState> states = bound_job();
  states[0].threads[1].cpus_allowed = CpuSet::of({*states[0].threads[0].cpus_allowed.first()});  // NCCL's proxy thread
  EXPECT_TRUE(e.decide(dgx(), states, {}, 0).empty());
}

TEST(Enforce, TheTargetIsWhatGpubindAppliedWhereItBoundTheRank) {
  Enforcer e({});
  std::vector<probe::ProcessState> states = bound_job();
  states[0].env["GPUBIND_CPUS"] = "0-3";
  for (probe::ThreadState& t : states[0].threads) t.cpus_allowed = CpuSet::range(0, 3);
  EXPECT_TRUE(e.decide(dgx(), states, {}, 0).empty());  // the plan's wider set would not matter
  states[0].threads[0].cpus_allowed = CpuSet::range(0, 7);
  std::vector<Repin> r = e.decide(dgx(), states, {}, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].to, CpuSet::range(0, 3));
  EXPECT_EQ(r[0].target, "GPUBIND_CPUS");
}

TEST(Enforce, EachRankIsActedOnAtMostOncePerGap) {
  EnforceOptions o;
  o.gap_seconds = 10;
  Enforcer e(o);
  std::vector<probe::ProcessState> states = bound_job();
  states[0].threads[1].cpus_allowed = CpuSet::range(0, 223);
  EXPECT_EQ(e.decide(dgx(), states, {}, 0).size(), 1u);
  EXPECT_TRUE(e.decide(dgx(), states, {}, 5).empty());  // rank 0 again within the gap
  states[1].threads[0].cpus_allowed = CpuSet::range(0, 223);
  std::vector<Repin> r = e.decide(dgx(), states, {}, 5);  // rank 1 has a gap of its own
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].rank_pid, 200);
  EXPECT_EQ(e.decide(dgx(), states, {}, 10.5).size(), 1u);  // rank 0's gap has passed; rank 1's not
}

TEST(Enforce, AJobWhoseRanksCannotBeToldIsLeftAloneSaidOnce) {
  Enforcer e({});
  std::vector<probe::ProcessState> states = {rank(100, 0, 2, kGpus[0]), rank(200, 0, 2, kGpus[1])};
  EXPECT_TRUE(e.decide(dgx(), states, {}, 0).empty());
  std::vector<std::string> notes = e.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("left alone"), std::string::npos);
  states.push_back(proc(300, {}));  // the processes change: planned again, refused again, not said again
  EXPECT_TRUE(e.decide(dgx(), states, {}, 1).empty());
  EXPECT_TRUE(e.take_notes().empty());
}

TEST(Enforce, ARankThatAppearsIsPlannedWithTheOthers) {
  Enforcer e({});
  std::vector<probe::ProcessState> one = {rank(100, 0, 1, kGpus[0])};
  EXPECT_FALSE(e.decide(dgx(), one, {}, 0).empty());  // never bound: its threads are put on its plan
  EXPECT_FALSE(e.needs_plan(one));
  std::vector<probe::ProcessState> states = bound_job();
  EXPECT_TRUE(e.needs_plan(states));
  EXPECT_TRUE(e.decide(dgx(), states, {}, 20).empty());  // planned for both: both where they belong
}

TEST(Enforce, ReportOnlyMovesNothingAndCountsWhatItReported) {
  EnforceOptions o;
  o.act = false;
  Enforcer e(o);
  std::vector<probe::ProcessState> states = bound_job();
  states[0].threads[1].cpus_allowed = CpuSet::range(0, 223);
  std::vector<Repin> r = e.decide(dgx(), states, {}, 0);
  ASSERT_EQ(r.size(), 1u);
  RecordingMover mover;
  mover.affinities[101] = CpuSet::range(0, 223);
  apply_repins(r, mover, false);
  EXPECT_EQ(r[0].outcome, RepinOutcome::reported);
  EXPECT_TRUE(mover.calls.empty());
  e.record(r);
  EXPECT_EQ(e.totals().at(100), 1u);
}

TEST(Enforce, ATaskTheUserBoundIsLeftAloneUnlessGpubindBoundItLater) {
  // srun --cpu-bind=map_cpu:... under the site default (or --gpubind=none): the plugin stands
  // back and marks the task; an enforcing watch from the prolog moved it within one sample.
  Enforcer e({});
  std::vector<probe::ProcessState> states = bound_job();
  for (probe::ThreadState& t : states[0].threads) t.cpus_allowed = CpuSet::range(200, 201);  // the user's map
  states[0].env[topo::binding_env::kBinding] = "user";
  states[1].env[topo::binding_env::kBinding] = "none";
  states[1].threads[0].cpus_allowed = CpuSet::range(0, 223);
  EXPECT_TRUE(e.decide(dgx(), states, {}, 0).empty());
  std::vector<std::string> notes = e.take_notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "enforce: rank 0 (PID 100) is left as its user bound it (GPUBIND_BINDING=user)");
  EXPECT_TRUE(e.decide(dgx(), states, {}, 20).empty());
  EXPECT_TRUE(e.take_notes().empty());  // said once
  Enforcer later({});
  states[0].env[topo::binding_env::kCpus] = "0-3";  // `gpubind exec` inside the task bound it since
  std::vector<Repin> r = later.decide(dgx(), states, {}, 0);
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].rank_pid, 100);
}

TEST(Enforce, OneTasksetOfEveryThreadOfARankIsOneRepinNotOnePerThread) {
  // `taskset -ap` on a rank of 4 threads moved all four: counted 4, which alone came near the
  // GpubindRankRepinFight threshold (3 in 10 minutes).
  Enforcer e({});
  std::vector<probe::ProcessState> states = {rank(100, 0, 1, kGpus[0])};
  states[0] = proc(100, states[0].env, 4);
  states[0].context_gpus = {kGpus[0]};
  EXPECT_FALSE(e.decide(dgx(), states, {}, 0).empty());  // first put where the plan says
  std::vector<Repin> r = e.decide(dgx(), states, {}, 100);
  ASSERT_EQ(r.size(), 4u);  // every thread still moves
  for (Repin& x : r) x.outcome = RepinOutcome::repinned;
  e.record(r);
  EXPECT_EQ(e.totals().at(100), 1u);
}

TEST(Enforce, AReportedDriftIsCountedOnceWhileItLastsAndAgainWhenItRecurs) {
  // --enforce=report reported (and counted) the same drift again at every --enforce-gap: 60 in 10
  // minutes at the default gap, the alert firing on one taskset.
  EnforceOptions o;
  o.act = false;
  o.gap_seconds = 10;
  Enforcer e(o);
  std::vector<probe::ProcessState> states = bound_job();
  CpuSet home = states[0].threads[1].cpus_allowed;
  states[0].threads[1].cpus_allowed = CpuSet::range(0, 223);
  size_t reported = 0;
  for (int second = 0; second <= 600; ++second) {  // ten minutes of 1 s samples
    std::vector<Repin> r = e.decide(dgx(), states, {}, second);
    for (Repin& x : r) x.outcome = RepinOutcome::reported;
    reported += r.size();
    e.record(r);
  }
  EXPECT_EQ(reported, 1u);
  EXPECT_EQ(e.totals().at(100), 1u);
  states[0].threads[1].cpus_allowed = CpuSet::range(0, 111);  // moved elsewhere: a new drift
  std::vector<Repin> moved = e.decide(dgx(), states, {}, 601);
  ASSERT_EQ(moved.size(), 1u);
  moved[0].outcome = RepinOutcome::reported;
  e.record(moved);
  states[0].threads[1].cpus_allowed = home;  // back, then off again: a new drift too
  EXPECT_TRUE(e.decide(dgx(), states, {}, 620).empty());
  states[0].threads[1].cpus_allowed = CpuSet::range(0, 223);
  std::vector<Repin> again = e.decide(dgx(), states, {}, 640);
  ASSERT_EQ(again.size(), 1u);
  again[0].outcome = RepinOutcome::reported;
  e.record(again);
  EXPECT_EQ(e.totals().at(100), 3u);
}

TEST(Enforce, ARepinOfAPidThatIsAnotherProcessNowIsGoneNotMade) {
  Enforcer e({});
  std::vector<probe::ProcessState> states = bound_job();
  states[0].start_time = 4242;
  states[0].threads[1].cpus_allowed = CpuSet::range(0, 223);
  std::vector<Repin> r = e.decide(dgx(), states, {}, 0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].start_time, 4242u);
  RecordingMover mover;
  mover.affinities[101] = CpuSet::range(0, 223);
  mover.start_times[100] = 7;  // the rank ended after the sample; its PID is another's
  apply_repins(r, mover, true);
  EXPECT_EQ(r[0].outcome, RepinOutcome::gone);
  EXPECT_NE(r[0].error.find("no longer the process probed"), std::string::npos) << r[0].error;
  EXPECT_EQ(mover.affinities[101], CpuSet::range(0, 223));  // not moved
  mover.start_times[100] = 4242;
  r[0].outcome = RepinOutcome::planned;
  apply_repins(r, mover, true);
  EXPECT_EQ(r[0].outcome, RepinOutcome::repinned);
  EXPECT_TRUE(mover.holding.empty());
}

TEST(Enforce, ARepinReadsTheThreadAgainFirst) {
  std::vector<Repin> r(4);
  for (int i = 0; i < 4; ++i) {
    r[size_t(i)].tid = 10 + i;
    r[size_t(i)].rank_pid = 1;
    r[size_t(i)].to = CpuSet::range(0, 3);
  }
  RecordingMover mover;
  mover.affinities[10] = CpuSet::range(0, 7);  // still off: set
  mover.affinities[11] = CpuSet::of({2});      // moved back meanwhile (a stale sample): left
  mover.affinities[13] = CpuSet::range(0, 7);  // 12 ended
  mover.fail_set[13] = ErrorKind::permission;
  apply_repins(r, mover, true);
  EXPECT_EQ(r[0].outcome, RepinOutcome::repinned);
  EXPECT_EQ(mover.affinities[10], CpuSet::range(0, 3));
  EXPECT_EQ(r[1].outcome, RepinOutcome::already);
  EXPECT_EQ(r[2].outcome, RepinOutcome::gone);
  EXPECT_EQ(r[3].outcome, RepinOutcome::failed);
  EXPECT_NE(r[3].error.find("Operation not permitted"), std::string::npos);
  Enforcer e({});
  e.record(r);
  EXPECT_EQ(e.totals().at(1), 1u);  // only what was moved
}

// watch --enforce's round after a sample: the drift put back, and only what changed (or was
// reported) handed back to be said; a thread already back when read again is not.
TEST(Enforce, ARoundPutsBackWhatDriftedAndHandsBackOnlyWhatItDid) {
  Enforcer e({});
  std::vector<probe::ProcessState> states = bound_job();
  CpuSet rank0 = states[0].threads[0].cpus_allowed, rank1 = states[1].threads[1].cpus_allowed;
  states[0].threads[1].cpus_allowed = CpuSet::range(0, 223);
  states[1].threads[0].cpus_allowed = CpuSet::range(0, 223);  // and back on its own before the round
  RecordingMover mover;
  mover.affinities[states[0].threads[1].tid] = CpuSet::range(0, 223);
  mover.affinities[states[1].threads[0].tid] = rank1;
  testing::FakeTree tree;  // no cgroup files: planned over the topology's allowed CPUs
  auto root = sys::open_fsroot(tree.root());
  ASSERT_TRUE(root.ok());
  EnforceRound round = enforce_round(e, dgx(), **root, states, 0, mover);
  ASSERT_EQ(round.repins.size(), 1u);
  EXPECT_EQ(round.repins[0].tid, states[0].threads[1].tid);
  EXPECT_EQ(round.repins[0].outcome, RepinOutcome::repinned);
  EXPECT_EQ(mover.affinities[states[0].threads[1].tid], rank0);
  EXPECT_EQ(e.totals().at(100), 1u);
  EXPECT_FALSE(e.totals().count(200));
  EXPECT_TRUE(round.notes.empty());
}

}  // namespace gpubind::rebind
