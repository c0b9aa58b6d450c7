// k8s check's rules (k8s/judge.hpp), one test per verdict and per node finding, on the DGX
// H100-like example: GPUs 0-3 on node 0 (CPUs 0-55,112-167), 4-7 on node 1; SMT siblings n, n+112.
#include "k8s/judge.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "discover/source.hpp"

namespace gpubind::k8s {
namespace {

const topo::Topology& dgx() {
  static topo::Topology t = *discover::load_topology("example:dgx-h100");
  return t;
}

CpuSet cpus(const char* list) { return *CpuSet::parse_list(list); }

// A static-policy node with single-numa-node alignment; pods added by each test.
NodeState static_node() {
  NodeState s;
  s.config.found = true;
  s.config.cpu_manager_policy = "static";
  s.config.topology_manager_policy = "single-numa-node";
  s.config.cpu_manager_policy_options["full-pcpus-only"] = "true";
  s.cpu = CpuManagerState{"static", cpus("0-223"), {}};
  s.devices = DeviceCheckpoint{};
  return s;
}

void give(NodeState& s, const std::string& uid, const std::vector<std::string>& gpu_ids, std::optional<int> plugin_node,
          const char* exclusive) {
  DeviceAssignment a{uid, "worker", "nvidia.com/gpu", {}, ""};
  for (const auto& id : gpu_ids) a.devices.push_back({id, plugin_node});
  s.devices->assignments.push_back(a);
  if (exclusive) {
    s.cpu->exclusive[uid]["worker"] = cpus(exclusive);
    s.cpu->default_cpus = s.cpu->default_cpus - cpus(exclusive);
  }
  s.pods[uid] = {uid, "ml", "pod-" + uid};
}

std::vector<Verdict> verdicts_of(const Report& r, size_t i = 0) { return r.containers.at(i).verdicts(); }

TEST(K8sJudge, AlignedWhenExclusiveCpusAreOnTheGpusNode) {
  NodeState s = static_node();
  give(s, "u1", {"0000:18:00.0", "0000:2a:00.0"}, 0, "1-8,113-120");
  Report r = judge(s, dgx());
  ASSERT_EQ(r.containers.size(), 1u);
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::aligned});
  EXPECT_EQ(r.containers[0].gpu_nodes, std::vector<unsigned>{0});
  EXPECT_EQ(r.containers[0].cpu_nodes, std::vector<unsigned>{0});
  EXPECT_FALSE(has_problems(r));
}

TEST(K8sJudge, CrossNumaWhenTheCpusAreOnAnotherNode) {
  NodeState s = static_node();
  give(s, "u1", {"0000:9a:00.0"}, 1, "1-4,113-116");
  Report r = judge(s, dgx());
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::cross_numa});
  EXPECT_EQ(r.containers[0].findings[0].reason,
            "GPU 0000:9a:00.0 is on NUMA node 1 and its CPUs 1-4,113-116 on node 0");
  EXPECT_TRUE(has_problems(r));
}

TEST(K8sJudge, CrossNumaWhenSomeCpusAreOffEveryGpusNode) {
  NodeState s = static_node();
  give(s, "u1", {"0000:18:00.0"}, 0, "54-57,166-169");
  Report r = judge(s, dgx());
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::cross_numa});
  EXPECT_EQ(r.containers[0].findings[0].reason, "CPUs 56-57,168-169 are on NUMA node 1, where none of its GPUs is (they are on node 0)");
}

TEST(K8sJudge, CrossNumaWhenTheMemoryManagerPutMemoryElsewhere) {
  NodeState s = static_node();
  give(s, "u1", {"0000:18:00.0"}, 0, "1-4,113-116");
  s.memory = MemoryManagerState{"Static", {}};
  s.memory->memory_nodes["u1"]["worker"] = {1};
  Report r = judge(s, dgx());
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::cross_numa});
  EXPECT_EQ(r.containers[0].findings[0].reason, "the memory manager put its memory on NUMA node 1, its GPUs are on node 0");
}

TEST(K8sJudge, TwoGpusOnTwoNodesWithCpusOnBothAreAligned) {
  NodeState s = static_node();
  give(s, "u1", {"0000:18:00.0", "0000:9a:00.0"}, std::nullopt, "1-2,113-114,56-57,168-169");
  EXPECT_EQ(verdicts_of(judge(s, dgx())), std::vector<Verdict>{Verdict::aligned});
}

TEST(K8sJudge, SharedCpusWhenHalfACoreIsAnotherContainers) {
  NodeState s = static_node();
  give(s, "u1", {"0000:18:00.0"}, 0, "1-3");
  s.cpu->exclusive["u2"]["sidecar"] = cpus("115");
  Report r = judge(s, dgx());
  ASSERT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::shared_cpus});
  std::vector<std::string> reasons;
  for (const auto& f : r.containers[0].findings) reasons.push_back(f.reason);
  EXPECT_EQ(reasons, (std::vector<std::string>{"CPU 3 shares a physical core with CPU 115 of pod u2 container sidecar",
                                               "CPUs 1-2 share physical cores with CPUs 113-114 of the shared pool"}));
}

TEST(K8sJudge, SharedCpusAdviseFullPcpusOnlyWhenItIsNotSet) {
  NodeState s = static_node();
  s.config.cpu_manager_policy_options.clear();
  give(s, "u1", {"0000:18:00.0"}, 0, "1");
  Report r = judge(s, dgx());
  EXPECT_EQ(r.containers[0].findings.back().reason,
            "CPU 1 shares a physical core with CPU 113 of the shared pool (cpuManagerPolicyOptions full-pcpus-only: \"true\" gives whole cores)");
}

TEST(K8sJudge, SharedCpusWhenTwoContainersHoldTheSameCpusOrReservedOnes) {
  NodeState s = static_node();
  s.config.reserved_system_cpus = cpus("0,112");
  give(s, "u1", {"0000:18:00.0"}, 0, "0-1,112-113");
  give(s, "u2", {"0000:2a:00.0"}, 0, "1-2,113-114");
  Report r = judge(s, dgx());
  std::vector<std::string> reasons;
  for (const auto& f : r.containers[0].findings) {
    EXPECT_EQ(f.verdict, Verdict::shared_cpus);
    reasons.push_back(f.reason);
  }
  EXPECT_EQ(reasons[0], "CPUs 1,113 are also given to pod ml/pod-u2 container worker");
  EXPECT_EQ(reasons[1], "CPUs 0,112 are also reserved for the system (reservedSystemCPUs)");
}

TEST(K8sJudge, NoExclusiveCpusUnderStaticWithoutAnEntry) {
  NodeState s = static_node();
  give(s, "u1", {"0000:18:00.0"}, 0, nullptr);
  Report r = judge(s, dgx());
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::no_exclusive_cpus});
  EXPECT_FALSE(r.containers[0].exclusive);
  EXPECT_EQ(r.containers[0].cpus.to_list(), "0-223");
  EXPECT_NE(r.containers[0].findings[0].reason.find("only a Guaranteed pod asking for whole CPUs"), std::string::npos);
}

TEST(K8sJudge, NoExclusiveCpusUnderThePolicyNone) {
  NodeState s;
  s.devices = DeviceCheckpoint{};
  give(s, "u1", {"0"}, 0, nullptr);
  Report r = judge(s, dgx());
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::no_exclusive_cpus});
  EXPECT_EQ(r.containers[0].findings[0].reason, "the CPU manager policy is none: it shares CPUs 0-223 with every container on the node");
}

TEST(K8sJudge, LocalityUnknownWhenNeitherSideKnowsTheGpusNode) {
  NodeState s = static_node();
  give(s, "u1", {"GPU-not-in-the-topology"}, std::nullopt, "1-4,113-116");
  Report r = judge(s, dgx());
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::locality_unknown});
}

TEST(K8sJudge, DevicePluginNodeUsedWhenTheTopologyCannotMatchTheId) {
  NodeState s = static_node();
  give(s, "u1", {"GPU-unknown-to-sysfs"}, 1, "56-59,168-171");
  Report r = judge(s, dgx());
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::aligned});
  EXPECT_EQ(r.containers[0].gpus[0].numa_source, "device plugin");
}

TEST(K8sJudge, DeviceIdsMatchByPciAddressIndexAndUuid) {
  topo::Topology t = dgx();
  t.gpus[5].uuid = "GPU-6d1e7f20-4b3c-4a59-8e21-0000000000ab";
  t.gpus[6].mig_uuids = {"MIG-4c2f1a3b-7d6e-5f80-9a1b-2c3d4e5f6071"};
  NodeState s = static_node();
  give(s, "u1", {"DB:00.0", "4", "gpu-6d1e7f20-4b3c-4a59-8e21-0000000000AB", "MIG-4c2f1a3b-7d6e-5f80-9a1b-2c3d4e5f6071"}, std::nullopt,
       "56-59,168-171");
  Report r = judge(s, t);
  std::vector<std::string> pci;
  for (const auto& g : r.containers[0].gpus) pci.push_back(g.pci);
  EXPECT_EQ(pci, (std::vector<std::string>{"0000:db:00.0", "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0"}));
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::aligned});
}

TEST(K8sJudge, ContainersWithoutGpusAreNotListed) {
  NodeState s = static_node();
  s.devices->assignments.push_back({"u1", "worker", "rdma/hca", {{"0000:1a:00.0", 0}}, ""});
  s.cpu->exclusive["u1"]["worker"] = cpus("1-4");
  EXPECT_TRUE(judge(s, dgx()).containers.empty());
}

TEST(K8sNodeFindings, StateWrittenByAnotherPolicyIsAProblem) {
  NodeState s = static_node();
  s.cpu->policy = "none";
  Report r = judge(s, dgx());
  ASSERT_FALSE(r.findings.empty());
  EXPECT_TRUE(r.findings[0].problem);
  EXPECT_NE(r.findings[0].text.find("the kubelet will not start"), std::string::npos);
  EXPECT_TRUE(has_problems(r));
}

TEST(K8sNodeFindings, PolicyNoneWithGpuPodsAdvisesStatic) {
  NodeState s;
  s.devices = DeviceCheckpoint{};
  give(s, "u1", {"0"}, 0, nullptr);
  Report r = judge(s, dgx());
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_FALSE(r.findings[0].problem);
  EXPECT_EQ(r.findings[0].text.rfind("cpuManagerPolicy is none", 0), 0u);
}

TEST(K8sNodeFindings, TopologyManagerThatAdmitsMisalignedPodsIsAdvice) {
  for (const char* policy : {"none", "best-effort"}) {
    NodeState s = static_node();
    s.config.topology_manager_policy = policy;
    Report r = judge(s, dgx());
    ASSERT_EQ(r.findings.size(), 1u) << policy;
    EXPECT_EQ(r.findings[0].text.rfind(std::string("topologyManagerPolicy is ") + policy, 0), 0u);
  }
  for (const char* policy : {"restricted", "single-numa-node"}) {
    NodeState s = static_node();
    s.config.topology_manager_policy = policy;
    EXPECT_TRUE(judge(s, dgx()).findings.empty()) << policy;
  }
}

TEST(K8sNodeFindings, SmtWithoutFullPcpusOnlyIsAdvice) {
  NodeState s = static_node();
  s.config.cpu_manager_policy_options.clear();
  Report r = judge(s, dgx());
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].text.rfind("SMT is on", 0), 0u);
}

TEST(K8sNodeFindings, ReservedCpusTakingAGpuNodeIsAProblem) {
  NodeState s = static_node();
  s.config.reserved_system_cpus = cpus("0-55,112-167");
  Report r = judge(s, dgx());
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_TRUE(r.findings[0].problem);
  EXPECT_EQ(r.findings[0].text, "reservedSystemCPUs 0-55,112-167 hold every CPU of NUMA node 0, where GPU(s) 0000:18:00.0, 0000:2a:00.0, "
                                "0000:3a:00.0, 0000:5d:00.0 are: no pod can get CPUs near them");
}

TEST(K8sNodeFindings, DevicePluginDisagreeingWithTheTopologyIsAProblem) {
  NodeState s = static_node();
  give(s, "u1", {"0000:18:00.0"}, 1, "1-4,113-116");
  Report r = judge(s, dgx());
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_TRUE(r.findings[0].problem);
  EXPECT_EQ(r.findings[0].text, "the device plugin reports 0000:18:00.0 on NUMA node 1, the topology on node 0: the Topology Manager "
                                "aligns pods by the plugin's view");
  // The topology's node is the one judged by.
  EXPECT_EQ(verdicts_of(r), std::vector<Verdict>{Verdict::aligned});
}

// Issue 32: GPUs allocated through DRA (the API's dynamic_resources) are judged like device-plugin
// GPUs, named in the driver's pool ("gpu-5": GPU 5; Intel's PCI names "0000-9a-00-0"), and the
// Topology Manager's blind spot for them is said.
TEST(K8sDra, ClaimedGpusAreJudgedAndTheTopologyManagerCaveatSaid) {
  NodeState s = static_node();
  PodResources api;
  PodResources::Container c{"server", cpus("8-11,120-123"), {}, {}, {}};
  c.claims.push_back({"infer-gpu", "ml", {{"gpu.nvidia.com", "node-a", "gpu-5", {"k8s.gpu.nvidia.com/device=gpu-5"}}}});
  PodResources::Container w{"worker", cpus("60-63,172-175"), {}, {}, {}};
  w.claims.push_back({"train-gpu", "ml", {{"gpu.intel.com", "node-a", "0000-9a-00-0-0x0bd5", {}}}});
  api.pods.push_back({"infer-0", "ml", {c}});
  api.pods.push_back({"train-0", "ml", {w}});
  apply_pod_resources(s, api);
  auto t = dgx();
  t.gpus[4].vendor = topo::Vendor::intel;  // 0000:9a:00.0 as an Intel GPU, named by its address
  Report r = judge(s, t);
  ASSERT_EQ(r.containers.size(), 2u);
  const ContainerReport& infer = r.containers[0];
  ASSERT_EQ(infer.gpus.size(), 1u);
  EXPECT_EQ(infer.gpus[0].pci, "0000:ab:00.0");
  EXPECT_EQ(infer.gpus[0].claim, "ml/infer-gpu");
  EXPECT_EQ(infer.verdicts(), std::vector<Verdict>{Verdict::cross_numa});
  EXPECT_EQ(r.containers[1].gpus.at(0).pci, "0000:9a:00.0");
  EXPECT_EQ(r.containers[1].verdicts(), std::vector<Verdict>{Verdict::aligned});
  EXPECT_TRUE(std::any_of(r.findings.begin(), r.findings.end(), [](const NodeFinding& f) {
    return !f.problem && f.text.find("Topology Manager does not align DRA devices") != std::string::npos;
  }));
}

TEST(K8sDra, CheckpointClaimsAreThePodsAndUseItsContainersCpus) {
  NodeState s = static_node();
  s.cpu->exclusive["p1"]["worker"] = cpus("1-7,113-119");
  DraCheckpoint d;
  d.entries.push_back({{"train-gpu", "ml", {{"gpu.nvidia.com", "node-a", "gpu-1", {}}}}, {"p1"}});
  s.dra = d;
  Report r = judge(s, dgx());
  ASSERT_EQ(r.containers.size(), 1u);
  EXPECT_EQ(r.containers[0].container, "(claim ml/train-gpu)");
  EXPECT_TRUE(r.containers[0].exclusive);
  EXPECT_EQ(r.containers[0].cpus, cpus("1-7,113-119"));
  EXPECT_EQ(r.containers[0].verdicts(), std::vector<Verdict>{Verdict::aligned});  // not SHARED_CPUS with its own container
}

}  // namespace
}  // namespace gpubind::k8s
