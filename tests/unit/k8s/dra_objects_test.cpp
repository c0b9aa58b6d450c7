// The DRA objects k8s check reads (k8s/dra_objects.hpp): the CPU DRA driver's CDI specs and device
// names, and ResourceSlices as kubectl prints them, in the formats of kubernetes-sigs/dra-driver-cpu
// (pkg/driver/cdi.go, pkg/device/builder.go, docs/user/device-attributes.md) and resource.k8s.io.
#include "k8s/dra_objects.hpp"

#include <gtest/gtest.h>

namespace gpubind::k8s {
namespace dra_object_parsing {

TEST(K8sDraObjects, CdiSpecOfTheCpuDriverGivesTheClaimsCpus) {
  auto claims = parse_cdi_cpu_spec(
      R"({"cdiVersion":"0.8.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-8f3c","containerEdits":{"env":["DRA_CPUSET_8f3c=4-7,132-135"]}}]})",
      "spec.json");
  ASSERT_TRUE(claims) << claims.error().message();
  ASSERT_EQ(claims->size(), 1u);
  EXPECT_EQ((*claims)[0].claim_uid, "8f3c");
  EXPECT_EQ((*claims)[0].cpus.to_list(), "4-7,132-135");
}

TEST(K8sDraObjects, CdiSpecWithoutTheVariableHasNoClaimAndABadListIsAnError) {
  auto none =
      parse_cdi_cpu_spec(R"({"devices":[{"name":"gpu-0","containerEdits":{"env":["NVIDIA_VISIBLE_DEVICES=0","DRA_CPUSET_=1"]}}]})", "a");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  auto bad = parse_cdi_cpu_spec(R"({"devices":[{"containerEdits":{"env":["DRA_CPUSET_u=0-3,x"]}}]})", "b.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message().rfind("b.json: DRA_CPUSET_u \"0-3,x\"", 0), 0u) << bad.error().message();
  EXPECT_FALSE(parse_cdi_cpu_spec("{", "c.json"));
}

TEST(K8sDraObjects, CpuClaimUidOfItsCdiId) {
  EXPECT_EQ(cpu_claim_uid_of_cdi("dra.k8s.io/cpu=claim-ca000000-0000-4000-8000-000000000001"), "ca000000-0000-4000-8000-000000000001");
  EXPECT_EQ(cpu_claim_uid_of_cdi("k8s.gpu.nvidia.com/device=gpu-0"), "");
  EXPECT_EQ(cpu_claim_uid_of_cdi("dra.k8s.io/cpu=claim-"), "");
}

TEST(K8sDraObjects, CpuDeviceGroupsOfTheDriversNames) {
  using Kind = CpuDeviceGroup::Kind;
  EXPECT_EQ(cpu_device_group("cpudevnuma003")->kind, Kind::numa);
  EXPECT_EQ(*cpu_device_group("cpudevnuma003")->id, 3u);
  EXPECT_EQ(*cpu_device_group("cpudevsocket001")->id, 1u);
  EXPECT_EQ(cpu_device_group("cpudevmachine")->kind, Kind::machine);
  EXPECT_EQ(cpu_device_group("cpudev017")->kind, Kind::cpu);
  EXPECT_FALSE(cpu_device_group("cpudev017")->id);  // a device number, not a CPU id
  EXPECT_FALSE(cpu_device_group("gpu-0"));
  EXPECT_FALSE(cpu_device_group("cpudevnumaX"));
}

TEST(K8sDraObjects, ResourceSlicesListWithQualifiedAndDriverAttributes) {
  auto slices = parse_resource_slices(R"({"apiVersion":"v1","kind":"List","items":[
    {"kind":"ResourceSlice","spec":{"driver":"gpu.nvidia.com","nodeName":"n1","pool":{"name":"n1","generation":1},
      "devices":[{"name":"gpu-0","attributes":{"uuid":{"string":"GPU-1"},"resource.kubernetes.io/pciBusID":{"string":"0000:07:00.0"},
                 "driverVersion":{"version":"580.95.5"}}}]}},
    {"kind":"ResourceSlice","spec":{"driver":"dra.cpu","nodeName":"n1","pool":{"name":"n1"},
      "devices":[{"name":"cpudevnuma000","attributes":{"dra.cpu/numCPUs":{"int":64},"resource.kubernetes.io/numaNode":{"int":0},
                 "resource.kubernetes.io/pcieRoot":{"strings":["pci0000:00","pci0000:10"]},"dra.cpu/smtEnabled":{"bool":true}}}]}}]})",
                                      "slices.json");
  ASSERT_TRUE(slices) << slices.error().message();
  ASSERT_EQ(slices->size(), 2u);
  const SliceDevice* gpu = find_slice_device(*slices, "gpu.nvidia.com", "n1", "gpu-0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->text("gpu.nvidia.com/uuid"), "GPU-1");  // unqualified: the driver's domain
  EXPECT_EQ(gpu->text(kPciBusIdAttribute), "0000:07:00.0");
  EXPECT_EQ(gpu->text("gpu.nvidia.com/driverVersion"), "580.95.5");
  const SliceDevice* cpu = find_slice_device(*slices, "dra.cpu", "n1", "cpudevnuma000");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->number(kNumaNodeAttribute), 0);
  EXPECT_EQ(cpu->find(kPcieRootAttribute)->strings, (std::vector<std::string>{"pci0000:00", "pci0000:10"}));
  EXPECT_EQ(cpu->find("dra.cpu/smtEnabled")->flag, true);
  EXPECT_EQ(find_slice_device(*slices, "dra.cpu", "n2", "cpudevnuma000"), nullptr);
}

TEST(K8sDraObjects, OneResourceSliceAndTheV1beta1BasicForm) {
  auto slices = parse_resource_slices(
      R"({"kind":"ResourceSlice","spec":{"driver":"gpu.amd.com","pool":{"name":"n1"},"devices":[{"name":"gpu-1-128","basic":{"attributes":{"pciAddr":{"string":"0000:c1:00.0"}}}}]}})",
      "s.json");
  ASSERT_TRUE(slices) << slices.error().message();
  ASSERT_EQ(slices->size(), 1u);
  EXPECT_EQ((*slices)[0].text("gpu.amd.com/pciAddr"), "0000:c1:00.0");
}

TEST(K8sDraObjects, ResourceSlicesMissingWhatTheApiServerRequiresAreErrors) {
  EXPECT_EQ(parse_resource_slices(R"({"items":3})", "s").error().message(), "s: items is not a list");
  EXPECT_EQ(parse_resource_slices(R"({"items":[{"spec":{"pool":{"name":"n"}}}]})", "s").error().message(),
            "s: a ResourceSlice without spec.driver or spec.pool.name");
  EXPECT_EQ(parse_resource_slices(R"({"spec":{"driver":"d","pool":{"name":"n"},"devices":[{}]}})", "s").error().message(),
            "s: a device of driver d pool n without a name");
  EXPECT_FALSE(parse_resource_slices("[]", "s"));
  auto empty = parse_resource_slices(R"({"kind":"List","items":[]})", "s");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

// KEP-5304: a stream of DeviceMetadata objects, one per version the driver writes, newest first.
TEST(K8sDraObjects, DeviceMetadataTakesTheFirstVersionItReads) {
  auto m = parse_device_metadata(R"({"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v2","requests":[]}
{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1","metadata":{"name":"gpu-claim","namespace":"ml","uid":"c7e7","generation":1},
 "podClaimName":"my-gpu","requests":[{"name":"gpu","devices":[{"driver":"gpu.example.com","pool":"worker-0","name":"gpu-0",
 "attributes":{"model":{"string":"a {brace} \" quote"},"index":{"int":0}}}]}]}
{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1alpha1","requests":[]})",
                                 "m.json");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->api_version, "metadata.resource.k8s.io/v1beta1");
  EXPECT_EQ(m->claim, "gpu-claim");
  EXPECT_EQ(m->namespace_name, "ml");
  EXPECT_EQ(m->pod_claim_name, "my-gpu");
  ASSERT_EQ(m->devices.size(), 1u);
  EXPECT_EQ(m->devices[0].request, "gpu");
  EXPECT_EQ(m->devices[0].device.name, "gpu-0");
  EXPECT_EQ(m->devices[0].device.text("gpu.example.com/model"), "a {brace} \" quote");
  EXPECT_EQ(m->devices[0].device.number("gpu.example.com/index"), 0);
}

TEST(K8sDraObjects, DeviceMetadataEmptyUnknownOrBroken) {
  auto empty = parse_device_metadata("\n", "m");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->devices.empty());
  EXPECT_EQ(parse_device_metadata(R"({"apiVersion":"metadata.resource.k8s.io/v9"})", "m").error().message(),
            "m: no DeviceMetadata of a version gpubind reads (metadata.resource.k8s.io/v1beta1, v1alpha1): metadata.resource.k8s.io/v9");
  EXPECT_EQ(parse_device_metadata(R"({"kind": "DeviceMetadata", )", "m").error().message(), "m: not a stream of JSON objects");
  EXPECT_EQ(parse_device_metadata(R"([1])", "m").error().message(), "m: not a stream of JSON objects");
  EXPECT_EQ(parse_device_metadata(R"({"apiVersion":"metadata.resource.k8s.io/v1beta1","requests":{}})", "m").error().message(),
            "m: requests is not a list");
}

TEST(K8sDraObjects, PciOfEachDriversAttributeAndPcieRootNames) {
  SliceDevice amd{"gpu.amd.com", "n", "", "gpu-1-128", {{"gpu.amd.com/pciAddr", {{}, {}, "0000:c1:00.0", {"0000:c1:00.0"}, {}}}}};
  EXPECT_EQ(pci_of(amd), "0000:c1:00.0");
  SliceDevice net{"dra.net", "n", "", "ib0", {{"dra.net/pciAddress", {{}, {}, "0000:0c:00.0", {"0000:0c:00.0"}, {}}}}};
  EXPECT_EQ(pci_of(net), "0000:0c:00.0");
  EXPECT_FALSE(pci_of(SliceDevice{"gpu.nvidia.com", "n", "", "gpu-0", {}}));
  EXPECT_EQ(pcie_root_name({"hb:0000:02", "0000:02:00.0"}), "pci0000:02");
  EXPECT_EQ(pcie_root_name({"cpu:0"}), "");
  EXPECT_EQ(pcie_root_name({}), "");
}

// The driver's flags (Go's flag package: --name=value, --name value, -name) over its config file.
TEST(K8sDraObjects, CpuDriverConfigFlagsWinOverTheFile) {
  std::string file = R"({"cpuDeviceMode":"grouped","groupBy":"socket","reservedCPUs":"0-1"})";
  auto c = parse_cpu_driver_config({"--v=4", "--config=/etc/dracpu/config.yaml", "--expose-pcie-roots"}, &file, "p");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->config_file, "/etc/dracpu/config.yaml");
  EXPECT_EQ(c->group_by, "socket");
  EXPECT_EQ(c->reserved_cpus->to_list(), "0-1");
  EXPECT_TRUE(c->expose_pcie_roots);
  auto flags = parse_cpu_driver_config(
      {"-group-by", "numanode", "--reserved-cpus=4-7", "--expose-pcie-roots=false", "--cpu-device-mode=individual"}, &file, "p");
  ASSERT_TRUE(flags) << flags.error().message();
  EXPECT_EQ(flags->group_by, "numanode");
  EXPECT_EQ(flags->cpu_device_mode, "individual");
  EXPECT_EQ(flags->reserved_cpus->to_list(), "4-7");
  EXPECT_FALSE(flags->expose_pcie_roots);
  auto defaults = parse_cpu_driver_config({}, nullptr, "p");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->cpu_device_mode, "grouped");
  EXPECT_EQ(defaults->group_by, "numanode");
  EXPECT_FALSE(defaults->reserved_cpus);
}

TEST(K8sDraObjects, CpuDriverConfigTheDriverWouldRefuseIsAnError) {
  EXPECT_EQ(parse_cpu_driver_config({"--group-by=cache"}, nullptr, "p").error().message(),
            "p: groupBy \"cache\" is not one the driver knows (numanode, socket, machine)");
  EXPECT_EQ(parse_cpu_driver_config({"--cpu-device-mode=x"}, nullptr, "p").error().message(),
            "p: cpuDeviceMode \"x\" is not one the driver knows (grouped, individual)");
  EXPECT_FALSE(parse_cpu_driver_config({"--reserved-cpus=a"}, nullptr, "p"));
  std::string not_json = "{";
  EXPECT_FALSE(parse_cpu_driver_config({"--config=/c"}, &not_json, "p"));
}

}  // namespace dra_object_parsing
}  // namespace gpubind::k8s
