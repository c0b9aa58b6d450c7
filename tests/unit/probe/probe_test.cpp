#include "probe/probe.hpp"
#include "probe/cpu_quota.hpp"
#include "probe/select.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>

#include "../../support/fake_tree.hpp"

namespace gpubind::probe {

namespace {
void process(gpubind::testing::FakeTree& t, int pid, const std::string& comm, const std::string& cpus, int last_cpu) {
  std::string d = "proc/" + std::to_string(pid);
  std::string status = "Name:\t" + comm + "\nPPid:\t1\nCpus_allowed_list:\t" + cpus +
                       "\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t2\n";
  std::string stat = std::to_string(pid) + " (" + comm + ") S 1";
  for (int f = 2; f < 45; ++f) stat += " " + std::to_string(f == 36 ? last_cpu : 0);
  t.file(d + "/status", status);
  t.file(d + "/task/" + std::to_string(pid) + "/status", status);
  t.file(d + "/task/" + std::to_string(pid) + "/stat", stat + "\n");
  t.file(d + "/task/" + std::to_string(pid) + "/sched", "x\n-----\nse.nr_migrations                             :                   42\nnr_switches                                  :                   17\n");
  t.dir(d + "/fd");
}
// The process holds these files open, as descriptors 3, 4, ...
void holds(gpubind::testing::FakeTree& t, int pid, std::initializer_list<const char*> files) {
  int fd = 3;
  for (const char* f : files) t.link("proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd++), f);
}
}  // namespace

TEST(Probe, ThreadStateFromProcFiles) {
  gpubind::testing::FakeTree t;
  process(t, 77, "my (odd) name", "2-3", 3);  // parentheses and spaces in comm
  auto root = sys::open_fsroot(t.root());
  auto p = probe_process(**root, 77, {});
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->threads.size(), 1u);
  EXPECT_EQ(p->cpus_allowed.to_list(), "2-3");
  EXPECT_EQ(p->threads[0].last_cpu, 3u);
  EXPECT_EQ(p->threads[0].migrations, 42u);
  EXPECT_EQ(p->threads[0].voluntary_switches, 7u);
  EXPECT_EQ(p->threads[0].involuntary_switches, 2u);
}

TEST(Probe, TheSlurmJobAProcessIsInIsWhatItsCgroupOrSlurmstepdSaysNotItsEnvironment) {
  EXPECT_EQ(slurm_job_of_cgroup("12:cpuset:/slurm/uid_1000/job_7/step_0/task_1\n"), "7");          // cgroup v1
  EXPECT_EQ(slurm_job_of_cgroup("0::/system.slice/slurmstepd.scope/job_42/step_batch/user/task_0\n"), "42");  // v2
  EXPECT_EQ(slurm_job_of_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n"), "");
  EXPECT_EQ(slurm_job_of_cgroup("0::/job_x/job_9\n"), "9");
  gpubind::testing::FakeTree t;
  auto stat = [&](int pid, const std::string& comm, int ppid) {
    t.file("proc/" + std::to_string(pid) + "/stat", std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid) + " 0 0\n");
  };
  stat(100, "slurmstepd", 1);
  t.file("proc/100/cmdline", std::string("slurmstepd: [7.0]\0", 18));
  stat(101, "bash", 100);
  process(t, 102, "python", "0-3", 0);  // a task's child (a shell between them)
  t.file("proc/102/status", "Name:\tpython\nPPid:\t101\nUid:\t1000\t1000\t1000\t1000\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n");
  t.file("proc/102/environ", std::string("SLURM_JOB_ID=7\0LOCAL_RANK=0\0", 29));
  stat(200, "bash", 1);  // another user's login shell, not a job's
  process(t, 201, "python", "0-3", 0);
  t.file("proc/201/status", "Name:\tpython\nPPid:\t200\nUid:\t1001\t1001\t1001\t1001\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n");
  t.file("proc/201/environ", std::string("SLURM_JOB_ID=7\0LOCAL_RANK=1\0", 29));
  auto root = sys::open_fsroot(t.root());
  auto task = probe_process(**root, 102, {});
  ASSERT_TRUE(task.ok()) << task.error().message();
  EXPECT_EQ(task->slurm_job_seen, "7");
  EXPECT_EQ(task->slurm_evidence, "slurmstepd [7.*] (PID 100) is above it");
  EXPECT_EQ(task->uid, 1000u);
  auto forged = probe_process(**root, 201, {});
  ASSERT_TRUE(forged.ok());
  EXPECT_EQ(forged->env.at("SLURM_JOB_ID"), "7");
  EXPECT_EQ(forged->slurm_job_seen, "");  // says job 7; nothing on the node does
  EXPECT_EQ(forged->uid, 1001u);
}

TEST(Probe, WhatRebindAppliedIsReadFromItsRecordOnlyForThatProcessAndFromItsOwner) {
  gpubind::testing::FakeTree t;
  unsigned me = unsigned(::geteuid());
  process(t, 77, "python", "0-3", 0);
  t.file("proc/77/status", "Name:\tpython\nPPid:\t1\nUid:\t" + std::to_string(me) + "\t0\t0\t0\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n");
  t.file("proc/77/stat", "77 (python) S 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n");
  std::string dir = "run/user/" + std::to_string(me) + "/gpubind/rebound/";
  t.file(dir + "77-4241", "cpus=8-9\nmems=1\n");  // the PID's earlier owner: another start time
  auto root = sys::open_fsroot(t.root());
  auto before = probe_process(**root, 77, {});
  ASSERT_TRUE(before.ok()) << before.error().message();
  EXPECT_EQ(before->start_time, 4242u);
  EXPECT_FALSE(before->rebound_cpus);
  t.file(dir + "77-4242", "cpus=2-3\nmems=0\n");
  auto after = probe_process(**root, 77, {});
  ASSERT_TRUE(after.ok());
  ASSERT_TRUE(after->rebound_cpus);
  EXPECT_EQ(after->rebound_cpus->to_list(), "2-3");
  EXPECT_EQ(after->rebound_record, t.root() + "/" + dir + "77-4242");
}

namespace {
// Counters a test sets: allowed CPUs and counts per thread id; what the probe asked is recorded.
class FakeTaskCounters final : public sys::TaskCounters {
 public:
  std::map<int, CpuSet> allowed;
  std::map<int, Counts> values;
  std::vector<int> asked, asked_cpus;
  std::optional<CpuSet> allowed_cpus(int tid) override {
    asked_cpus.push_back(tid);
    auto it = allowed.find(tid);
    return it == allowed.end() ? std::nullopt : std::optional<CpuSet>(it->second);
  }
  std::optional<Counts> counts(int tid) override {
    asked.push_back(tid);
    auto it = values.find(tid);
    return it == values.end() ? std::nullopt : std::optional<Counts>(it->second);
  }
  void forget(int) override {}
  void sweep() override {}
};
}  // namespace

namespace {
// One process of one thread, probed lightly sample after sample as watch does: its counters, the
// memo of its stat, its files kept open.
struct LightProbeRig {
  gpubind::testing::FakeTree t;
  int pid;
  FakeTaskCounters counters;
  ThreadMemo memo;
  std::unique_ptr<sys::FsRoot> root;
  std::optional<sys::KeptOpenFiles> kept;
  ProbeOptions options;
  LightProbeRig(int id, const std::string& cpus, int last_cpu) : pid(id) {
    process(t, pid, "worker", cpus, last_cpu);
    t.file("proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/schedstat", "1000 0 1\n");
    auto opened = sys::open_fsroot(t.root());
    root = std::move(*opened);
    kept.emplace(*root, 16);
    counters.allowed[pid] = *CpuSet::parse_list(cpus);
    counters.values[pid] = {1000, 4, 0, true};
    options.counters = &counters;
    options.memo = &memo;
    options.kept = &*kept;
  }
  // One sample: the thread as the probe saw it.
  ThreadState probe() {
    auto p = probe_process(*root, pid, options);
    EXPECT_TRUE(p.ok()) << p.error().message();
    if (options.kept) kept->sweep();
    memo.sweep();
    return p.ok() && p->threads.size() == 1 ? p->threads[0] : ThreadState{};
  }
  // Its stat now says it last ran on `cpu`, under the name `comm`.
  void stat(const std::string& comm, int cpu) {
    std::string text = std::to_string(pid) + " (" + comm + ") S 1";
    for (int f = 2; f < 45; ++f) text += " " + std::to_string(f == 36 ? cpu : 0);
    t.file("proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/stat", text + "\n");
  }
};
}  // namespace

TEST(Probe, LightProbeTakesAllowedCpusAndCountsFromTheCountersNotStatus) {
  gpubind::testing::FakeTree t;
  process(t, 77, "my (odd) name", "2-3", 3);
  FakeTaskCounters counters;
  counters.allowed[77] = CpuSet::of({1});  // re-pinned since: status is not what is read
  counters.values[77] = {123'000'000, 9, 31, true};
  auto root = sys::open_fsroot(t.root());
  ProbeOptions options;
  options.counters = &counters;
  auto p = probe_process(**root, 77, options);
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->threads.size(), 1u);
  const ThreadState& th = p->threads[0];
  EXPECT_EQ(th.comm, "my (odd) name");
  EXPECT_EQ(th.cpus_allowed.to_list(), "1");
  EXPECT_EQ(th.mems_allowed.to_list(), "0");  // the process's
  EXPECT_EQ(th.last_cpu, 3u);
  EXPECT_EQ(th.run_ns, 123'000'000u);
  EXPECT_EQ(th.migrations, 9u);
  EXPECT_EQ(th.switches, 31u);
  EXPECT_EQ(th.voluntary_switches, std::nullopt);
  EXPECT_EQ(counters.asked, std::vector<int>{77});
}

TEST(Probe, LightProbeReadsStatAgainOnlyForAThreadThatMigrated) {
  LightProbeRig rig(81, "0-3", 2);
  EXPECT_EQ(rig.probe().last_cpu, 2u);
  EXPECT_EQ(rig.memo.size(), 1u);
  // It ran on without migrating: its stat is not read (changed here, and not seen).
  rig.stat("worker", 3);
  rig.counters.values[81] = {5000, 4, 0, false};
  ThreadState th = rig.probe();
  EXPECT_EQ(th.last_cpu, 2u);
  EXPECT_EQ(th.comm, "worker");
  EXPECT_EQ(th.run_ns, 5000u);
  // It idled: its kept schedstat still reads, so it is the same thread; stat is not read.
  EXPECT_EQ(rig.probe().last_cpu, 2u);
  EXPECT_EQ(rig.counters.asked.size(), 3u);
  // It migrated: stat is read again, and says where it runs now.
  rig.counters.values[81] = {9000, 5, 0, false};
  EXPECT_EQ(rig.probe().last_cpu, 3u);
  // A new thread with the same id (fresh counters): stat is read whatever the count.
  rig.stat("renamed", 3);
  rig.counters.values[81] = {0, 5, 0, true};
  EXPECT_EQ(rig.probe().comm, "renamed");
  rig.memo.sweep();  // not probed since the last sweep: forgotten
  EXPECT_EQ(rig.memo.size(), 0u);
}

// A thread confined to one NUMA node: its stat is read when first seen, then not again when it
// migrates within the node. A thread that idles has its kept schedstat read (the identity check)
// every kIdentityEvery-th idle sample only.
TEST(Probe, LightProbeSkipsStatForAThreadWithinOneNodeAndChecksIdleThreadsEveryFewSamples) {
  LightProbeRig rig(82, "0-1", 1);
  rig.options.numa_cpus = {CpuSet::range(0, 1), CpuSet::range(2, 3)};
  EXPECT_EQ(rig.probe().last_cpu, 1u);
  // It ran and migrated within node 0 (CPUs 0-1): stat (changed here) is not read again.
  rig.stat("renamed", 0);
  rig.counters.values[82] = {5000, 9, 0, false};
  ThreadState th = rig.probe();
  EXPECT_EQ(th.comm, "worker");
  EXPECT_EQ(th.migrations, 9u);
  EXPECT_TRUE(th.last_cpu_stale);
  // Re-pinned across both nodes, it migrates again: now stat is read.
  rig.counters.allowed[82] = CpuSet::range(0, 3);
  rig.counters.values[82] = {6000, 10, 0, false};
  th = rig.probe();
  EXPECT_EQ(th.comm, "renamed");
  EXPECT_FALSE(th.last_cpu_stale);
  // Idle from here, its files no longer kept open (so the identity check, a read of a file
  // opened afresh, fails): the id is checked only at the kIdentityEvery-th idle sample, which
  // counts it afresh.
  rig.options.kept = nullptr;
  size_t fresh_at = 0;
  for (size_t k = 1; k <= ThreadMemo::kIdentityEvery && !fresh_at; ++k) {
    size_t asked = rig.counters.asked.size();
    rig.probe();
    // forget() then counts() again: the probe asked twice for a thread it found ended.
    if (rig.counters.asked.size() - asked == 2) fresh_at = k;
  }
  EXPECT_EQ(fresh_at, ThreadMemo::kIdentityEvery);
}

// A thread that did not run since the last sample ran nowhere: its allowed CPUs are those read
// before, asked for again when it runs and at its identity check, not at every sample.
TEST(Probe, LightProbeAsksAnIdleThreadsAllowedCpusOnlyAtItsIdentityCheck) {
  LightProbeRig rig(83, "0-1", 1);
  EXPECT_EQ(rig.probe().cpus_allowed.to_list(), "0-1");
  EXPECT_EQ(rig.counters.asked_cpus.size(), 1u);
  rig.counters.values[83] = {5000, 4, 0, false};  // it ran: asked
  EXPECT_EQ(rig.probe().cpus_allowed.to_list(), "0-1");
  EXPECT_EQ(rig.counters.asked_cpus.size(), 2u);
  // Re-pinned while it sleeps: not asked, the CPUs read before stand, until the check.
  rig.counters.allowed[83] = CpuSet::of({1});
  for (unsigned k = 1; k < ThreadMemo::kIdentityEvery; ++k) {
    ThreadState th = rig.probe();
    EXPECT_EQ(th.cpus_allowed.to_list(), "0-1") << "idle sample " << k;
    EXPECT_EQ(th.run_ns, 5000u);
  }
  EXPECT_EQ(rig.counters.asked_cpus.size(), 2u);
  EXPECT_EQ(rig.probe().cpus_allowed.to_list(), "1");  // the identity check asks
  EXPECT_EQ(rig.counters.asked_cpus.size(), 3u);
  // It runs: asked at once.
  rig.counters.allowed[83] = CpuSet::of({0});
  rig.counters.values[83] = {7000, 5, 0, false};
  EXPECT_EQ(rig.probe().cpus_allowed.to_list(), "0");
  // A thread gone between two samples while still listed is no thread (asked when it ran).
  rig.counters.allowed.erase(83);
  rig.counters.values[83] = {8000, 5, 0, false};
  auto p = probe_process(*rig.root, 83, rig.options);
  EXPECT_FALSE(p.ok());
}

// The light probe lists /proc/PID/task again only when the process's thread count changed, a
// listed thread is gone, or at every kIdentityEvery-th sample.
TEST(Probe, LightProbeListsThreadsAgainWhenTheirCountChangesOrEveryFewSamples) {
  LightProbeRig rig(84, "0-1", 1);
  auto threads = [&](int n) {
    rig.t.file("proc/84/status", "Name:\tworker\nPPid:\t1\nThreads:\t" + std::to_string(n) +
                                     "\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n");
  };
  auto add_thread = [&](int tid) {
    rig.t.file("proc/84/task/" + std::to_string(tid) + "/stat", std::to_string(tid) + " (helper) S 1" + std::string(43 * 2, ' ') + "\n");
    rig.counters.allowed[tid] = CpuSet::of({0});
    rig.counters.values[tid] = {100, 0, 0, true};
  };
  auto seen = [&] {
    auto p = probe_process(*rig.root, 84, rig.options);
    EXPECT_TRUE(p.ok()) << p.error().message();
    rig.memo.sweep();
    std::string ids;
    for (const ThreadState& th : p->threads) ids += (ids.empty() ? "" : ",") + std::to_string(th.tid);
    return ids;
  };
  auto end_thread = [&](int tid, uint64_t run_ns) {  // its counter reads the same ever after
    std::filesystem::remove_all(rig.t.root() + "/proc/84/task/" + std::to_string(tid));
    rig.counters.allowed.erase(tid);
    rig.counters.values[tid] = {run_ns, 0, 0, false};
  };
  threads(1);
  EXPECT_EQ(seen(), "84");
  // A thread appears but the count read says 1 still: the listing stands (until the check).
  add_thread(85);
  EXPECT_EQ(seen(), "84");
  threads(2);
  EXPECT_EQ(seen(), "84,85");
  // One ends and another starts between samples, the count the same. The one that ended ran
  // first: asked for, it is gone, and the directory is listed again at the next sample.
  end_thread(85, 500);
  add_thread(86);
  EXPECT_EQ(seen(), "84");
  EXPECT_EQ(seen(), "84,86");
  // One that ended idle is not asked for: the listing is checked every kIdentityEvery-th sample.
  end_thread(86, 100);
  add_thread(87);
  size_t relisted_at = 0;
  for (unsigned k = 1; k <= ThreadMemo::kIdentityEvery && !relisted_at; ++k)
    if (seen() == "84,87") relisted_at = k;
  EXPECT_EQ(relisted_at, ThreadMemo::kIdentityEvery);
  // Without the memo the directory is listed at every probe.
  rig.options.memo = nullptr;
  add_thread(88);
  EXPECT_EQ(seen(), "84,87,88");
}

TEST(Probe, GpusFromNvidiaMinorsAndDrmNodes) {
  gpubind::testing::FakeTree t;
  process(t, 10, "python", "0-1", 0);
  t.file("proc/driver/nvidia/gpus/0000:3A:00.0/information", "Model: X\nDevice Minor: \t 2\n");
  holds(t, 10, {"/dev/nvidia2", "/dev/nvidiactl", "/dev/dri/renderD129"});
  t.link("sys/class/drm/renderD129/device", "../../../0000:c6:00.0");
  auto root = sys::open_fsroot(t.root());
  auto p = probe_process(**root, 10, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->gpus, (std::vector<std::string>{"0000:3a:00.0", "0000:c6:00.0"}));
}

// NVIDIA GPUs 0000:07:00.0 and 0000:0f:00.0, /dev/nvidia0 and /dev/nvidia1 as the driver lists them.
void two_nvidia_gpus(gpubind::testing::FakeTree& t) {
  t.file("proc/driver/nvidia/gpus/0000:07:00.0/information", "Device Minor: 0\n");
  t.file("proc/driver/nvidia/gpus/0000:0f:00.0/information", "Device Minor: 1\n");
}

TEST(Probe, OpenableGpusAreThoseTheContainerOrCgroupLeaves) {
  // Two NVIDIA GPUs and an AMD one; the container holds only nvidia1's and the AMD GPU's files.
  gpubind::testing::FakeTree t;
  two_nvidia_gpus(t);
  t.link("sys/class/drm/renderD128/device", "../../../0000:c6:00.0");
  t.file("dev/nvidia1", "");
  t.file("dev/dri/renderD128", "");
  auto root = sys::open_fsroot(t.root());
  auto open = openable_gpus(**root, {"0000:07:00.0", "0000:0f:00.0", "0000:c6:00.0"});
  ASSERT_TRUE(open.has_value());
  EXPECT_EQ(*open, (std::vector<std::string>{"0000:0f:00.0", "0000:c6:00.0"}));
}

// Issue 32: a container given one MIG device holds /dev/nvidia-caps/nvidia-cap<M> of its GPU and
// compute instance only; the driver's capability list says whose they are.
TEST(Probe, OpenableMigParentsFromTheCapabilityFiles) {
  gpubind::testing::FakeTree t;
  two_nvidia_gpus(t);
  t.file("proc/driver/nvidia/capabilities/gpu0/mig/config", "DeviceFileMinor: 1\nDeviceFileMode: 256\n");
  t.file("proc/driver/nvidia/capabilities/gpu0/mig/gi1/access", "DeviceFileMinor: 12\nDeviceFileMode: 292\n");
  t.file("proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci0/access", "DeviceFileMinor: 13\nDeviceFileMode: 292\n");
  t.file("proc/driver/nvidia/capabilities/gpu1/mig/gi2/access", "DeviceFileMinor: 147\nDeviceFileMode: 292\n");
  t.file("proc/driver/nvidia/capabilities/gpu1/mig/gi2/ci0/access", "DeviceFileMinor: 148\nDeviceFileMode: 292\n");
  auto root = sys::open_fsroot(t.root());
  EXPECT_EQ(openable_mig_parents(**root), std::nullopt);  // no capability file at all: unknown
  t.file("dev/nvidia-caps/nvidia-cap147", "");
  t.file("dev/nvidia-caps/nvidia-cap148", "");
  EXPECT_EQ(openable_mig_parents(**root), (std::vector<std::string>{"0000:0f:00.0"}));
  t.file("dev/nvidia-caps/nvidia-cap13", "");  // a compute instance of GPU 0 too
  EXPECT_EQ(openable_mig_parents(**root), (std::vector<std::string>{"0000:07:00.0", "0000:0f:00.0"}));
}

TEST(Probe, OpenableMigParentsUnknownWithoutMig) {
  gpubind::testing::FakeTree t;
  t.file("proc/driver/nvidia/gpus/0000:07:00.0/information", "Device Minor: 0\n");
  t.file("proc/driver/nvidia/capabilities/gpu0/mig/config", "DeviceFileMinor: 1\n");  // MIG off: no gi*
  t.file("dev/nvidia-caps/nvidia-cap1", "");
  auto root = sys::open_fsroot(t.root());
  EXPECT_EQ(openable_mig_parents(**root), std::nullopt);
}

TEST(Probe, OpenableGpusUnknownWhenTheDriverDoesNotSayOrNoDeviceFileExists) {
  gpubind::testing::FakeTree t;
  t.file("proc/driver/nvidia/gpus/0000:07:00.0/information", "Device Minor: 0\n");
  auto root = sys::open_fsroot(t.root());
  // The driver creates /dev/nvidiaN on first use: no file at all says nothing about confinement.
  EXPECT_EQ(openable_gpus(**root, {"0000:07:00.0"}), std::nullopt);
  t.file("dev/nvidia0", "");
  EXPECT_EQ(openable_gpus(**root, {"0000:07:00.0"}), (std::vector<std::string>{"0000:07:00.0"}));
  // A GPU whose device file the driver does not name (no information file): unknown.
  EXPECT_EQ(openable_gpus(**root, {"0000:07:00.0", "0000:08:00.0"}), std::nullopt);
}

TEST(Probe, NumaMapsAreSummedPerNode) {
  gpubind::testing::FakeTree t;
  process(t, 11, "python", "0", 0);
  t.file("proc/11/numa_maps",
         "1000 default anon=5 N0=3 N1=2 kernelpagesize_kB=4\n2000 bind:1 anon=7 N1=7\n"
         // The page cache of its binary and a library (even with copied-on-write pages): not counted.
         "3000 default file=/usr/bin/python3 mapped=40 N3=40\n4000 default file=/lib/libc.so.6 anon=2 mapped=9 N3=9\n");
  auto root = sys::open_fsroot(t.root());
  auto p = probe_process(**root, 11, {true});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->pages_per_node.has_value());
  EXPECT_EQ((*p->pages_per_node)[0], 3u);
  EXPECT_EQ((*p->pages_per_node)[1], 9u);
}

TEST(Probe, MissingAndMalformedAreErrors) {
  gpubind::testing::FakeTree t;
  t.file("proc/12/status", "Name:\tx\nCpus_allowed_list:\tbanana\nMems_allowed_list:\t0\n");
  auto root = sys::open_fsroot(t.root());
  auto bad = probe_process(**root, 12, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("Cpus_allowed_list"), std::string::npos);
  auto gone = probe_process(**root, 13, {});
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().why, "no such process");
}

// A process reaped between its status and its threads: /proc/PID/task still opens but lists no
// thread. It vanished while being read; it is never judged as a process with no threads.
TEST(Probe, AProcessWhoseTaskDirectoryListsNoThreadVanished) {
  gpubind::testing::FakeTree t;
  process(t, 21, "trainer", "0-1", 0);
  std::filesystem::remove_all(t.root() + "/proc/21/task/21");
  auto root = sys::open_fsroot(t.root());
  auto p = probe_process(**root, 21, {});
  ASSERT_FALSE(p.ok()) << p->threads.size() << " threads";
  EXPECT_EQ(p.error().why, "vanished while being read");
  EXPECT_EQ(p.error().kind, ErrorKind::not_found);
}

// --all-gpu-procs: a process holding one GPU's device file, not one holding only the stack's
// control files (nvidiactl, nvidia-uvm, kfd: a monitoring agent, a process that never picked a
// GPU).
TEST(ProbeSelect, GpuProcessesHoldAGpusDeviceFileNotOnlyControlFiles) {
  gpubind::testing::FakeTree t;
  for (int pid : {10, 11, 12, 13}) process(t, pid, "p" + std::to_string(pid), "0", 0);
  holds(t, 10, {"/dev/nvidiactl", "/dev/nvidia1"});
  holds(t, 11, {"/dev/nvidiactl", "/dev/nvidia-uvm"});
  holds(t, 12, {"/dev/kfd", "/dev/dri/renderD128"});
  holds(t, 13, {"/dev/kfd"});
  auto root = sys::open_fsroot(t.root());
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(gpu_processes(**root), (std::vector<int>{10, 12}));
}

// containerd with the systemd driver, as a DaemonSet's watch reads it through its own cgroup
// namespace; CRI-O; Docker; the cgroupfs driver; cgroup v1's many lines; none.
TEST(Probe, ContainerIdFromTheCgroupPath) {
  const std::string id(64, 'a');
  const std::string id2 = std::string(63, '0') + "f";
  EXPECT_EQ(container_id_of_cgroup("0::/../../kubepods.slice/kubepods-podA_B.slice/cri-containerd-" + id + ".scope\n"), id);
  EXPECT_EQ(container_id_of_cgroup("0::/kubepods.slice/kubepods-burstable.slice/crio-" + id2 + ".scope\n"), id2);
  EXPECT_EQ(container_id_of_cgroup("0::/system.slice/docker-" + id + ".scope\n"), id);
  EXPECT_EQ(container_id_of_cgroup("12:cpuset:/kubepods/besteffort/pod1234/" + id2 + "\n11:memory:/kubepods/besteffort/pod1234/" + id2 + "\n"), id2);
  EXPECT_EQ(container_id_of_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n"), "");
  EXPECT_EQ(container_id_of_cgroup("0::/x/" + std::string(65, 'a') + "\n"), "");  // not an id: too long
  EXPECT_EQ(container_id_of_cgroup("0::/x/" + std::string(64, 'A') + "\n"), "");  // ids are lower case
}

TEST(Probe, KubernetesNamesFromTheKubeletsLogLinks) {
  const std::string id(64, 'b');
  auto m = kube_containers_of_log_names({"llama-worker-0_training_trainer-" + id + ".log", "bad_name-" + id + ".log",
                                         "a_b_c_d-" + id + "0.log", "x_y_z-notanid.log", "README"});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.at(id).pod, "llama-worker-0");
  EXPECT_EQ(m.at(id).namespace_name, "training");
  EXPECT_EQ(m.at(id).container, "trainer");
}

// A stat line: pid, comm, state, ppid, and num_threads as field 20.
std::string stat_line(int pid, const std::string& comm, char state, int ppid, int threads) {
  std::string s = std::to_string(pid) + " (" + comm + ") " + state + " " + std::to_string(ppid);
  for (int f = 5; f <= 44; ++f) s += " " + std::to_string(f == 20 ? threads : 0);
  return s + "\n";
}

TEST(ProbeSelect, RunnableThreadsOutsideCountOthersNotTheProcessOrItsDescendants) {
  gpubind::testing::FakeTree t;
  t.file("proc/100/stat", stat_line(100, "gpubind", 'R', 1, 1));            // bench itself
  t.file("proc/101/stat", stat_line(101, "gpubind launch", 'S', 100, 1));   // its child
  t.file("proc/102/stat", stat_line(102, "python3 (rank)", 'R', 101, 1));   // a grandchild, ')' in its comm
  t.file("proc/200/stat", stat_line(200, "make", 'R', 1, 1));               // another job: 1
  t.file("proc/201/stat", stat_line(201, "idle", 'S', 1, 1));
  t.file("proc/300/stat", stat_line(300, "java", 'S', 1, 3));               // threads: 2 of 3 runnable
  for (auto [tid, state] : {std::pair{300, 'S'}, {301, 'R'}, {302, 'R'}})
    t.file("proc/300/task/" + std::to_string(tid) + "/stat", stat_line(tid, "java", state, 1, 3));
  t.file("proc/400/stat", "garbage\n");                                    // unreadable: not counted
  auto root = sys::open_fsroot(t.root());
  ASSERT_TRUE(root);
  EXPECT_EQ(runnable_threads_outside(**root, 100), 3u);
  EXPECT_EQ(runnable_threads_outside(**root, 101), 4u);  // bench itself counts when it is not the one asking
}

}  // namespace gpubind::probe

namespace gpubind::probe {

TEST(CpuQuota, CpuMaxAndCpuStatAreParsedAsTheKernelWritesThem) {
  EXPECT_EQ(parse_cpu_max("max 100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(*parse_cpu_max("150000 100000\n"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_cpu_max("50000\n"), 0.5);  // the period is the default 100 ms
  EXPECT_EQ(parse_cpu_max("12x 100000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("1000 0"), std::nullopt);
  CpuQuota v2, v1;
  ASSERT_TRUE(
      parse_cpu_stat("usage_usec 9\nuser_usec 5\nsystem_usec 4\nnr_periods 40\nnr_throttled 12\nthrottled_usec 3500000\n"
                     "nr_bursts 0\nburst_usec 0\n",
                     v2));
  EXPECT_EQ(v2.periods, 40u);
  EXPECT_EQ(v2.throttled_periods, 12u);
  EXPECT_EQ(v2.throttled_ns, 3'500'000'000u);
  ASSERT_TRUE(parse_cpu_stat("nr_periods 10\nnr_throttled 9\nthrottled_time 123456789\n", v1));
  EXPECT_EQ(v1.throttled_ns, 123456789u);
  EXPECT_FALSE(parse_cpu_stat("usage_usec 9\n", v1));  // no bandwidth control
}

TEST(CpuQuota, TheQuotaOverAProcessIsTheSmallestOfItsCgroupsAndTheirAncestorsOnCgroupV2) {
  gpubind::testing::FakeTree t;
  t.file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n");
  t.file("sys/fs/cgroup/kubepods/cpu.max", "max 100000\n");
  t.file("sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n");
  t.file("sys/fs/cgroup/kubepods/pod1/cpu.stat", "usage_usec 1\nnr_periods 40\nnr_throttled 12\nthrottled_usec 3500000\n");
  t.file("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "400000 100000\n");
  t.file("sys/fs/cgroup/kubepods/pod1/ctr/cpu.stat", "usage_usec 1\nnr_periods 40\nnr_throttled 0\nthrottled_usec 0\n");
  auto root = sys::open_fsroot(t.root());
  CpuQuotaMemo memo;
  auto q = cpu_quota_of(**root, "0::/kubepods/pod1/ctr\n", &memo);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->cgroup, (*root)->path_of("sys/fs/cgroup/kubepods/pod1"));
  EXPECT_EQ(q->setting, "cpu.max 150000 100000");
  EXPECT_DOUBLE_EQ(q->cpus, 1.5);
  EXPECT_EQ(q->throttled_periods, 12u);
  // The counters are read at each call; the limiter is found again every kRefreshEvery-th.
  t.file("sys/fs/cgroup/kubepods/pod1/cpu.stat", "usage_usec 1\nnr_periods 50\nnr_throttled 20\nthrottled_usec 4000000\n");
  t.file("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "50000 100000\n");  // resized below the pod's
  unsigned calls = 0;
  for (; calls < CpuQuotaMemo::kRefreshEvery && q->cgroup == (*root)->path_of("sys/fs/cgroup/kubepods/pod1"); ++calls) {
    q = cpu_quota_of(**root, "0::/kubepods/pod1/ctr\n", &memo);
    ASSERT_TRUE(q.has_value());
    if (q->cgroup != (*root)->path_of("sys/fs/cgroup/kubepods/pod1")) break;
    EXPECT_EQ(q->throttled_periods, 20u);
  }
  EXPECT_EQ(q->cgroup, (*root)->path_of("sys/fs/cgroup/kubepods/pod1/ctr"));
  EXPECT_EQ(calls, CpuQuotaMemo::kRefreshEvery - 1);
  // No quota anywhere: none.
  EXPECT_EQ(cpu_quota_of(**root, "0::/kubepods\n", nullptr), std::nullopt);
}

TEST(CpuQuota, CgroupV1sCpuControllerIsPreferredOverAnEmptyUnifiedHierarchy) {
  gpubind::testing::FakeTree t;
  t.file("sys/fs/cgroup/unified/cgroup.controllers", "\n");
  t.file("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  t.file("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  t.file("sys/fs/cgroup/cpu,cpuacct/slurm/job_5/cpu.cfs_quota_us", "50000\n");
  t.file("sys/fs/cgroup/cpu,cpuacct/slurm/job_5/cpu.cfs_period_us", "100000\n");
  t.file("sys/fs/cgroup/cpu,cpuacct/slurm/job_5/cpu.stat", "nr_periods 10\nnr_throttled 9\nthrottled_time 123456789\n");
  auto root = sys::open_fsroot(t.root());
  auto q = cpu_quota_of(**root, "5:cpu,cpuacct:/slurm/job_5\n0::/slurm/job_5\n", nullptr);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->setting, "cpu.cfs_quota_us 50000 (period 100000)");
  EXPECT_DOUBLE_EQ(q->cpus, 0.5);
  EXPECT_EQ(q->periods, 10u);
  EXPECT_EQ(q->throttled_ns, 123456789u);
}

// A running thread's wait for a CPU (schedstat's second field) is read at every kDelayEvery-th
// sample it ran in; in between, the value read last stands.
TEST(Probe, LightProbeReadsARunningThreadsWaitForACpuEveryFewSamplesItRan) {
  LightProbeRig rig(84, "0-1", 1);
  rig.options.numa_cpus = {CpuSet::range(0, 1)};
  EXPECT_FALSE(rig.probe().run_delay_ns.has_value());  // first seen: not read
  std::string schedstat = "proc/84/task/84/schedstat";
  rig.t.file(schedstat, "2000 500 3\n");
  unsigned read_at = 0;
  for (unsigned k = 1; k <= ThreadMemo::kDelayEvery && !read_at; ++k) {
    rig.counters.values[84] = {1000 + k * 1000, 4, 0, false};  // it ran
    if (rig.probe().run_delay_ns == 500u) read_at = k;
  }
  ASSERT_NE(read_at, 0u);
  rig.t.file(schedstat, "9000 900 7\n");
  for (unsigned k = 1; k < ThreadMemo::kDelayEvery; ++k) {
    rig.counters.values[84] = {10000 + k * 1000, 4, 0, false};
    EXPECT_EQ(rig.probe().run_delay_ns, 500u) << "sample " << k << " after the read";
  }
  rig.counters.values[84] = {20000, 4, 0, false};
  EXPECT_EQ(rig.probe().run_delay_ns, 900u);
}

TEST(Probe, TheFullProbeReadsEachThreadsStateAndWait) {
  gpubind::testing::FakeTree t;
  process(t, 78, "worker", "0-1", 1);
  t.file("proc/78/task/78/schedstat", "4000 2500 9\n");
  auto root = sys::open_fsroot(t.root());
  auto p = probe_process(**root, 78, {});
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->threads[0].state, 'S');
  EXPECT_EQ(p->threads[0].run_ns, 4000u);
  EXPECT_EQ(p->threads[0].run_delay_ns, 2500u);
}

}  // namespace gpubind::probe
