#include "probe/probe.hpp"
#include "probe/select.hpp"

#include <gtest/gtest.h>

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

namespace {
// Counters a test sets: allowed CPUs and counts per thread id; what the probe asked is recorded.
class FakeTaskCounters final : public sys::TaskCounters {
 public:
  std::map<int, CpuSet> allowed;
  std::map<int, Counts> values;
  std::vector<int> asked;
  std::optional<CpuSet> allowed_cpus(int tid) override {
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
  gpubind::testing::FakeTree t;
  process(t, 81, "worker", "0-3", 2);
  t.file("proc/81/task/81/schedstat", "1000 0 1\n");
  auto root = sys::open_fsroot(t.root());
  FakeTaskCounters counters;
  counters.allowed[81] = CpuSet::of({0, 1, 2, 3});
  counters.values[81] = {1000, 4, 0, true};
  ThreadMemo memo;
  sys::KeptOpenFiles kept(**root, 16);
  ProbeOptions options;
  options.counters = &counters;
  options.memo = &memo;
  options.kept = &kept;
  auto probe = [&] {
    auto p = probe_process(**root, 81, options);
    EXPECT_TRUE(p.ok()) << p.error().message();
    kept.sweep();
    memo.sweep();
    return p.ok() && p->threads.size() == 1 ? p->threads[0] : ThreadState{};
  };
  EXPECT_EQ(probe().last_cpu, 2u);
  EXPECT_EQ(memo.size(), 1u);
  // It ran on without migrating: its stat is not read (changed here, and not seen).
  std::string moved = "81 (worker) S 1";
  for (int f = 2; f < 45; ++f) moved += " " + std::to_string(f == 36 ? 3 : 0);
  t.file("proc/81/task/81/stat", moved + "\n");
  counters.values[81] = {5000, 4, 0, false};
  ThreadState th = probe();
  EXPECT_EQ(th.last_cpu, 2u);
  EXPECT_EQ(th.comm, "worker");
  EXPECT_EQ(th.run_ns, 5000u);
  // It idled: its kept schedstat still reads, so it is the same thread; stat is not read.
  EXPECT_EQ(probe().last_cpu, 2u);
  EXPECT_EQ(counters.asked.size(), 3u);
  // It migrated: stat is read again, and says where it runs now.
  counters.values[81] = {9000, 5, 0, false};
  EXPECT_EQ(probe().last_cpu, 3u);
  // A new thread with the same id (fresh counters): stat is read whatever the count.
  t.file("proc/81/task/81/stat", "81 (renamed) S 1" + std::string(43 * 2, ' ') + "\n");
  counters.values[81] = {0, 5, 0, true};
  EXPECT_EQ(probe().comm, "renamed");
  memo.sweep();  // not probed since the last sweep: forgotten
  EXPECT_EQ(memo.size(), 0u);
}

// A thread confined to one NUMA node: its stat is read when first seen, then not again when it
// migrates within the node. A thread that idles has its kept schedstat read (the identity check)
// every kIdentityEvery-th idle sample only.
TEST(Probe, LightProbeSkipsStatForAThreadWithinOneNodeAndChecksIdleThreadsEveryFewSamples) {
  gpubind::testing::FakeTree t;
  process(t, 82, "worker", "0-1", 1);
  t.file("proc/82/task/82/schedstat", "1000 0 1\n");
  auto root = sys::open_fsroot(t.root());
  FakeTaskCounters counters;
  counters.allowed[82] = CpuSet::of({0, 1});
  counters.values[82] = {1000, 4, 0, true};
  ThreadMemo memo;
  sys::KeptOpenFiles kept(**root, 16);
  ProbeOptions options;
  options.counters = &counters;
  options.memo = &memo;
  options.kept = &kept;
  options.numa_cpus = {CpuSet::range(0, 1), CpuSet::range(2, 3)};
  auto probe = [&] {
    auto p = probe_process(**root, 82, options);
    EXPECT_TRUE(p.ok()) << p.error().message();
    if (options.kept) kept.sweep();
    memo.sweep();
    return p.ok() && p->threads.size() == 1 ? p->threads[0] : ThreadState{};
  };
  EXPECT_EQ(probe().last_cpu, 1u);
  // It ran and migrated within node 0 (CPUs 0-1): stat (changed here) is not read again.
  std::string moved = "82 (renamed) S 1";
  for (int f = 2; f < 45; ++f) moved += " 0";  // last CPU 0
  t.file("proc/82/task/82/stat", moved + "\n");
  counters.values[82] = {5000, 9, 0, false};
  ThreadState th = probe();
  EXPECT_EQ(th.comm, "worker");
  EXPECT_EQ(th.migrations, 9u);
  EXPECT_TRUE(th.last_cpu_stale);
  // Re-pinned across both nodes, it migrates again: now stat is read.
  counters.allowed[82] = CpuSet::range(0, 3);
  counters.values[82] = {6000, 10, 0, false};
  th = probe();
  EXPECT_EQ(th.comm, "renamed");
  EXPECT_FALSE(th.last_cpu_stale);
  // Idle from here, its files no longer kept open (so the identity check, a read of a file
  // opened afresh, fails): the id is checked only at the kIdentityEvery-th idle sample, which
  // counts it afresh.
  options.kept = nullptr;
  size_t fresh_at = 0;
  for (size_t k = 1; k <= ThreadMemo::kIdentityEvery && !fresh_at; ++k) {
    size_t asked = counters.asked.size();
    probe();
    // forget() then counts() again: the probe asked twice for a thread it found ended.
    if (counters.asked.size() - asked == 2) fresh_at = k;
  }
  EXPECT_EQ(fresh_at, ThreadMemo::kIdentityEvery);
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

}  // namespace gpubind::probe
