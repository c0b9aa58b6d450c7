// k8s check's rules for CPUs the CPU DRA driver (dra.cpu) gives, for containers judged by their
// cgroups, for L3 (uncore cache) splits, NICs off the GPUs' node and the nearest-nodes hint; one
// test per rule and per fallback, on the DGX A100 NPS4 example: 8 NUMA nodes of 16 cores (SMT
// siblings n, n+128), 4 L3s of 4 cores each per node; GPU 0 (0000:07:00.0) and mlx5_0
// (0000:0c:00.0) on node 3, GPU 2 (0000:47:00.0) on node 1, GPU 4 (0000:87:00.0) on node 7.
#include <gtest/gtest.h>

#include "discover/source.hpp"
#include "k8s/judge.hpp"

namespace gpubind::k8s {
namespace dra_cpu_rules {

const topo::Topology& nps4() {
  static topo::Topology t = *discover::load_topology("example:dgx-a100-nps4");
  return t;
}

CpuSet cpu_set(const char* list) { return *CpuSet::parse_list(list); }

// A node running the CPU DRA driver: the kubelet's CPU manager off, no state file.
NodeState driver_node() {
  NodeState s;
  s.config.found = true;
  s.cpu_driver = "plugins_registry/dra.cpu-reg.sock";
  s.devices = DeviceCheckpoint{};
  return s;
}

// Pod `uid`'s container "trainer" with GPU `gpu` (NVIDIA's DRA name) and, with `cpu_device`, a
// dra.cpu device of the same claim whose CPUs the driver's CDI spec gives as `claim_cpus`.
void claim(NodeState& s, const std::string& uid, const std::string& gpu, const char* cpu_device, const char* claim_cpus) {
  std::string name = "ml/" + uid + "-devices";
  s.devices->assignments.push_back({uid, "trainer", "gpu.nvidia.com", {{gpu, std::nullopt}}, name, "node-a", "c-" + uid});
  if (cpu_device) s.devices->assignments.push_back({uid, "trainer", "dra.cpu", {{cpu_device, std::nullopt}}, name, "node-a", "c-" + uid});
  if (claim_cpus) s.cpu_claims["c-" + uid] = cpu_set(claim_cpus);
  s.pods[uid] = {uid, "ml", uid};
}

void cgroup(NodeState& s, const std::string& uid, const char* list) {
  s.container_cpus[{uid, "trainer"}] = {cpu_set(list), "/sys/fs/cgroup/kubepods.slice/x/cpuset.cpus.effective"};
}

std::vector<Verdict> verdicts(const Report& r, size_t i = 0) { return r.containers.at(i).verdicts(); }
const std::string& reason(const Report& r, size_t finding = 0) { return r.containers.at(0).findings.at(finding).reason; }

TEST(K8sDraCpu, AlignedWhenTheClaimsCpusAreOnTheGpusNode) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-0", "cpudevnuma003", "48-55,176-183");
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::aligned});
  EXPECT_TRUE(r.containers[0].exclusive);
  EXPECT_EQ(r.containers[0].cpus_source, "dra.cpu claim");
  ASSERT_EQ(r.containers[0].cpu_claims.size(), 1u);
  EXPECT_EQ(r.containers[0].cpu_claims[0].cpus_source, "CDI spec");
  EXPECT_FALSE(has_problems(r));
  for (const NodeFinding& f : r.findings) EXPECT_EQ(f.text.find("cpuManagerPolicy is none"), std::string::npos) << f.text;
}

TEST(K8sDraCpu, NoExclusiveCpusWithoutAClaimSaysTheDriversPool) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-0", nullptr, nullptr);
  cgroup(s, "p1", "0-47,176-255");
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::no_exclusive_cpus});
  EXPECT_EQ(reason(r).rfind("no dra.cpu claim: the CPU DRA driver keeps it on its shared pool, CPUs 0-47,176-255", 0), 0u) << reason(r);
}

TEST(K8sDraCpu, CrossNumaFromASocketGroupSaysTheGroupAndTheFix) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-2", "cpudevsocket000", "0-7,128-135");
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::cross_numa});
  EXPECT_NE(reason(r).find("took its CPUs from the driver's group cpudevsocket000 (NUMA nodes 0-3)"), std::string::npos) << reason(r);
  EXPECT_NE(reason(r).find("matchAttribute: resource.kubernetes.io/numaNode"), std::string::npos);
  EXPECT_NE(reason(r).find("groupBy: numanode"), std::string::npos);
}

TEST(K8sDraCpu, CrossNumaFromAnotherNodesGroupSaysNothingTiedThem) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-2", "cpudevnuma000", "0-7,128-135");
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::cross_numa});
  EXPECT_NE(reason(r).find("group cpudevnuma000 (NUMA node 0): nothing tied it to its GPUs' node"), std::string::npos) << reason(r);
}

TEST(K8sDraCpu, TheCgroupDecidesAndOneWiderThanTheClaimIsSharedCpus) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-0", "cpudevnuma003", "48-55,176-183");
  cgroup(s, "p1", "0-255");
  Report r = judge(s, nps4());
  EXPECT_EQ(r.containers[0].cpus_source, "cgroup");
  EXPECT_EQ(r.containers[0].cpus, cpu_set("0-255"));
  EXPECT_EQ(verdicts(r), (std::vector<Verdict>{Verdict::cross_numa, Verdict::shared_cpus}));
  EXPECT_NE(reason(r, 0).find("its cgroup allows more CPUs than it was given"), std::string::npos) << reason(r, 0);
  EXPECT_EQ(reason(r, 1),
            "its cgroup allows CPUs 0-47,56-175,184-255 beyond the CPUs 48-55,176-183 of its dra.cpu claim: the driver's NRI plugin "
            "has not pinned it (is NRI enabled in the container runtime?)");
}

TEST(K8sDraCpu, ACgroupWiderThanTheCpuManagersCpusSaysTheKubelet) {
  NodeState s;
  s.config.cpu_manager_policy = "static";
  s.cpu = CpuManagerState{"static", cpu_set("0-47,56-175,184-255"), {}};
  s.cpu->exclusive["p1"]["trainer"] = cpu_set("48-55,176-183");
  s.devices = DeviceCheckpoint{{{"p1", "trainer", "nvidia.com/gpu", {{"0000:07:00.0", 3}}, ""}}, {}};
  cgroup(s, "p1", "48-63,176-191");
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::shared_cpus});
  EXPECT_EQ(reason(r),
            "its cgroup allows CPUs 56-63,184-191 beyond the CPUs 48-55,176-183 the CPU manager gave it: the kubelet has not applied its "
            "assignment");
}

TEST(K8sDraCpu, ACgroupAloneGivesAClaimWithoutACdiSpecItsCpus) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-0", "cpudevnuma003", nullptr);
  cgroup(s, "p1", "48-55,176-183");
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::aligned});
  EXPECT_TRUE(r.containers[0].exclusive);
}

TEST(K8sDraCpu, LocalityUnknownWhenNeitherCdiSpecNorCgroupGivesTheClaimsCpus) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-0", "cpudevnuma003", nullptr);
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::locality_unknown});
  EXPECT_NE(reason(r).find("the CPUs of its dra.cpu claim ml/p1-devices are unknown"), std::string::npos) << reason(r);
}

TEST(K8sDraCpu, IndividualModeCpusFromTheSlicesCpuIds) {
  NodeState s = driver_node();
  s.devices->assignments.push_back({"p1", "trainer", "gpu.nvidia.com", {{"gpu-0", std::nullopt}}, "ml/c", "node-a", ""});
  for (const char* dev : {"cpudev096", "cpudev097"})
    s.devices->assignments.push_back({"p1", "trainer", "dra.cpu", {{dev, std::nullopt}}, "ml/c", "node-a", ""});
  s.slices = {{"dra.cpu", "node-a", "node-a", "cpudev096", {{"dra.cpu/cpuID", {48, {}, {}, {}, {48}}}}},
              {"dra.cpu", "node-a", "node-a", "cpudev097", {{"dra.cpu/cpuID", {176, {}, {}, {}, {176}}}}}};
  Report r = judge(s, nps4());
  EXPECT_EQ(r.containers[0].cpus, cpu_set("48,176"));
  EXPECT_EQ(r.containers[0].cpu_claims.at(0).cpus_source, "ResourceSlice");
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::aligned});
}

TEST(K8sDraCpu, SlicesPciBusIdNamesTheGpuOverTheDriversDeviceName) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-2", "cpudevnuma003", "48-55,176-183");
  s.slices = {{"gpu.nvidia.com",
               "node-a",
               "node-a",
               "gpu-2",
               {{"resource.kubernetes.io/pciBusID", {{}, {}, "0000:07:00.0", {"0000:07:00.0"}, {}}}}}};
  Report r = judge(s, nps4());
  EXPECT_EQ(r.containers[0].gpus.at(0).pci, "0000:07:00.0");
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::aligned});
}

TEST(K8sDraCpu, APodsClaimRowTakesItsOnlyCgroupButNotOneOfTwo) {
  NodeState s = driver_node();
  s.devices->assignments.push_back({"p1", "(claim ml/c)", "gpu.nvidia.com", {{"gpu-0", std::nullopt}}, "ml/c", "node-a", ""});
  s.pods["p1"] = {"p1", "ml", "p1"};
  cgroup(s, "p1", "48-55,176-183");
  Report one = judge(s, nps4());
  EXPECT_EQ(one.containers[0].cpus_source, "cgroup");
  s.container_cpus[{"p1", "sidecar"}] = {cpu_set("0-3"), "x"};
  Report two = judge(s, nps4());
  EXPECT_EQ(two.containers[0].cpus_source, "shared pool");
}

TEST(K8sDraCpu, TheDriverBesideAStaticCpuManagerIsAProblem) {
  NodeState s = driver_node();
  s.config.cpu_manager_policy = "static";
  claim(s, "p1", "gpu-0", "cpudevnuma003", "48-55,176-183");
  Report r = judge(s, nps4());
  EXPECT_TRUE(has_problems(r));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_TRUE(r.findings[0].problem);
  EXPECT_NE(r.findings[0].text.find("the driver needs cpuManagerPolicy: none"), std::string::npos) << r.findings[0].text;
}

TEST(K8sDraCpu, SplitL3WhenTheCpusFitInFewerCaches) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-0", "cpudevnuma003", "48-49,52-53,176-177,180-181");
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::split_l3});
  EXPECT_EQ(reason(r).rfind("8 CPUs spread over 2 L3 caches (48-49,176-177 | 52-53,180-181) where 1 would hold them", 0), 0u) << reason(r);
}

TEST(K8sDraCpu, NoSplitL3WhenTheCpusNeedEveryCacheTheyTouch) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-0", "cpudevnuma003", "48-53,176-181");  // 12 CPUs: more than one L3's 8
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::aligned});
}

TEST(K8sDraCpu, SplitL3AdvisesTheKubeletsUncoreCacheOption) {
  NodeState s;
  s.config.cpu_manager_policy = "static";
  s.cpu = CpuManagerState{"static", {}, {}};
  s.cpu->exclusive["p1"]["trainer"] = cpu_set("48-49,52-53,176-177,180-181");
  s.devices = DeviceCheckpoint{{{"p1", "trainer", "nvidia.com/gpu", {{"0000:07:00.0", 3}}, ""}}, {}};
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::split_l3});
  EXPECT_NE(reason(r).find("prefer-align-cpus-by-uncorecache: \"true\" makes the kubelet take whole L3s first"), std::string::npos)
      << reason(r);
  s.config.cpu_manager_policy_options["prefer-align-cpus-by-uncorecache"] = "true";
  EXPECT_NE(reason(judge(s, nps4())).find("prefers whole L3s already"), std::string::npos);
}

TEST(K8sDraCpu, RemoteNicWhenAClaimsNicIsOffTheGpusNode) {
  NodeState s = driver_node();
  claim(s, "p1", "gpu-4", "cpudevnuma007", "112-119,240-247");
  s.devices->assignments.push_back({"p1", "trainer", "dra.net", {{"ib0", std::nullopt}}, "ml/p1-devices", "node-a", ""});
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::remote_nic});
  EXPECT_EQ(reason(r).rfind("NIC ib0 (0000:0c:00.0) is on NUMA node 3, its GPUs on node 7: one ResourceClaim", 0), 0u) << reason(r);
}

TEST(K8sDraCpu, RemoteNicFromADevicePluginSaysTheTopologyManager) {
  NodeState s;
  s.config.cpu_manager_policy = "static";
  s.cpu = CpuManagerState{"static", {}, {}};
  s.cpu->exclusive["p1"]["trainer"] = cpu_set("112-119,240-247");
  s.devices = DeviceCheckpoint{
      {{"p1", "trainer", "nvidia.com/gpu", {{"0000:87:00.0", 7}}, ""}, {"p1", "trainer", "rdma/hca", {{"0000:0c:00.0", 3}}, ""}}, {}};
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::remote_nic});
  EXPECT_NE(reason(r).find("topologyManagerPolicy single-numa-node"), std::string::npos) << reason(r);
}

TEST(K8sDraCpu, CrossNumaAcrossSocketsHintsTheClosestNodesOption) {
  NodeState s;
  s.config.cpu_manager_policy = "static";
  s.cpu = CpuManagerState{"static", {}, {}};
  s.cpu->exclusive["p1"]["trainer"] = cpu_set("64-71,192-199");  // node 4, the other package
  s.devices = DeviceCheckpoint{{{"p1", "trainer", "nvidia.com/gpu", {{"0000:07:00.0", 3}}, ""}}, {}};
  Report r = judge(s, nps4());
  EXPECT_EQ(verdicts(r), std::vector<Verdict>{Verdict::cross_numa});
  EXPECT_NE(reason(r).find("its nodes are 32 apart where the nearest are 12; topologyManagerPolicyOptions prefer-closest-numa-nodes"),
            std::string::npos)
      << reason(r);
  s.config.topology_manager_policy_options["prefer-closest-numa-nodes"] = "true";
  EXPECT_EQ(reason(judge(s, nps4())).find("prefer-closest-numa-nodes"), std::string::npos);
}

TEST(K8sDraCpu, TheTopologyManagerRefusesMoreThanEightNumaNodesUnlessAllowed) {
  topo::Topology t = nps4();
  t.numa_nodes.push_back({8, {}, 0, 0, "HBM"});  // a ninth node, CPU-less: the kubelet counts it too
  KubeletConfig c;
  EXPECT_FALSE(topology_manager_refusal(c, t));  // policy none: no Topology Manager
  c.topology_manager_policy = "single-numa-node";
  EXPECT_EQ(topology_manager_refusal(c, nps4()), std::nullopt);  // 8 nodes: within the default
  auto refused = topology_manager_refusal(c, t);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("on 9 NUMA nodes, more than the 8 the Topology Manager allows: the kubelet does not start"), std::string::npos)
      << *refused;
  c.topology_manager_policy_options["max-allowable-numa-nodes"] = "9";
  EXPECT_FALSE(topology_manager_refusal(c, t));
  NodeState s = driver_node();
  s.config.topology_manager_policy = "restricted";
  EXPECT_TRUE(has_problems(judge(s, t)));
}

}  // namespace dra_cpu_rules
}  // namespace gpubind::k8s
