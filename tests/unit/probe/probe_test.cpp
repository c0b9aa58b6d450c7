#include "probe/probe.hpp"
#include "probe/select.hpp"

#include <gtest/gtest.h>

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
  t.file(d + "/task/" + std::to_string(pid) + "/sched", "x\n-----\nse.nr_migrations                             :                   42\n");
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
  std::vector<std::pair<int, uint64_t>> asked;  // (tid, start time)
  std::optional<CpuSet> allowed_cpus(int tid) override {
    auto it = allowed.find(tid);
    return it == allowed.end() ? std::nullopt : std::optional<CpuSet>(it->second);
  }
  std::optional<Counts> counts(int tid, uint64_t start_time) override {
    asked.emplace_back(tid, start_time);
    auto it = values.find(tid);
    return it == values.end() ? std::nullopt : std::optional<Counts>(it->second);
  }
  void sweep() override {}
};
}  // namespace

TEST(Probe, LightProbeTakesAllowedCpusAndCountsFromTheCountersNotStatus) {
  gpubind::testing::FakeTree t;
  process(t, 77, "my (odd) name", "2-3", 3);
  // The thread's start time (stat field 22) is what tells a reused thread id.
  std::string stat = "77 (my (odd) name) S 1";
  for (int f = 2; f < 45; ++f) stat += " " + std::to_string(f == 36 ? 3 : f == 19 ? 5555 : f == 11 ? 7 : f == 12 ? 1 : 0);
  t.file("proc/77/task/77/stat", stat + "\n");
  FakeTaskCounters counters;
  counters.allowed[77] = CpuSet::of({1});  // re-pinned since: status is not what is read
  counters.values[77] = {123'000'000, 9};
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
  EXPECT_EQ(th.voluntary_switches, std::nullopt);
  EXPECT_EQ(counters.asked, (std::vector<std::pair<int, uint64_t>>{{77, 5555}}));
}

TEST(Probe, LightProbeReadsSchedstatAndSchedWhereNoCounterIsAttached) {
  gpubind::testing::FakeTree t;
  process(t, 78, "worker", "0-1", 1);
  t.file("proc/78/task/78/schedstat", "4500000 100 7\n");
  FakeTaskCounters counters;
  counters.allowed[78] = CpuSet::of({0, 1});
  auto root = sys::open_fsroot(t.root());
  ProbeOptions options;
  options.counters = &counters;
  auto p = probe_process(**root, 78, options);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->threads[0].run_ns, 4'500'000u);
  EXPECT_EQ(p->threads[0].migrations, 42u);  // sched's se.nr_migrations
}

TEST(Probe, LightProbeDropsAThreadThatEndedBetweenItsReads) {
  gpubind::testing::FakeTree t;
  process(t, 79, "main", "0", 0);
  std::string stat = "80 (helper) S 1";
  for (int f = 2; f < 45; ++f) stat += " 0";
  t.file("proc/79/task/80/stat", stat + "\n");
  FakeTaskCounters counters;
  counters.allowed[79] = CpuSet::of({0});  // 80 is gone by the time its CPUs are asked
  auto root = sys::open_fsroot(t.root());
  ProbeOptions options;
  options.counters = &counters;
  auto p = probe_process(**root, 79, options);
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->threads.size(), 1u);
  EXPECT_EQ(p->threads[0].tid, 79);
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

TEST(Probe, OpenableGpusAreThoseTheContainerOrCgroupLeaves) {
  // Two NVIDIA GPUs and an AMD one; the container holds only nvidia1's and the AMD GPU's files.
  gpubind::testing::FakeTree t;
  t.file("proc/driver/nvidia/gpus/0000:07:00.0/information", "Device Minor: 0\n");
  t.file("proc/driver/nvidia/gpus/0000:0f:00.0/information", "Device Minor: 1\n");
  t.link("sys/class/drm/renderD128/device", "../../../0000:c6:00.0");
  t.file("dev/nvidia1", "");
  t.file("dev/dri/renderD128", "");
  auto root = sys::open_fsroot(t.root());
  auto open = openable_gpus(**root, {"0000:07:00.0", "0000:0f:00.0", "0000:c6:00.0"});
  ASSERT_TRUE(open.has_value());
  EXPECT_EQ(*open, (std::vector<std::string>{"0000:0f:00.0", "0000:c6:00.0"}));
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
  t.file("proc/11/numa_maps", "1000 default anon=5 N0=3 N1=2 kernelpagesize_kB=4\n2000 bind:1 anon=7 N1=7\n");
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

}  // namespace gpubind::probe
