// The kubelet's files as the kubelet writes them, parsed (k8s/state.hpp).
#include "k8s/state.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpubind::k8s {
namespace {

TEST(KubeletConfig, DefaultsWhenFieldsAreAbsent) {
  auto c = parse_kubelet_config(R"({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"})", "config.yaml");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_TRUE(c->found);
  EXPECT_EQ(c->cpu_manager_policy, "none");
  EXPECT_EQ(c->topology_manager_policy, "none");
  EXPECT_EQ(c->topology_manager_scope, "container");
  EXPECT_EQ(c->memory_manager_policy, "None");
  EXPECT_FALSE(c->reserved_system_cpus);
}

TEST(KubeletConfig, EmptyFileIsEveryDefault) {
  auto c = parse_kubelet_config("null", "config.yaml");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cpu_manager_policy, "none");
}

TEST(KubeletConfig, ReadsThePoliciesOptionsAndReservedCpus) {
  auto c = parse_kubelet_config(R"({"cpuManagerPolicy": "static", "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
    "topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod", "memoryManagerPolicy": "Static",
    "reservedSystemCPUs": "0-1,112-113"})",
                                "config.yaml");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->cpu_manager_policy, "static");
  EXPECT_EQ(c->cpu_manager_policy_options.at("full-pcpus-only"), "true");
  EXPECT_EQ(c->topology_manager_policy, "single-numa-node");
  EXPECT_EQ(c->topology_manager_scope, "pod");
  EXPECT_EQ(c->memory_manager_policy, "Static");
  ASSERT_TRUE(c->reserved_system_cpus);
  EXPECT_EQ(c->reserved_system_cpus->to_list(), "0-1,112-113");
}

TEST(KubeletConfig, ANumberWhereYamlTypedOneStillReadsAsItsText) {
  // reservedSystemCPUs: 0 is an integer to YAML, a CPU list to the kubelet.
  auto c = parse_kubelet_config(R"({"reservedSystemCPUs": 0, "cpuManagerPolicyOptions": {"full-pcpus-only": true}})", "config.yaml");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->reserved_system_cpus->to_list(), "0");
  EXPECT_EQ(c->cpu_manager_policy_options.at("full-pcpus-only"), "true");
}

TEST(KubeletConfig, UnknownPolicyIsAnErrorNamingTheValuesTheKubeletKnows) {
  auto c = parse_kubelet_config(R"({"topologyManagerPolicy": "single-numa"})", "config.yaml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(),
            "config.yaml: topologyManagerPolicy \"single-numa\" is not one the kubelet knows (none, best-effort, restricted, single-numa-node)");
}

TEST(KubeletConfig, AnotherKindIsRefused) {
  auto c = parse_kubelet_config(R"({"kind": "Pod"})", "x.yaml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().why, "kind \"Pod\", not KubeletConfiguration");
}

TEST(KubeletConfig, BadReservedCpusNameTheField) {
  auto c = parse_kubelet_config(R"({"reservedSystemCPUs": "0-x"})", "config.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().why.find("reservedSystemCPUs \"0-x\""), std::string::npos) << c.error().why;
}

TEST(CpuManagerState, StaticEntriesPerPodAndContainer) {
  auto s = parse_cpu_manager_state(
      R"({"policyName":"static","defaultCpuSet":"0,5-7","entries":{"uid-1":{"a":"1-2","b":"3-4"}},"checksum":1})", "state");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->policy, "static");
  EXPECT_EQ(s->default_cpus.to_list(), "0,5-7");
  EXPECT_EQ(s->exclusive.at("uid-1").at("b").to_list(), "3-4");
}

TEST(CpuManagerState, NonePolicyHasAnEmptyPool) {
  auto s = parse_cpu_manager_state(R"({"policyName":"none","defaultCpuSet":"","checksum":1353318690})", "state");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->default_cpus.empty());
  EXPECT_TRUE(s->exclusive.empty());
}

TEST(CpuManagerState, BrokenFilesAreErrors) {
  EXPECT_EQ(parse_cpu_manager_state("{", "s").error().why, "not JSON");
  EXPECT_EQ(parse_cpu_manager_state("[]", "s").error().why, "not a JSON object");
  EXPECT_EQ(parse_cpu_manager_state(R"({"defaultCpuSet":""})", "s").error().why, "no policyName: not a CPU manager checkpoint");
  EXPECT_NE(parse_cpu_manager_state(R"({"policyName":"static","entries":{"u":{"c":"9-1"}}})", "s").error().why.find("entries.u.c"),
            std::string::npos);
  // Before 1.18 entries were keyed by container ID: no pod to name.
  EXPECT_NE(parse_cpu_manager_state(R"({"policyName":"static","entries":{"cid":"1-2"}})", "s").error().why.find("container ID"),
            std::string::npos);
}

TEST(MemoryManagerState, MemoryBlocksGiveTheNodesHugePagesDoNot) {
  auto s = parse_memory_manager_state(R"({"policyName":"Static","entries":{"u":{"c":[
      {"numaAffinity":[1,0],"type":"memory","size":10},{"numaAffinity":[3],"type":"hugepages-1Gi","size":0}]}}})",
                                      "m");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->memory_nodes.at("u").at("c"), (std::vector<unsigned>{0, 1}));
}

TEST(DeviceCheckpoint, DevicesPerNumaNodeAndWithoutOne) {
  auto c = parse_device_checkpoint(R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"nvidia.com/gpu",
      "DeviceIDs":{"1":["GPU-a","GPU-b"],"-1":["GPU-c"]},"AllocResp":"AA=="}],"RegisteredDevices":{"nvidia.com/gpu":["GPU-a"]}},"Checksum":1})",
                                   "cp");
  ASSERT_TRUE(c) << c.error().message();
  ASSERT_EQ(c->assignments.size(), 1u);
  const auto& d = c->assignments[0].devices;
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].id, "GPU-c");  // "-1" sorts first
  EXPECT_FALSE(d[0].numa);
  EXPECT_EQ(d[1].id, "GPU-a");
  EXPECT_EQ(*d[1].numa, 1);
  EXPECT_EQ(c->registered.at("nvidia.com/gpu").size(), 1u);
}

TEST(DeviceCheckpoint, KubeletsBefore120ListDevicesWithoutNodes) {
  auto c = parse_device_checkpoint(
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"amd.com/gpu","DeviceIDs":["0000:c1:00.0"]}]}})", "cp");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->assignments[0].devices[0].id, "0000:c1:00.0");
  EXPECT_FALSE(c->assignments[0].devices[0].numa);
}

TEST(DeviceCheckpoint, BrokenEntriesAreErrors) {
  EXPECT_EQ(parse_device_checkpoint(R"({"Checksum":1})", "cp").error().why, "no Data object: not the device manager's checkpoint");
  EXPECT_NE(parse_device_checkpoint(R"({"Data":{"PodDeviceEntries":[{"PodUID":"u"}]}})", "cp").error().why.find("without PodUID"),
            std::string::npos);
  EXPECT_EQ(parse_device_checkpoint(
                R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r","DeviceIDs":{"one":["x"]}}]}})", "cp")
                .error()
                .why,
            "DeviceIDs: \"one\" is not a NUMA node");
}

TEST(GpuResource, GpuResourcesOfEachVendorAndMig) {
  EXPECT_TRUE(is_gpu_resource("nvidia.com/gpu"));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/mig-1g.10gb"));
  EXPECT_TRUE(is_gpu_resource("amd.com/gpu"));
  EXPECT_TRUE(is_gpu_resource("gpu.intel.com/i915"));
  EXPECT_FALSE(is_gpu_resource("rdma/hca"));
  EXPECT_FALSE(is_gpu_resource("nvidia.com/hostdev"));
  EXPECT_FALSE(is_gpu_resource("openshift.io/sriov_netdevice"));
}

TEST(PodLogDir, NamespaceNameAndUid) {
  auto p = parse_pod_log_dir("kube-system_coredns-5d78c9869d-x2x4q_0b7e4c1a-5d2f-4e8b-9a3c-1f6d2e8a4b01");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->namespace_name, "kube-system");
  EXPECT_EQ(p->name, "coredns-5d78c9869d-x2x4q");
  EXPECT_EQ(p->uid, "0b7e4c1a-5d2f-4e8b-9a3c-1f6d2e8a4b01");
  EXPECT_FALSE(parse_pod_log_dir("no-underscores"));
  EXPECT_FALSE(parse_pod_log_dir("one_underscore"));
  EXPECT_FALSE(parse_pod_log_dir("_x_y"));
}

// Issue 32: the kubelet's DRA checkpoint, as 1.31+ writes it (the entries as a JSON document in
// "Data", DriverState per driver) and as 1.27-1.30 did (entries at the top, CDIDevices).
TEST(DraCheckpoint, BothFormats) {
  std::string inner = R"({"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1","Entries":[{"ClaimUID":"c1",)"
                      R"("ClaimName":"gpu","Namespace":"ml","PodUIDs":{"p1":{},"p2":{}},"DriverState":{"gpu.nvidia.com":{"Devices":[)"
                      R"({"PoolName":"node-a","DeviceName":"gpu-3","RequestNames":["gpu"],"CDIDeviceIDs":["k8s.gpu.nvidia.com/device=gpu-3"]}]}}}]})";
  nlohmann::json outer = {{"Data", inner}, {"Checksum", 1}};
  auto c = parse_dra_checkpoint(outer.dump(), "dra_manager_state");
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->entries.size(), 1u);
  EXPECT_EQ(c->entries[0].claim.name, "gpu");
  EXPECT_EQ(c->entries[0].claim.namespace_name, "ml");
  EXPECT_EQ(c->entries[0].pod_uids, (std::vector<std::string>{"p1", "p2"}));
  ASSERT_EQ(c->entries[0].claim.devices.size(), 1u);
  EXPECT_EQ(c->entries[0].claim.devices[0].driver, "gpu.nvidia.com");
  EXPECT_EQ(c->entries[0].claim.devices[0].device, "gpu-3");
  EXPECT_EQ(c->entries[0].claim.devices[0].cdi, std::vector<std::string>{"k8s.gpu.nvidia.com/device=gpu-3"});
  auto old = parse_dra_checkpoint(R"({"version":"v1","entries":[{"DriverName":"gpu.example.com","ClaimName":"c","Namespace":"n",)"
                                  R"("PodUIDs":{"p":{}},"CDIDevices":{"gpu.example.com":["example.com/gpu=gpu-0"]}}],"checksum":7})",
                                  "dra_manager_state");
  ASSERT_TRUE(old.ok()) << old.error().message();
  ASSERT_EQ(old->entries.at(0).claim.devices.size(), 1u);
  EXPECT_EQ(old->entries[0].claim.devices[0].cdi, std::vector<std::string>{"example.com/gpu=gpu-0"});
  EXPECT_TRUE(parse_dra_checkpoint(R"({"version":"v1"})", "x")->entries.empty());
  EXPECT_FALSE(parse_dra_checkpoint(R"({"Data":"not json"})", "x").ok());
  EXPECT_FALSE(parse_dra_checkpoint(R"({"entries":7})", "x").ok());
}

}  // namespace
}  // namespace gpubind::k8s
