// A container's DRA device metadata (KEP-5304) judged against the topology and its CPUs
// (bind/pod_metadata.hpp), on the DGX A100 NPS4 example: GPU 1 (0000:0f:00.0) on NUMA node 3
// under host bridge 0000:02, node 3's CPUs 48-63,176-191, package 0 nodes 0-3 (CPUs 0-63,128-191).
#include "bind/pod_metadata.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"

namespace gpubind::bind {
namespace pod_metadata_rules {

const topo::Topology& nps4() {
  static topo::Topology t = *discover::load_topology("example:dgx-a100-nps4");
  return t;
}

CpuSet node3() { return *CpuSet::parse_list("48-63,176-191"); }

// One v1beta1 file with one request of `devices` (JSON objects).
std::string file(const std::string& devices) {
  return R"({"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1","metadata":{"name":"c","namespace":"ml"},)"
         R"("requests":[{"name":"r","devices":[)" +
         devices + "]}]}\n";
}

bool has(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

TEST(PodMetadata, NoFilesNoMetadata) { EXPECT_FALSE(pod_metadata({}, {}, nps4(), node3())); }

TEST(PodMetadata, AGpuByItsPciAddressAgreeingWithTheTopology) {
  auto m = pod_metadata({{"/m/gpu.nvidia.com-metadata.json",
                          file(R"({"driver":"gpu.nvidia.com","pool":"n","name":"gpu-1","attributes":{"resource.kubernetes.io/pciBusID":)"
                               R"({"string":"0000:0F:00.0"},"resource.kubernetes.io/pcieRoot":{"string":"pci0000:02"}}})")}},
                        {}, nps4(), node3());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->gpus, std::vector<std::string>{"0000:0f:00.0"});
  EXPECT_TRUE(m->warnings.empty()) << m->warnings.front();
  EXPECT_TRUE(has(m->explain, "GPU gpu-1 of gpu.nvidia.com is GPU 1 (0000:0f:00.0, by its PCI address 0000:0f:00.0)"));
}

TEST(PodMetadata, AGpuByUuidWhereTheTopologyKnowsIt) {
  topo::Topology t = nps4();
  t.gpus[1].uuid = "GPU-6d1e7f20";
  auto m = pod_metadata(
      {{"/m/f", file(R"({"driver":"gpu.nvidia.com","pool":"n","name":"gpu-1","attributes":{"uuid":{"string":"GPU-6d1e7f20"}}})")}}, {}, t,
      node3());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->gpus, std::vector<std::string>{t.gpus[1].pci});
  EXPECT_TRUE(has(m->explain, "by its UUID GPU-6d1e7f20"));
}

TEST(PodMetadata, AGpuWithoutAddressIsLeftToTheDeviceFiles) {
  auto m = pod_metadata({{"/m/f", file(R"({"driver":"gpu.nvidia.com","pool":"n","name":"gpu-1"})")}}, {}, nps4(), node3());
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->gpus.empty());
  EXPECT_TRUE(has(m->explain, "no PCI address or UUID in its metadata: the device files decide"));
}

TEST(PodMetadata, DisagreementsWithTheTopologyAreWarnings) {
  auto m = pod_metadata(
      {{"/m/f",
        file(
            R"({"driver":"gpu.nvidia.com","pool":"n","name":"gpu-1","attributes":{)"
            R"("resource.kubernetes.io/pciBusID":{"string":"0000:0f:00.0"},"numa":{"int":5},)"
            R"("resource.kubernetes.io/pcieRoot":{"string":"pci0000:42"}}},)"
            R"({"driver":"gpu.nvidia.com","pool":"n","name":"gpu-9","attributes":{"resource.kubernetes.io/pciBusID":{"string":"0000:e1:00.0"}}})")}},
      {}, nps4(), node3());
  ASSERT_TRUE(m);
  EXPECT_TRUE(has(m->warnings, "/m/f puts GPU 0000:0f:00.0 on NUMA node 5 (gpu.nvidia.com/numa), the topology on NUMA node 3"));
  EXPECT_TRUE(has(m->warnings, "/m/f puts GPU 0000:0f:00.0 under PCIe root pci0000:42, the topology under pci0000:02"));
  EXPECT_TRUE(has(m->warnings, "/m/f names GPU gpu-9 at 0000:e1:00.0, which this machine's topology does not have"));
}

TEST(PodMetadata, ACpuGroupOffTheProcesssCpusAndMoreCpusThanTheClaimGave) {
  std::string cpus =
      file(R"({"driver":"dra.cpu","pool":"n","name":"cpudevnuma001","attributes":{"resource.kubernetes.io/numaNode":{"int":1},)"
           R"("dra.cpu/allocatedNumCPUs":{"int":8}}})");
  auto m = pod_metadata({{"/m/dra.cpu-metadata.json", cpus}}, {}, nps4(), node3());
  ASSERT_TRUE(m);
  EXPECT_TRUE(has(m->explain, "CPUs of dra.cpu device(s) cpudevnuma001: taken from NUMA node 1, 8 CPUs"));
  EXPECT_TRUE(has(m->warnings, "takes the claim's CPUs from NUMA node 1, this process may run on CPUs 48-63,176-191 (NUMA node 3)"));
  EXPECT_TRUE(
      has(m->warnings, "the claim was given 8 CPUs, this process may run on 32 (48-63,176-191): the driver's NRI plugin has not pinned"));
  auto pinned = pod_metadata({{"/m/f", cpus}}, {}, nps4(), *CpuSet::parse_list("16-19,144-147"));
  ASSERT_TRUE(pinned);
  EXPECT_TRUE(pinned->warnings.empty()) << pinned->warnings.front();
}

TEST(PodMetadata, ASocketGroupHoldsItsPackagesCpus) {
  auto m = pod_metadata(
      {{"/m/f", file(R"({"driver":"dra.cpu","pool":"n","name":"cpudevsocket000","attributes":{"dra.cpu/socketID":{"int":0}}})")}}, {},
      nps4(), node3());
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->warnings.empty()) << m->warnings.front();
  EXPECT_TRUE(has(m->explain, "taken from NUMA nodes 0,1,2,3"));
}

TEST(PodMetadata, IndividualCpusAgainstTheProcesssCpus) {
  std::string two = file(R"({"driver":"dra.cpu","pool":"n","name":"cpudev096","attributes":{"dra.cpu/cpuID":{"int":48}}},)"
                         R"({"driver":"dra.cpu","pool":"n","name":"cpudev097","attributes":{"dra.cpu/cpuID":{"int":176}}})");
  auto same = pod_metadata({{"/m/f", two}}, {}, nps4(), *CpuSet::parse_list("48,176"));
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->warnings.empty());
  EXPECT_TRUE(has(same->explain, "CPUs of dra.cpu device(s) cpudev096, cpudev097: CPUs 48,176 (dra.cpu/cpuID)"));
  auto wider = pod_metadata({{"/m/f", two}}, {}, nps4(), node3());
  ASSERT_TRUE(wider);
  EXPECT_TRUE(has(wider->warnings, "/m/f gives the claim CPUs 48,176, this process may run on 48-63,176-191"));
}

TEST(PodMetadata, UnreadableBrokenAndNotYetWrittenFiles) {
  auto m = pod_metadata({{"/m/broken", "{"}, {"/m/empty", ""}}, {"/m/x: Permission denied"}, nps4(), node3());
  ASSERT_TRUE(m);
  EXPECT_TRUE(has(m->warnings, "DRA device metadata: /m/x: Permission denied: not used"));
  EXPECT_TRUE(has(m->warnings, "DRA device metadata: /m/broken: not a stream of JSON objects: not used"));
  EXPECT_TRUE(has(m->explain, "/m/empty: no device yet"));
  EXPECT_TRUE(m->gpus.empty());
}

}  // namespace pod_metadata_rules
}  // namespace gpubind::bind
