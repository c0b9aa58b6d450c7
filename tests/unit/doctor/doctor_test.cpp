// gpubind doctor's checks (doctor/doctor.hpp), one test per rule and its OK case, on hand-made
// facts and the example topologies; and the reader (doctor/reader.hpp) on fixture trees.
#include "doctor/doctor.hpp"

#include <gtest/gtest.h>

#include "../../support/fake_tree.hpp"
#include "discover/source.hpp"
#include "doctor/reader.hpp"
#include "render/doctor_render.hpp"

namespace gpubind::doctor {

namespace {

topo::Topology example(const std::string& name) { return *discover::load_topology("example:" + name); }
topo::Topology one_node() { return *discover::load_topology("NUMANode:1 Core:4 PU:2"); }

// A node with nothing to say: every fact known and fine.
NodeFacts clean() {
  NodeFacts f;
  f.numa_balancing = 0;
  f.zone_reclaim_mode = 0;
  f.thp_enabled = "madvise";
  f.thp_defrag = "madvise";
  f.swap_total_kb = 0;
  f.cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet";
  f.isolated = CpuSet{};
  f.nohz_full = CpuSet{};
  return f;
}

const CheckResult& result(const Report& r, const std::string& check) {
  for (const CheckResult& c : r.results)
    if (c.check == check) return c;
  static const CheckResult none{"(absent)", Severity::ok, "", ""};
  ADD_FAILURE() << "no result for " << check;
  return none;
}

Severity severity(const topo::Topology& t, const NodeFacts& f, const std::string& check) { return result(judge(t, f), check).severity; }

}  // namespace

TEST(Doctor, ACleanNodeIsOkEverywhere) {
  Report r = judge(example("dgx-h100"), clean());
  EXPECT_EQ(r.worst(), Severity::ok);
  for (const CheckResult& c : r.results) {
    EXPECT_EQ(c.severity, Severity::ok) << c.check << ": " << c.why;
    EXPECT_TRUE(c.fix.empty()) << c.check;
  }
  EXPECT_EQ(r.results.size(), 9u);  // no slurm.conf: slurm_task_plugin not run, and said
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("slurm_task_plugin: not checked"), std::string::npos);
}

TEST(Doctor, NumaBalancingOnSeveralNodesWarns) {
  NodeFacts f = clean();
  f.numa_balancing = 1;
  Report r1 = judge(example("dgx-h100"), f);
  const CheckResult& c = result(r1, "numa_balancing");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.fix.find("kernel.numa_balancing=0"), std::string::npos);
  EXPECT_EQ(severity(one_node(), f, "numa_balancing"), Severity::ok);  // one node: nothing to balance
  f.numa_balancing.reset();  // not built into the kernel
  EXPECT_EQ(severity(example("dgx-h100"), f, "numa_balancing"), Severity::ok);
}

TEST(Doctor, IsolatedCpusOnTheGpusNodesWarnAndElsewhereAreHousekeeping) {
  NodeFacts f = clean();
  f.isolated = CpuSet::range(4, 13);  // node 0, GPU 0-3's
  Report r2 = judge(example("dgx-h100"), f);
  const CheckResult& c = result(r2, "isolcpus");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.why.find("CPUs 4-13"), std::string::npos) << c.why;
  topo::Topology t = example("dgx-h100");
  for (topo::Gpu& g : t.gpus) g.numa = std::vector<unsigned>{1};  // every GPU on node 1: node 0's isolated CPUs are no rank's
  EXPECT_EQ(severity(t, f, "isolcpus"), Severity::ok);
}

TEST(Doctor, NohzFullNeedsHousekeepingAndRcuNocbs) {
  topo::Topology t = example("dgx-h100");
  NodeFacts f = clean();
  f.nohz_full = t.cpus;
  EXPECT_EQ(severity(t, f, "nohz_full"), Severity::fail);
  f.nohz_full = CpuSet::range(1, 55);
  EXPECT_EQ(severity(t, f, "nohz_full"), Severity::warn);
  f.cmdline = *f.cmdline + " nohz_full=1-55 rcu_nocbs=1-55";
  EXPECT_EQ(severity(t, f, "nohz_full"), Severity::ok);
}

TEST(Doctor, GpusOfUnknownLocalityWarn) {
  Report r3 = judge(example("cloud-vm-unknown-locality"), clean());
  const CheckResult& c = result(r3, "numa_layout");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.why.find("numa_node -1"), std::string::npos);
}

TEST(Doctor, SeveralNodesPerPackageAreSaidNotFaulted) {
  Report r4 = judge(example("dgx-a100-nps4"), clean());
  const CheckResult& c = result(r4, "numa_layout");
  EXPECT_EQ(c.severity, Severity::ok);
  EXPECT_NE(c.why.find("4 per package (NPS4"), std::string::npos) << c.why;
}

TEST(Doctor, CpuLessNodesAreSaid) {
  Report r5 = judge(example("gh200"), clean());
  const CheckResult& c = result(r5, "numa_layout");
  EXPECT_NE(c.why.find("CPU-less node(s)"), std::string::npos) << c.why;
}

TEST(Doctor, ASlitThatPutsTheOtherPackageNearerWarns) {
  topo::Topology t = example("dgx-a100-nps4");
  ASSERT_EQ(t.distances.size(), 8u);
  EXPECT_EQ(severity(t, clean(), "numa_distances"), Severity::ok);
  t.distances[0][1] = 40;  // node 1 (package 0) farther from node 0 than node 4 (package 1)
  EXPECT_EQ(severity(t, clean(), "numa_distances"), Severity::warn);
}

TEST(Doctor, ANarrowLinkFailsASlowOneWarns) {
  topo::Topology t = example("dgx-h100");
  NodeFacts f = clean();
  f.links = {{"0000:18:00.0", 16, 16, 32.0, 32.0}, {"0000:1a:00.0", 16, 16, 32.0, 32.0}};
  EXPECT_EQ(severity(t, f, "pcie_links"), Severity::ok);
  f.links[0].speed = 2.5;  // an idle GPU's link drops its speed
  EXPECT_EQ(severity(t, f, "pcie_links"), Severity::warn);
  f.links[1].width = 8;
  Report r6 = judge(t, f);
  const CheckResult& c = result(r6, "pcie_links");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("NIC 0000:1a:00.0 x8 of x16"), std::string::npos) << c.why;
}

TEST(Doctor, ZoneReclaimWarnsOnSeveralNodes) {
  NodeFacts f = clean();
  f.zone_reclaim_mode = 1;
  EXPECT_EQ(severity(example("dgx-h100"), f, "zone_reclaim"), Severity::warn);
  EXPECT_EQ(severity(one_node(), f, "zone_reclaim"), Severity::ok);
}

TEST(Doctor, SynchronousHugepageCompactionWarns) {
  NodeFacts f = clean();
  f.thp_enabled = "always";
  f.thp_defrag = "always";
  EXPECT_EQ(severity(example("dgx-h100"), f, "thp_defrag"), Severity::warn);
  f.thp_enabled = "never";  // no huge pages, no compaction for them
  EXPECT_EQ(severity(example("dgx-h100"), f, "thp_defrag"), Severity::ok);
}

TEST(Doctor, SwapWarns) {
  NodeFacts f = clean();
  f.swap_total_kb = 8u << 20;
  Report r7 = judge(example("dgx-h100"), f);
  const CheckResult& c = result(r7, "swap");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.why.find("8192 MiB"), std::string::npos);
}

TEST(Doctor, SlurmWithoutABindingTaskPluginFails) {
  NodeFacts f = clean();
  f.slurm_conf = "/etc/slurm/slurm.conf";
  f.slurm_task_plugin = "";
  EXPECT_EQ(severity(example("dgx-h100"), f, "slurm_task_plugin"), Severity::fail);
  f.slurm_task_plugin = "task/none";
  EXPECT_EQ(severity(example("dgx-h100"), f, "slurm_task_plugin"), Severity::fail);
  f.slurm_task_plugin = "task/affinity,task/cgroup";
  EXPECT_EQ(severity(example("dgx-h100"), f, "slurm_task_plugin"), Severity::ok);
}

TEST(DoctorReader, SlurmConfKeysAreCaseInsensitiveAndTheLastWins) {
  EXPECT_EQ(slurm_conf_value("ClusterName=c\n#TaskPlugin=task/none\ntaskplugin=task/affinity # bind\n", "TaskPlugin"), "task/affinity");
  EXPECT_EQ(slurm_conf_value("TaskPlugin=task/none\nTaskPlugin=task/cgroup,task/affinity\n", "TaskPlugin"), "task/cgroup,task/affinity");
  EXPECT_EQ(slurm_conf_value("NodeName=n1 CPUs=8\n", "TaskPlugin"), "");
}

TEST(DoctorReader, ReadsEveryFactFromATreeAndSaysWhatItCannotRead) {
  testing::FakeTree tree;
  tree.file("proc/sys/kernel/numa_balancing", "1\n");
  tree.file("proc/sys/vm/zone_reclaim_mode", "0\n");
  tree.file("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
  tree.file("sys/kernel/mm/transparent_hugepage/defrag", "always defer [defer+madvise] madvise never\n");
  tree.file("proc/meminfo", "MemTotal:       16384000 kB\nSwapTotal:       2097148 kB\n");
  tree.file("proc/cmdline", "ro quiet isolcpus=2-3\n");
  tree.file("sys/devices/system/cpu/isolated", "2-3\n");
  tree.file("sys/devices/system/cpu/nohz_full", "\n");
  tree.file("sys/bus/pci/devices/0000:18:00.0/current_link_width", "8\n");
  tree.file("sys/bus/pci/devices/0000:18:00.0/max_link_width", "16\n");
  tree.file("sys/bus/pci/devices/0000:18:00.0/current_link_speed", "2.5 GT/s PCIe\n");
  tree.file("sys/bus/pci/devices/0000:18:00.0/max_link_speed", "32.0 GT/s PCIe\n");
  tree.file("etc/slurm/slurm.conf", "TaskPlugin=task/none\n");
  tree.dir("sys/bus/pci/devices/0000:2a:00.0/max_link_width");  // a directory where a file should be: unreadable
  auto root = sys::open_fsroot(tree.root());
  ASSERT_TRUE(root);
  NodeFacts f = read_node_facts(**root, example("dgx-h100"), {});
  EXPECT_EQ(f.numa_balancing, 1);
  EXPECT_EQ(f.zone_reclaim_mode, 0);
  EXPECT_EQ(f.thp_enabled, "always");
  EXPECT_EQ(f.thp_defrag, "defer+madvise");
  EXPECT_EQ(f.swap_total_kb, 2097148u);
  EXPECT_EQ(f.isolated, CpuSet::range(2, 3));
  EXPECT_EQ(f.nohz_full, CpuSet{});
  ASSERT_FALSE(f.links.empty());
  EXPECT_EQ(f.links[0].width, 8u);
  EXPECT_EQ(f.links[0].max_width, 16u);
  EXPECT_EQ(f.links[0].speed, 2.5);
  EXPECT_EQ(f.links[0].max_speed, 32.0);
  EXPECT_FALSE(f.links[1].width);  // absent: unknown, no note
  EXPECT_EQ(f.slurm_task_plugin, "task/none");
  ASSERT_EQ(f.unreadable.size(), 1u);
  EXPECT_NE(f.unreadable[0].find("0000:2a:00.0/max_link_width"), std::string::npos) << f.unreadable[0];
  Report r = judge(example("dgx-h100"), f);
  EXPECT_EQ(r.worst(), Severity::fail);
}

TEST(DoctorRender, EveryCheckIsOneSeriesWithItsSeverity) {
  NodeFacts f = clean();
  f.swap_total_kb = 1024;
  Report r = judge(example("dgx-h100"), f);
  std::string m = render::doctor_metrics(r, "gpu\"01");
  EXPECT_NE(m.find("# TYPE gpubind_doctor_check gauge\n"), std::string::npos);
  EXPECT_NE(m.find("gpubind_doctor_check{node=\"gpu\\\"01\",check=\"swap\",severity=\"WARN\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("check=\"numa_balancing\",severity=\"OK\"} 1\n"), std::string::npos) << m;
  size_t series = 0;
  for (size_t at = m.find("gpubind_doctor_check{"); at != std::string::npos; at = m.find("gpubind_doctor_check{", at + 1)) ++series;
  EXPECT_EQ(series, r.results.size());
}

}  // namespace gpubind::doctor
