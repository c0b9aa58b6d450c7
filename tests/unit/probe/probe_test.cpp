#include "probe/probe.hpp"
#include "probe/select.hpp"

#include <gtest/gtest.h>

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
