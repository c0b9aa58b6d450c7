// gpubind doctor's checks (doctor/doctor.hpp), one test per rule and its OK case, on hand-made
// facts and the example topologies; and the reader (doctor/reader.hpp) on fixture trees.
#include "doctor/doctor.hpp"

#include <gtest/gtest.h>

#include "../../support/fake_tree.hpp"
#include "../../support/test_machines.hpp"
#include "bind/spank_args.hpp"
#include "discover/source.hpp"
#include "doctor/reader.hpp"
#include "plan/slurm_node.hpp"
#include "render/doctor_render.hpp"

namespace gpubind::doctor {

namespace {

using testing::example;
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
  EXPECT_EQ(r.results.size(), 14u);  // no slurm.conf, no kubelet: slurm_task_plugin and kubelet not run, and said
  ASSERT_EQ(r.notes.size(), 3u);  // and no GPU runtime asked
  EXPECT_EQ(r.notes[0], "gpu_runtime: not checked");
  EXPECT_NE(r.notes[1].find("slurm_task_plugin: not checked"), std::string::npos);
  EXPECT_NE(r.notes[2].find("kubelet: not checked"), std::string::npos);
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

// A node of dgx-a100-nps4 in slurm.conf with these sockets, gres.conf's GPU lines as gres-conf
// wrote them for `written_for`, judged for `release`.
NodeFacts slurm_node(unsigned sockets, unsigned cores, const char* written_for, const char* release) {
  NodeFacts f = clean();
  f.slurm_conf = "/etc/slurm/slurm.conf";
  f.slurm_task_plugin = "task/affinity";
  f.slurm_node_found = true;
  f.slurm_sockets = sockets;
  f.slurm_cores_per_socket = cores;
  f.slurm_threads_per_core = 2;
  f.gres_conf = "/etc/slurm/gres.conf";
  topo::Topology t = example("dgx-a100-nps4");
  plan::SlurmNodePlan p = plan::plan_slurm_node(t, *plan::parse_slurm_version(written_for));
  for (const plan::SlurmGpuCores& g : p.gpus)
    f.gres_gpus.push_back({"/etc/slurm/gres.conf:" + std::to_string(g.gpu + 1), "/dev/nvidia" + std::to_string(t.gpus[g.gpu].index),
                           "nvidia_a100-sxm4-40gb", g.cores.to_list()});
  if (release) f.slurm_version = release;
  return f;
}

// Slurm 24.11 drains a node whose GPU Cores= are part of a socket: the NPS4 lines written for
// 22.05 (a GPU's NUMA node, a quarter of a package) on a node of two 64-core sockets.
TEST(Doctor, SlurmGresPartOfASocketFailsFrom2411WithSlurmsOwnWords) {
  NodeFacts f = slurm_node(2, 64, "22.05", "slurm 24.11.5");
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("Slurm 24.11.5 drains this node: /etc/slurm/gres.conf:1 Cores=48-63 (\"doesn't match socket boundaries\": socket 0 "
                       "is cores 0-63), and 7 more"),
            std::string::npos)
      << c.why;
  EXPECT_NE(c.fix.find("gpubind slurm gres-conf --slurm-version 24.11.5 "), std::string::npos) << c.fix;
  EXPECT_NE(c.fix.find("numa_node_as_socket: 8 NUMA node sockets of 16 cores"), std::string::npos) << c.fix;
  f.slurm_version = "22.05.8";  // before 24.11 Slurm takes them
  EXPECT_EQ(severity(example("dgx-a100-nps4"), f, "slurm_gres"), Severity::ok);
}

TEST(Doctor, SlurmGresAsGresConfWroteThemOnItsNodeLineIsOk) {
  NodeFacts f = slurm_node(8, 16, "25.11", "25.11.4");
  f.slurm_node_parameters = "numa_node_as_socket";
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::ok) << c.why;
  EXPECT_NE(c.why.find("8 GPU core lists, each holding its GPU's own cores; Slurm 25.11.4 takes each on 8 sockets of 16 cores"),
            std::string::npos)
      << c.why;
}

// Parameters= on a NodeName line is 25.11's: 24.11 counts packages whatever it says, so the line's
// 8 sockets are not what slurmd counts.
TEST(Doctor, SlurmGresNodeParametersAreNot2411sSoTheShapeDiffers) {
  NodeFacts f = slurm_node(8, 16, "25.11", "24.11");
  f.slurm_node_parameters = "numa_node_as_socket";
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("its NodeName= line gives 8 sockets of 16 cores (2 threads), slurmd counts 2 packages of 64"), std::string::npos)
      << c.why;
  f.slurmd_parameters = "numa_node_as_socket";  // 24.11's way: for every node
  EXPECT_EQ(severity(example("dgx-a100-nps4"), f, "slurm_gres"), Severity::ok);
}

TEST(Doctor, SlurmGresCoresThatLeaveOutTheGpusOwnWarn) {
  NodeFacts f = slurm_node(8, 16, "25.11", "25.11");
  f.slurm_node_parameters = "numa_node_as_socket";
  f.gres_gpus[0].cores = "0-15";  // GPU 0's own are 48-63
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.why.find("/etc/slurm/gres.conf:1 Cores=0-15 leaves out the GPU's own cores 48-63"), std::string::npos) << c.why;
}

// AutoDetect=nvml without Cores=: slurmd takes each GPU's own cores, judged the same way.
TEST(Doctor, SlurmGresAutoDetectIsJudgedByTheGpusOwnCores) {
  NodeFacts f = slurm_node(2, 64, "22.05", "25.11");
  for (NodeFacts::GresGpu& g : f.gres_gpus) g.cores.clear();
  f.gres_autodetect = "nvml";
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("AutoDetect=nvml gives GPU 0 Cores=48-63"), std::string::npos) << c.why;
}

TEST(Doctor, SlurmGresOfAnUnknownReleaseIsJudgedByTheNewestRuleAndSaysSo) {
  NodeFacts f = slurm_node(2, 64, "22.05", nullptr);
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("26.05's rule drains this node"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("the release is unknown, --slurm-version names it"), std::string::npos) << c.why;
}

// RestrictedCoresPerGPU on the node gres-conf wrote for 25.11 (8 NUMA-node sockets of 16 cores, a
// pair of GPUs on every other socket): each GPU's lowest free cores in turn, none of those
// CoreSpecCount keeps (the last of each socket).
TEST(Doctor, SlurmGresRestrictedCoresPerGpuSaysWhichCoresAsScontrolShowsThem) {
  NodeFacts f = slurm_node(8, 16, "25.11", "25.11");
  f.slurm_node_parameters = "numa_node_as_socket";
  f.slurm_restricted_cores_per_gpu = 2;
  f.slurm_core_spec_count = 8;
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::ok) << c.why;
  EXPECT_NE(c.why.find("CoreSpecCount=8 keeps cores 15,31,47,63,79,95,111,127 from jobs (CPUSpecList=30-31,62-63,"), std::string::npos)
      << c.why;
  // GPUs 0 and 1 share cores 48-63: GPU 0 gets 48-49, GPU 1 50-51.
  EXPECT_NE(c.why.find("RestrictedCoresPerGPU=2 keeps cores 16-19,48-51,80-83,112-115 for GPU jobs"), std::string::npos) << c.why;
}

// More restricted cores than a GPU line's Cores= has free: slurmctld sets the node DOWN.
TEST(Doctor, SlurmGresRestrictedCoresPerGpuBeyondALinesCoresFails) {
  NodeFacts f = slurm_node(8, 16, "25.11", "25.11");
  f.slurm_node_parameters = "numa_node_as_socket";
  f.slurm_restricted_cores_per_gpu = 8;
  f.slurm_core_spec_count = 8;  // one core of each socket kept: 15 left for two GPUs
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("RestrictedCoresPerGPU=8: /etc/slurm/gres.conf:2 Cores=48-63 has 7 of the 8 cores its 1 GPU(s) need"),
            std::string::npos)
      << c.why;
  f.slurm_core_spec_count.reset();
  EXPECT_EQ(severity(example("dgx-a100-nps4"), f, "slurm_gres"), Severity::ok);
  f.slurm_version = "23.11";  // before 24.05 Slurm does not read the key at all
  Report before = judge(example("dgx-a100-nps4"), f);
  const CheckResult& old = result(before, "slurm_gres");
  EXPECT_EQ(old.severity, Severity::fail);
  EXPECT_NE(old.why.find("Slurm 23.11 does not read RestrictedCoresPerGPU= (24.05 on)"), std::string::npos) << old.why;
}

// Core specialization that takes every core of a GPU's Cores=: its jobs run on other sockets.
TEST(Doctor, SlurmGresSpecializedCoresThatTakeAGpusEveryCoreFail) {
  NodeFacts f = slurm_node(8, 16, "25.11", "25.11");
  f.slurm_node_parameters = "numa_node_as_socket";
  f.slurm_cpu_spec_list = "96-127";  // Slurm's CPU ids of cores 48-63, GPU 0's socket
  Report r = judge(example("dgx-a100-nps4"), f);
  const CheckResult& c = result(r, "slurm_gres");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("CpuSpecList=96-127 keeps every core of /etc/slurm/gres.conf:1 Cores=48-63 from jobs"), std::string::npos) << c.why;
  f.slurm_cpu_spec_list = "96-125";
  EXPECT_EQ(severity(example("dgx-a100-nps4"), f, "slurm_gres"), Severity::ok);
}

TEST(Doctor, SlurmGresIsNotCheckedWithoutGpuLinesForThisNode) {
  NodeFacts f = slurm_node(2, 64, "22.05", "25.11");
  f.gres_gpus.clear();
  Report r = judge(example("dgx-a100-nps4"), f);
  EXPECT_TRUE(std::none_of(r.results.begin(), r.results.end(), [](const CheckResult& x) { return x.check == "slurm_gres"; }));
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.starts_with("slurm_gres: not checked"); }));
}

TEST(Doctor, TaskNoneWithGpubindsPluginBindingEveryStepIsBoundAndWithoutADefaultWarns) {
  // TaskPlugin=task/none (Slurm's default) and plugstack.conf loading gpubind_spank.so default=closest:
  // the plugin binds every task, so the node is bound (a FAIL drained every such node).
  NodeFacts f = clean();
  f.slurm_conf = "/etc/slurm/slurm.conf";
  f.slurm_task_plugin = "";
  f.gpubind_spank = NodeFacts::SpankPlugin{"/etc/slurm/plugstack.conf:6", "closest"};
  Report r = judge(example("dgx-h100"), f);
  EXPECT_EQ(result(r, "slurm_task_plugin").severity, Severity::ok);
  EXPECT_EQ(result(r, "slurm_task_plugin").why, "TaskPlugin=task/none (unset) in /etc/slurm/slurm.conf; gpubind's SPANK plugin binds every step "
                                                 "(default=closest, /etc/slurm/plugstack.conf:6)");
  f.gpubind_spank->site_default = "";  // users opt in with --gpubind
  EXPECT_EQ(severity(example("dgx-h100"), f, "slurm_task_plugin"), Severity::warn);
  f.gpubind_spank->site_default = "none";
  EXPECT_EQ(severity(example("dgx-h100"), f, "slurm_task_plugin"), Severity::warn);
}

TEST(Doctor, HousekeepingCpusKeptFromJobsButNotGivenToServicesWarn) {
  NodeFacts f = clean();
  f.slurm_conf = "/etc/slurm/slurm.conf";
  f.slurm_task_plugin = "task/affinity";
  f.slurm_cpu_spec_list = "0-1";  // Slurm's CPU ids 0 and 1: core 0's two threads, CPUs 0 and 112 on the DGX H100
  Report r = judge(example("dgx-h100"), f);
  const CheckResult& c = result(r, "housekeeping");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.why.find("CpuSpecList=0-1 (CPUs 0,112)"), std::string::npos) << c.why;
  EXPECT_NE(c.fix.find("CPUAffinity=0,112"), std::string::npos) << c.fix;
  f.systemd_cpu_affinity = *CpuSet::parse_list("0,112");  // services where jobs never go: fine
  f.systemd_conf = "/etc/systemd/system.conf";
  EXPECT_EQ(severity(example("dgx-h100"), f, "housekeeping"), Severity::ok);
  f.systemd_cpu_affinity = CpuSet::range(0, 3);  // services on CPUs 1-3 too, which jobs get
  const CheckResult c2 = result(judge(example("dgx-h100"), f), "housekeeping");
  EXPECT_EQ(c2.severity, Severity::warn);
  EXPECT_NE(c2.why.find("CPUs 1-3 of them go to jobs too"), std::string::npos) << c2.why;
}

TEST(Doctor, HousekeepingSlurmCpuIdsFollowSlurmsCoreOrderNotTheOsNumbers) {
  // Round-robin numbering: core 1 is CPUs 2 and 3 in one package... Slurm's CPU ids 2-3 are its core 1.
  topo::Topology t = *discover::load_topology("Package:2 Core:2 PU:2");
  NodeFacts f = clean();
  f.slurm_conf = "/etc/slurm/slurm.conf";
  f.slurm_task_plugin = "task/affinity";
  f.slurm_cpu_spec_list = "2,9";  // core 1, and an id beyond the machine's 8
  std::vector<unsigned> logical = topo::logical_core_ids(t);
  CpuSet expected;
  for (size_t i = 0; i < t.cores.size(); ++i)
    if (logical[i] == 1) expected = t.cores[i].pus;
  const CheckResult c = result(judge(t, f), "housekeeping");
  EXPECT_NE(c.why.find("(CPUs " + expected.to_list() + ")"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("CpuSpecList ids 9 are beyond"), std::string::npos) << c.why;
}

TEST(Doctor, HousekeepingThatHoldsAGpusWholeNodeFails) {
  NodeFacts f = clean();
  f.kubelet = k8s::KubeletConfig{};
  f.kubelet->cpu_manager_policy = "static";
  f.kubelet->topology_manager_policy = "single-numa-node";
  f.kubelet->reserved_system_cpus = *CpuSet::parse_list("0-55,112-167");  // node 0, GPUs 0-3's
  const CheckResult c = result(judge(example("dgx-h100"), f), "housekeeping");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("NUMA node 0"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("0000:18:00.0"), std::string::npos) << c.why;
}

TEST(Doctor, HousekeepingServicesConfinedOnASchedulerNodeThatMayGiveThemToJobsWarn) {
  NodeFacts f = clean();
  f.systemd_cpu_affinity = CpuSet::range(0, 1);
  f.systemd_conf = "/etc/systemd/system.conf.d/housekeeping.conf";
  EXPECT_EQ(severity(example("dgx-h100"), f, "housekeeping"), Severity::ok);  // no scheduler: nothing gives them away
  f.slurm_conf = "/etc/slurm/slurm.conf";
  f.slurm_task_plugin = "task/affinity";
  const CheckResult c = result(judge(example("dgx-h100"), f), "housekeeping");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.fix.find("CpuSpecList="), std::string::npos) << c.fix;
  // CoreSpecCount=1: slurmctld keeps the last core of the last socket (Slurm's core 111, CPUs 111
  // and 223), not the services' CPUs 0-1, which still go to jobs.
  f.slurm_core_spec_count = 1;
  const CheckResult spec = result(judge(example("dgx-h100"), f), "housekeeping");
  EXPECT_EQ(spec.severity, Severity::warn);
  EXPECT_NE(spec.why.find("CPUs 0-1 of them go to jobs too (Slurm's CoreSpecCount=1 (cores 111, CPUs 111,223) keep 111,223)"),
            std::string::npos)
      << spec.why;
  f.systemd_cpu_affinity = *CpuSet::parse_list("111,223");
  EXPECT_EQ(severity(example("dgx-h100"), f, "housekeeping"), Severity::ok);
}

TEST(Doctor, InterruptsOnAnotherNodeWarnAndOnTheDevicesNodeAreFine) {
  NodeFacts f = clean();
  f.irqs = {{"0000:18:00.0", {{140, CpuSet::range(3, 3)}, {141, CpuSet::range(60, 60)}}},  // GPU 0 (node 0): 141 on node 1
            {"0000:9c:00.0", {{200, CpuSet::range(70, 70)}}}};                          // NIC mlx5_4 (node 1): local
  const CheckResult c = result(judge(example("dgx-h100"), f), "irq_affinity");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.why.find("1 of 3 interrupt(s)"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("GPU 0000:18:00.0 IRQ 141 on CPUs 60 (node 1, the device's 0)"), std::string::npos) << c.why;
  EXPECT_NE(c.fix.find("start irqbalance"), std::string::npos) << c.fix;
  f.irqbalance.running = true;
  f.irqbalance.banned = CpuSet::range(0, 55);
  const CheckResult c2 = result(judge(example("dgx-h100"), f), "irq_affinity");
  EXPECT_NE(c2.why.find("irqbalance is running, CPUs 0-55 banned"), std::string::npos) << c2.why;
  EXPECT_NE(c2.fix.find("irqbalance places"), std::string::npos) << c2.fix;
  f.irqs[0].irqs[1].cpus = CpuSet::range(4, 4);
  EXPECT_EQ(severity(example("dgx-h100"), f, "irq_affinity"), Severity::ok);
}

TEST(Doctor, InterruptsOfUnknownPlaceOrWithoutProcIrqAreNotJudged) {
  NodeFacts f = clean();
  f.irqs = {{"0000:18:00.0", {{140, std::nullopt}}}};
  EXPECT_EQ(severity(example("dgx-h100"), f, "irq_affinity"), Severity::ok);
  f.irqs[0].irqs[0].cpus = CpuSet::range(60, 60);
  f.proc_irq = false;
  const CheckResult c = result(judge(example("dgx-h100"), f), "irq_affinity");
  EXPECT_EQ(c.severity, Severity::ok);
  EXPECT_NE(c.why.find("no /proc/irq"), std::string::npos) << c.why;
  topo::Topology t = example("dgx-h100");
  t.gpus[0].numa.reset();  // the GPU's node unknown: nothing to judge against
  f.proc_irq = true;
  EXPECT_EQ(severity(t, f, "irq_affinity"), Severity::ok);
}

TEST(Doctor, AcsRedirectOnASwitchPortWarns) {
  NodeFacts f = clean();
  f.bridges = {{"0000:16:00.0", {"0000:18:00.0", "0000:1a:00.0"}, true, uint16_t(0x001d)}};  // SV, RR, CR, UF
  const CheckResult c = result(judge(example("dgx-h100"), f), "pcie_acs");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.why.find("0000:16:00.0 (above 0000:18:00.0, 0000:1a:00.0)"), std::string::npos) << c.why;
  f.bridges[0].acs_control = uint16_t(0x0011);  // SV and UF only: peers turn in the switch
  EXPECT_EQ(severity(example("dgx-h100"), f, "pcie_acs"), Severity::ok);
  f.bridges[0].acs_control = uint16_t(0x0004);
  f.bridges[0].config_read = false;  // not root: not known, said
  const CheckResult c2 = result(judge(example("dgx-h100"), f), "pcie_acs");
  EXPECT_EQ(c2.severity, Severity::ok);
  EXPECT_NE(c2.why.find("root only"), std::string::npos) << c2.why;
}

TEST(Doctor, IommuTranslatingTheGpusDmaWarnsPassthroughIsFine) {
  NodeFacts f = clean();
  f.cmdline = "ro intel_iommu=on";
  f.iommu = {{"0000:18:00.0", 23u, "DMA-FQ"}, {"0000:1a:00.0", 24u, "DMA"}};
  const CheckResult c = result(judge(example("dgx-h100"), f), "iommu");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.why.find("0000:18:00.0, 0000:1a:00.0"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("(boot: intel_iommu=on)"), std::string::npos) << c.why;
  EXPECT_NE(c.fix.find("iommu=pt"), std::string::npos);
  f.iommu = {{"0000:18:00.0", 23u, "identity"}, {"0000:1a:00.0", std::nullopt, ""}};
  EXPECT_EQ(severity(example("dgx-h100"), f, "iommu"), Severity::ok);
}

TEST(Doctor, ACgroupWithoutAGpusMemoryNodeFails) {
  NodeFacts f = clean();
  f.cgroup_mems = CpuSet::range(0, 0);
  f.cgroup_mems_file = "/sys/fs/cgroup/job/cpuset.mems.effective";
  const CheckResult c = result(judge(example("dgx-h100"), f), "cgroup_mems");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("not on node 1 (GPU 0000:9a:00.0, 0000:ab:00.0, 0000:ba:00.0, 0000:db:00.0)"), std::string::npos) << c.why;
  f.cgroup_mems = CpuSet::range(0, 1);
  EXPECT_EQ(severity(example("dgx-h100"), f, "cgroup_mems"), Severity::ok);
}

TEST(Doctor, KubeletWithoutStaticCpusOrWithUnalignedTopologyWarns) {
  NodeFacts f = clean();
  f.kubelet = k8s::KubeletConfig{};  // the kubelet's defaults: none, none
  f.kubelet_config = "/var/lib/kubelet/config.yaml";
  const CheckResult c = result(judge(example("dgx-h100"), f), "kubelet");
  EXPECT_EQ(c.severity, Severity::warn);
  EXPECT_NE(c.fix.find("cpuManagerPolicy: static"), std::string::npos);
  f.kubelet->cpu_manager_policy = "static";
  f.kubelet->topology_manager_policy = "best-effort";
  EXPECT_EQ(severity(example("dgx-h100"), f, "kubelet"), Severity::warn);
  EXPECT_EQ(severity(one_node(), f, "kubelet"), Severity::ok);  // one node: nothing to align
  f.kubelet->topology_manager_policy = "single-numa-node";
  EXPECT_EQ(severity(example("dgx-h100"), f, "kubelet"), Severity::ok);
}

// The CPU DRA driver (dra.cpu) gives exclusive CPUs on this node: the CPU manager must be off, and
// its own configuration is judged instead (the DGX A100 NPS4 example: 4 NUMA nodes per package).
TEST(Doctor, KubeletBesideTheCpuDraDriverJudgesTheDriver) {
  NodeFacts f = clean();
  f.kubelet = k8s::KubeletConfig{};
  f.kubelet_config = "/var/lib/kubelet/config.yaml";
  f.cpu_driver_seen = "/var/lib/kubelet/plugins_registry/dra.cpu-reg.sock";
  const topo::Topology& nps4 = example("dgx-a100-nps4");
  const CheckResult unread = result(judge(nps4, f), "kubelet");  // cpuManagerPolicy none: what the driver needs
  EXPECT_EQ(unread.severity, Severity::ok);
  EXPECT_NE(unread.why.find("its configuration not read (no dracpu process visible here)"), std::string::npos) << unread.why;
  f.cpu_driver = k8s::CpuDriverConfig{};
  f.cpu_driver_source = "/proc/7/cmdline";
  EXPECT_EQ(severity(nps4, f, "kubelet"), Severity::ok);  // grouped by NUMA node
  f.cpu_driver->group_by = "socket";
  const CheckResult wide = result(judge(nps4, f), "kubelet");
  EXPECT_EQ(wide.severity, Severity::warn);
  EXPECT_NE(wide.why.find("a group holds NUMA nodes 0,1,2,3"), std::string::npos) << wide.why;
  EXPECT_NE(wide.fix.find("groupBy: numanode"), std::string::npos);
  EXPECT_EQ(severity(example("dgx-h100"), f, "kubelet"), Severity::ok);  // one NUMA node per socket: a socket group is a node
  f.cpu_driver->group_by = "numanode";
  f.cpu_driver->reserved_cpus = *CpuSet::parse_list("48-63,176-191");  // node 3, GPUs 0 and 1
  EXPECT_NE(result(judge(nps4, f), "kubelet").why.find("its reserved CPUs hold every CPU of NUMA node 3"), std::string::npos);
  f.cpu_driver->reserved_cpus = *CpuSet::parse_list("0-1");
  f.kubelet->reserved_system_cpus = *CpuSet::parse_list("0-3");
  EXPECT_NE(result(judge(nps4, f), "kubelet").why.find("the kubelet's reservedSystemCPUs 0-3 are not as many"), std::string::npos);
  f.kubelet->reserved_system_cpus = *CpuSet::parse_list("0,128");
  EXPECT_EQ(severity(nps4, f, "kubelet"), Severity::ok);
  topo::Topology nine = nps4;
  nine.numa_nodes.push_back({8, {}, 0, 0, "HBM"});
  f.kubelet->topology_manager_policy = "single-numa-node";
  const CheckResult refused = result(judge(nine, f), "kubelet");  // the kubelet would not start
  EXPECT_EQ(refused.severity, Severity::fail);
  EXPECT_EQ(refused.fix, "topologyManagerPolicyOptions max-allowable-numa-nodes: \"9\"");
  f.kubelet->cpu_manager_policy = "static";
  const CheckResult both = result(judge(nps4, f), "kubelet");
  EXPECT_EQ(both.severity, Severity::fail);
  EXPECT_EQ(both.fix, "cpuManagerPolicy: none (the driver gives exclusive CPUs through its claims)");
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
  NodeFacts f = *read_node_facts(**root, example("dgx-h100"), {});
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

// A plugin file's bytes as the build writes them: the release marker among other bytes.
std::string built_plugin(const std::string& release) {
  using namespace std::string_literals;
  return "\x7f"
         "ELF\2\1\1"s +
         std::string(64, '\0') + std::string(bind::kSpankBuiltFor) + release + "\0tail"s;
}

// A relative plugin name is looked up in PluginDir's directories in turn (Slurm's plugin search),
// else in the directories packages install to; the file's release is read without loading it.
TEST(DoctorReader, TheSpankPluginIsFoundInPluginDirAndSaysItsRelease) {
  testing::FakeTree tree;
  tree.file("etc/slurm/slurm.conf", "TaskPlugin=task/affinity\nPluginDir=/opt/slurm/a:/opt/slurm/lib\n");
  tree.file("etc/slurm/plugstack.conf", "optional gpubind_spank.so default=closest\n");
  tree.file("opt/slurm/lib/gpubind_spank.so", built_plugin("25.11.4"));
  tree.file("usr/lib64/slurm/gpubind_spank.so", built_plugin("22.05.8"));  // not searched: PluginDir is set
  auto root = sys::open_fsroot(tree.root());
  ASSERT_TRUE(root);
  NodeFacts f = *read_node_facts(**root, example("dgx-h100"), {});
  ASSERT_TRUE(f.gpubind_spank);
  EXPECT_FALSE(f.gpubind_spank->required);
  EXPECT_EQ(f.gpubind_spank->file, "/opt/slurm/lib/gpubind_spank.so");
  EXPECT_EQ(f.gpubind_spank->built_for, "25.11.4");
  tree.file("etc/slurm/slurm.conf", "TaskPlugin=task/affinity\n");  // no PluginDir: the packages' directories
  f = *read_node_facts(**root, example("dgx-h100"), {});
  EXPECT_EQ(f.gpubind_spank->file, "/usr/lib64/slurm/gpubind_spank.so");
  EXPECT_EQ(f.gpubind_spank->built_for, "22.05.8");
}

// Slurm loads a SPANK plugin only into the release series it was built for: the patch level may
// differ, the major or minor may not.
TEST(Doctor, SlurmSpankBuiltForAnotherSeriesFails) {
  NodeFacts f = clean();
  f.slurm_conf = "/etc/slurm/slurm.conf";
  f.slurm_task_plugin = "task/affinity";
  f.gpubind_spank = NodeFacts::SpankPlugin{"/etc/slurm/plugstack.conf:1",       "closest",          true,     "gpubind_spank.so",
                                           "/usr/lib64/slurm/gpubind_spank.so", "/usr/lib64/slurm", "22.05.8"};
  f.slurm_version = "25.11.4";
  Report r = judge(example("dgx-h100"), f);
  const CheckResult& c = result(r, "slurm_spank");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("/usr/lib64/slurm/gpubind_spank.so is built for Slurm 22.05.8 and this node runs 25.11.4: Slurm refuses it "
                       "(\"Incompatible Slurm plugin\"), so srun refuses every job step here (the line says required)"),
            std::string::npos)
      << c.why;
  EXPECT_NE(c.fix.find("SLURM_SPANK_INCLUDE_DIR"), std::string::npos) << c.fix;
  f.slurm_version = "22.05.11";  // another patch level of the same series: loaded
  EXPECT_EQ(severity(example("dgx-h100"), f, "slurm_spank"), Severity::ok);
  f.slurm_version.reset();  // unknown release: said, not judged
  EXPECT_EQ(severity(example("dgx-h100"), f, "slurm_spank"), Severity::ok);
  f.gpubind_spank->built_for.reset();
  EXPECT_EQ(severity(example("dgx-h100"), f, "slurm_spank"), Severity::warn);
}

TEST(Doctor, SlurmSpankPluginNotFoundFailsSayingWhatTheLineMeans) {
  NodeFacts f = clean();
  f.slurm_conf = "/etc/slurm/slurm.conf";
  f.slurm_task_plugin = "task/affinity";
  f.gpubind_spank = NodeFacts::SpankPlugin{"/etc/slurm/plugstack.conf:1", "", false, "gpubind_spank.so", "", "/opt/slurm/lib", {}};
  Report r = judge(example("dgx-h100"), f);
  const CheckResult& c = result(r, "slurm_spank");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NE(c.why.find("loads gpubind_spank.so, which is not in /opt/slurm/lib: no step is bound (the line says optional)"),
            std::string::npos)
      << c.why;
}

TEST(DoctorReader, ThePluginStackIsPlugStackConfigElseBesideSlurmConfFollowingIncludes) {
  testing::FakeTree tree;
  tree.file("etc/slurm/slurm.conf", "TaskPlugin=task/none\n");
  tree.file("etc/slurm/plugstack.conf", "required /usr/lib/slurm/other.so\ninclude plugstack.conf.d/*.conf\n");
  tree.file("etc/slurm/plugstack.conf.d/10-x11.conf", "optional x11.so\n");
  tree.file("etc/slurm/plugstack.conf.d/50-gpubind.conf",
            "#optional gpubind_spank.so default=numa\n\toptional\t/usr/lib/slurm/gpubind_spank.so default=closest mem=preferred # site\n");
  tree.file("etc/slurm/plugstack.conf.d/README", "optional gpubind_spank.so default=socket\n");  // not *.conf: not included
  tree.file("usr/lib/slurm/gpubind_spank.so", built_plugin("22.05.8"));
  auto root = sys::open_fsroot(tree.root());
  ASSERT_TRUE(root);
  NodeFacts f = *read_node_facts(**root, example("dgx-h100"), {});
  ASSERT_TRUE(f.gpubind_spank);
  EXPECT_EQ(f.gpubind_spank->where, "/etc/slurm/plugstack.conf.d/50-gpubind.conf:2");
  EXPECT_EQ(f.gpubind_spank->site_default, "closest");
  EXPECT_EQ(judge(example("dgx-h100"), f).worst() == Severity::fail, false);

  tree.file("etc/slurm/slurm.conf", "TaskPlugin=task/none\nPlugStackConfig=/etc/slurm/spank/stack.conf\n");
  tree.file("etc/slurm/spank/stack.conf", "optional gpubind_spank.so default=wibble\ninclude /etc/slurm/spank/stack.conf\n");
  NodeFacts g = *read_node_facts(**root, example("dgx-h100"), {});
  EXPECT_FALSE(g.gpubind_spank);  // arguments the plugin refuses: it does not load, said
  ASSERT_FALSE(g.unreadable.empty());
  EXPECT_EQ(g.unreadable[0].rfind("/etc/slurm/spank/stack.conf:1: gpubind_spank.so would not load: ", 0), 0u) << g.unreadable[0];
  EXPECT_NE(g.unreadable.back().find("includes nested deeper than 8 files"), std::string::npos) << g.unreadable.back();
  EXPECT_EQ(severity(example("dgx-h100"), g, "slurm_task_plugin"), Severity::fail);
  // A glob that matches its own directory's files, the including file among them: bounded, said once.
  tree.file("etc/slurm/spank/stack.conf", "include /etc/slurm/spank/*\n");
  tree.file("etc/slurm/spank/a", "include /etc/slurm/spank/*\n");
  tree.file("etc/slurm/spank/b", "include /etc/slurm/spank/*\n");
  NodeFacts h = *read_node_facts(**root, example("dgx-h100"), {});
  EXPECT_EQ(std::count_if(h.unreadable.begin(), h.unreadable.end(), [](const std::string& u) { return u.find("more than 64 plugin stack files") != std::string::npos; }), 1);
}

TEST(DoctorReader, ANamedSlurmConfOrKubeletConfigThatCannotBeReadIsAnErrorNotANote) {
  testing::FakeTree tree;
  tree.file("etc/slurm/slurm.conf", "TaskPlugin=task/affinity\n");
  tree.file("etc/kubelet.json", "[1, 2]\n");
  auto root = sys::open_fsroot(tree.root());
  ASSERT_TRUE(root);
  ReaderOptions o;
  o.slurm_conf = "/etc/slurm/slurm.cnf";  // mistyped
  EXPECT_TRUE(read_node_facts(**root, example("dgx-h100"), o).ok());  // from $SLURM_CONF: absent is no Slurm here
  o.slurm_conf_named = true;
  auto named = read_node_facts(**root, example("dgx-h100"), o);
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.error().message(), "slurm.conf " + tree.root() + "/etc/slurm/slurm.cnf: No such file or directory");
  o.slurm_conf = "/etc/slurm/slurm.conf";
  o.kubelet_config = "/etc/kubelet.yaml";
  o.kubelet_config_named = true;
  auto kubelet = read_node_facts(**root, example("dgx-h100"), o);
  ASSERT_FALSE(kubelet.ok());
  EXPECT_EQ(kubelet.error().what, "kubelet configuration " + tree.root() + "/etc/kubelet.yaml");
  o.kubelet_config = "/etc/kubelet.json";  // read, but not a configuration
  EXPECT_FALSE(read_node_facts(**root, example("dgx-h100"), o).ok());
}

TEST(DoctorReader, GresConfGpuLinesAreThisNodesAndTheirCoresWhateverTheKeysCase) {
  std::string conf =
      "AutoDetect=off\n"
      "NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15 # node 0\n"
      "NodeName=gpu03 Name=gpu File=/dev/nvidia0 Cores=16-31\n"
      "Name=gpu\tFile=/dev/nvidia1 CPUs=32-47\n"
      "nodename=gpu02 name=mps Count=100\n";
  std::string autodetect;
  auto lines = gres_gpu_lines(conf, "/etc/slurm/gres.conf", "gpu02.cluster.example", autodetect);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].where, "/etc/slurm/gres.conf:2");
  EXPECT_EQ(lines[0].file, "/dev/nvidia0");
  EXPECT_EQ(lines[0].type, "a100");
  EXPECT_EQ(lines[0].cores, "0-15");
  EXPECT_EQ(lines[1].cores, "32-47");  // CPUs=, the older key
  EXPECT_EQ(autodetect, "off");
  EXPECT_EQ(lines[0].count, 1u);
}

TEST(DoctorReader, AGresLineNamesAsManyGpusAsItsFilesElseItsCount) {
  std::string conf =
      "Name=gpu File=/dev/nvidia[0-3] Cores=0-15\n"
      "Name=gpu Type=a100 Count=2 Cores=16-31\n"
      "Name=gpu File=/dev/nvidia[4-5],/dev/nvidia7 Count=9\n";
  std::string autodetect;
  auto lines = gres_gpu_lines(conf, "gres.conf", "gpu01", autodetect);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].count, 4u);
  EXPECT_EQ(lines[1].count, 2u);
  EXPECT_EQ(lines[2].count, 3u);  // the files, as slurmd counts them
}

TEST(DoctorReader, ThisNodesSlurmLineGivesItsSocketsCoresAndParameters) {
  std::string conf =
      "NodeName=DEFAULT ThreadsPerCore=2\nNodeName=gpu[01-04] Boards=2 Sockets=2 CoresPerSocket=16 Parameters=l3cache_as_socket\n";
  auto line = slurm_node_line(conf, "gpu03");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->boards, 2u);
  EXPECT_EQ(line->sockets, 2u);
  EXPECT_EQ(line->cores_per_socket, 16u);
  EXPECT_EQ(line->threads_per_core, 2u);
  EXPECT_EQ(line->parameters, "l3cache_as_socket");
  EXPECT_FALSE(line->restricted_cores_per_gpu);
  EXPECT_EQ(slurm_node_line("NodeName=gpu01 RestrictedCoresPerGPU=2\n", "gpu01")->restricted_cores_per_gpu, 2u);
}

TEST(DoctorReader, ThisNodesSlurmLineIsFoundThroughHostlistsAndDefaults) {
  std::string conf =
      "NodeName=DEFAULT CoreSpecCount=2\n"
      "NodeName=cpu[01-04] CPUs=64\n"
      "nodename=gpu[01-08]\tCpuSpecList=0,1 Gres=gpu:8 # the GPU nodes (a tab between words)\n"
      "PartitionName=gpu Nodes=gpu[01-08]\n";
  auto gpu = slurm_node_line(conf, "gpu03.cluster.example");  // slurmd's short name
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->pattern, "gpu[01-08]");
  EXPECT_EQ(gpu->cpu_spec_list, "0,1");
  EXPECT_EQ(gpu->core_spec_count, 2u);  // from NodeName=DEFAULT
  auto cpu = slurm_node_line(conf, "cpu02");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->cpu_spec_list, "");
  EXPECT_FALSE(slurm_node_line(conf, "login1"));
}

TEST(DoctorReader, AcsControlIsFoundOnTheExtendedCapabilityList) {
  std::string config(4096, '\0');
  auto put32 = [&](size_t at, uint32_t v) {
    for (size_t i = 0; i < 4; ++i) config[at + i] = char((v >> (8 * i)) & 0xff);
  };
  put32(0x100, 0x0001 | (1u << 16) | (0x148u << 20));  // AER, next at 0x148
  put32(0x148, 0x000d | (1u << 16) | (0u << 20));      // ACS, the last
  put32(0x14c, 0x005f | (0x001du << 16));              // capability 0x5f, control 0x1d
  EXPECT_EQ(acs_control(config), uint16_t(0x001d));
  put32(0x148, 0x0010 | (1u << 16));                   // no ACS on the list
  EXPECT_FALSE(acs_control(config));
  EXPECT_FALSE(acs_control(config.substr(0, 256)));    // what sysfs gives a user: no extended space
  put32(0x100, 0x0001 | (0x100u << 20));               // a list that loops
  EXPECT_FALSE(acs_control(config));
}

TEST(DoctorReader, ReadsInterruptsIommuSwitchPortsCgroupAndServices) {
  testing::FakeTree tree;
  std::string dev = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0";
  tree.dir(dev + "/msi_irqs/140");
  tree.dir(dev + "/msi_irqs/141");
  tree.link("sys/bus/pci/devices/0000:18:00.0", "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0");
  tree.link(dev + "/iommu_group", "../../../../../../kernel/iommu_groups/23");
  tree.file("sys/kernel/iommu_groups/23/type", "DMA-FQ\n");
  tree.file("proc/irq/140/effective_affinity_list", "3\n");
  tree.file("proc/irq/140/smp_affinity_list", "0-55\n");
  tree.file("proc/irq/141/smp_affinity_list", "60\n");  // no effective_affinity_list: the allowed list
  std::string config(4096, '\0');
  config[0x100] = 0x0d;  // ACS first, control 0x000c (RR, CR)
  config[0x106] = 0x0c;
  tree.file("sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/config", config);
  tree.file("sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/config", std::string(64, '\0'));
  tree.link("sys/bus/pci/devices/0000:16:00.0", "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0");
  tree.link("sys/bus/pci/devices/0000:17:00.0", "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0");
  tree.file("proc/77/comm", "irqbalance\n");
  tree.file("etc/default/irqbalance", "#IRQBALANCE_ONESHOT=\nIRQBALANCE_BANNED_CPULIST=\"0-3\"\n");
  tree.file("proc/self/cgroup", "0::/system.slice/doctor.service\n");
  tree.file("proc/self/mountinfo", "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  tree.file("sys/fs/cgroup/system.slice/doctor.service/cpuset.mems.effective", "0\n");
  tree.file("etc/systemd/system.conf", "[Manager]\n#CPUAffinity=1 2\n");
  tree.file("etc/systemd/system.conf.d/50-housekeeping.conf", "[Manager]\nCPUAffinity=0 112\n");
  auto root = sys::open_fsroot(tree.root());
  ASSERT_TRUE(root);
  NodeFacts f = *read_node_facts(**root, example("dgx-h100"), {});
  ASSERT_EQ(f.irqs.size(), 1u);
  ASSERT_EQ(f.irqs[0].irqs.size(), 2u);
  EXPECT_EQ(f.irqs[0].irqs[0].cpus, CpuSet::range(3, 3));
  EXPECT_EQ(f.irqs[0].irqs[1].cpus, CpuSet::range(60, 60));
  EXPECT_TRUE(f.irqbalance.running);
  EXPECT_EQ(f.irqbalance.banned, CpuSet::range(0, 3));
  EXPECT_FALSE(f.irqbalance.oneshot);
  ASSERT_EQ(f.iommu.size(), 1u);  // only the GPU has a sysfs directory here
  EXPECT_EQ(f.iommu[0].group, 23u);
  EXPECT_EQ(f.iommu[0].type, "DMA-FQ");
  ASSERT_EQ(f.bridges.size(), 2u);
  EXPECT_EQ(f.bridges[0].pci, "0000:16:00.0");
  EXPECT_TRUE(f.bridges[0].config_read);
  EXPECT_EQ(f.bridges[0].acs_control, uint16_t(0x000c));
  EXPECT_FALSE(f.bridges[1].config_read);  // 64 bytes: the header only
  EXPECT_EQ(f.bridges[1].below, std::vector<std::string>{"0000:18:00.0"});
  EXPECT_EQ(f.cgroup_mems, CpuSet::range(0, 0));
  EXPECT_EQ(f.systemd_cpu_affinity, *CpuSet::parse_list("0,112"));
  EXPECT_EQ(f.systemd_conf, "/etc/systemd/system.conf.d/50-housekeeping.conf");
  EXPECT_FALSE(f.kubelet);  // no config.yaml (read through the YAML module: tests/cli's doctor_every_problem)
  Report r = judge(example("dgx-h100"), f);
  EXPECT_EQ(result(r, "irq_affinity").severity, Severity::warn);
  EXPECT_EQ(result(r, "pcie_acs").severity, Severity::warn);
  EXPECT_EQ(result(r, "iommu").severity, Severity::warn);
  EXPECT_EQ(result(r, "cgroup_mems").severity, Severity::fail);
  EXPECT_EQ(result(r, "housekeeping").severity, Severity::ok);  // services confined, no scheduler to give their CPUs away
  EXPECT_TRUE(f.unreadable.empty()) << f.unreadable[0];
}

TEST(DoctorReader, NoProcIrqIsSaidOnceNotAnError) {
  testing::FakeTree tree;
  tree.dir("sys/bus/pci/devices/0000:18:00.0/msi_irqs/140");
  auto root = sys::open_fsroot(tree.root());
  ASSERT_TRUE(root);
  NodeFacts f = *read_node_facts(**root, example("dgx-h100"), {});
  EXPECT_FALSE(f.proc_irq);
  ASSERT_EQ(f.irqs.size(), 1u);
  EXPECT_FALSE(f.irqs[0].irqs[0].cpus);
  EXPECT_TRUE(f.unreadable.empty());
  EXPECT_NE(result(judge(example("dgx-h100"), f), "irq_affinity").why.find("no /proc/irq"), std::string::npos);
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
