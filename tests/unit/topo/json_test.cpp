#include "topo/json.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpubind::topo {

namespace {
nlohmann::json read_example(const std::string& name) {
  std::ifstream f(std::string(GPUBIND_SOURCE_DIR) + "/data/examples/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}
}  // namespace

// Every example file is gpubind's own output format: reading and writing it changes nothing.
TEST(TopologyJson, ExamplesRoundTripExactly) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(GPUBIND_SOURCE_DIR) + "/data/examples")) {
    if (e.path().extension() != ".json") continue;
    nlohmann::json j = read_example(e.path().filename());
    auto t = from_json(j);
    ASSERT_TRUE(t.ok()) << e.path() << ": " << t.error().message();
    EXPECT_EQ(nlohmann::json(to_json(*t)), j) << e.path();
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(TopologyJson, MigInstancesRoundTripAndAreOptional) {
  nlohmann::json j = read_example("dgx-h100.json");
  j["gpus"][2]["mig_uuids"] = {"MIG-5c5a4f09-9d1f-5b2f-9b4d-6a1a3bdb1f0e"};
  auto t = from_json(j);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[2].mig_uuids, std::vector<std::string>{"MIG-5c5a4f09-9d1f-5b2f-9b4d-6a1a3bdb1f0e"});
  EXPECT_EQ(nlohmann::json(to_json(*t)), j);
  j["gpus"][2]["mig_uuids"] = 7;
  EXPECT_FALSE(from_json(j).ok());
}

TEST(TopologyJson, GpuStacksRoundTripAndAreBounded) {
  nlohmann::json j = read_example("dgx-h100.json");
  j["gpus"][1]["stacks"] = 2;
  auto t = from_json(j);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[1].stacks, 2u);
  EXPECT_EQ(t->gpus[0].stacks, 1u);  // absent: one
  EXPECT_EQ(nlohmann::json(to_json(*t)), j);
  for (int bad : {0, 17}) {
    j["gpus"][1]["stacks"] = bad;
    auto b = from_json(j);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.error().message().find("gpus[1].stacks"), std::string::npos) << b.error().message();
  }
}

TEST(TopologyJson, RequiredFieldsExist) {
  auto t = from_json(read_example("dgx-h100.json"));
  ASSERT_TRUE(t.ok());
  nlohmann::json j = to_json(*t);
  for (const char* k : {"schema_version", "packages", "numa_nodes", "gpus", "nics"}) EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["numa_nodes"][0]["os_index"], 0);
  EXPECT_TRUE(j["numa_nodes"][0]["cpus"].is_string());
  EXPECT_TRUE(j["numa_nodes"][0]["memory_bytes"].is_number());
  const auto& g = j["gpus"][0];
  EXPECT_EQ(g["pci"], "0000:18:00.0");
  EXPECT_EQ(g["vendor"], "nvidia");
  EXPECT_EQ(g["numa"], nlohmann::json::array({0}));
  EXPECT_EQ(g["cpus"], "0-55,112-167");
  EXPECT_TRUE(j["nics"][0].contains("name"));
}

TEST(TopologyJson, UnknownLocalityIsNull) {
  auto t = from_json(read_example("cloud-vm-unknown-locality.json"));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->gpus[0].numa.has_value());
  EXPECT_TRUE(to_json(*t)["gpus"][0]["numa"].is_null());
  EXPECT_TRUE(to_json(*t)["gpus"][0]["cpus"].is_null());
}

TEST(TopologyJson, WrongTypesNameTheField) {
  nlohmann::json j = read_example("gh200.json");
  j["gpus"][0]["cpus"] = 5;
  auto t = from_json(j);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("gpus[0].cpus"), std::string::npos) << t.error().message();
}

// Each array of the file, with one field of its first entry of the wrong type: the error names
// the entry and the field, whichever reader the table gives the array.
TEST(TopologyJson, EveryArrayNamesTheBrokenEntrysField) {
  struct Case {
    const char* array;
    const char* field;  // "" = the entry itself
    nlohmann::json bad;
    const char* named;
  };
  const Case cases[] = {
      {"packages", "os_index", "zero", "packages[0].os_index"},
      {"numa_nodes", "memory_bytes", -1, "numa_nodes[0].memory_bytes"},
      {"numa_nodes", "package", "one", "numa_nodes[0].package"},
      {"distances", "", "far", "distances[0]"},
      {"l3_domains", "size_bytes", "big", "l3_domains[0].size_bytes"},
      {"cores", "", 7, "cores[0]"},
      {"gpus", "vendor_id", "0xzz", "gpus[0].vendor_id"},
      {"gpus", "memory_numa", "node", "gpus[0].memory_numa"},
      {"gpus", "mig_uuids", 3, "gpus[0].mig_uuids"},
      {"nics", "os_names", "mlx5_0", "nics[0].os_names"},
      {"links", "kind", "pcie", "links[0].kind"},
      {"links", "count", "18", "links[0].count"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = read_example("dgx-h100.json");
    ASSERT_FALSE(j[c.array].empty()) << c.array;
    if (*c.field) j[c.array][0][c.field] = c.bad;
    else j[c.array][0] = c.bad;
    auto t = from_json(j);
    ASSERT_FALSE(t.ok()) << c.named;
    EXPECT_NE(t.error().message().find(c.named), std::string::npos) << c.named << ": " << t.error().message();
  }
}

TEST(TopologyJson, RejectsFutureSchema) {
  nlohmann::json j = read_example("gh200.json");
  j["schema_version"] = 99;
  auto t = from_json(j);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("schema_version 99"), std::string::npos);
}

TEST(TopologyJson, RejectsBadCpuList) {
  nlohmann::json j = read_example("gh200.json");
  j["numa_nodes"][0]["cpus"] = "0-x";
  EXPECT_FALSE(from_json(j).ok());
}

TEST(TopologyJson, RejectsMissingCores) {
  nlohmann::json j = read_example("gh200.json");
  j.erase("cores");
  auto t = from_json(j);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("cores"), std::string::npos);
}

// Limits (docs/cli.md): a count or index past them is refused before anything is built for it.
TEST(TopologyJson, RefusesMoreGpusThanTheLimitBeforeReadingThem) {
  nlohmann::json j = read_example("gh200.json");
  j["gpus"] = nlohmann::json::array();
  for (size_t i = 0; i <= kMaxDevices; ++i) j["gpus"].push_back(nullptr);  // entries never read
  auto t = from_json(j);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(), "topology JSON gpus: 4097 entries, more than gpubind's limit of 4096");
}

TEST(TopologyJson, RefusesACoreBeyondTheCpuLimit) {
  nlohmann::json j = read_example("gh200.json");
  j["cores"].push_back(std::to_string(kMaxCpuId + 1));
  auto t = from_json(j);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("CPU 16384 is beyond gpubind's limit of CPU 16383"), std::string::npos) << t.error().message();
}

TEST(TopologyValidate, RefusesDeviceNumaNodesBeyondTheLimit) {
  auto t = from_json(read_example("dgx-h100.json"));
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(validate(*t).ok());
  ASSERT_FALSE(t->nics.empty());
  t->nics[0].numa = std::vector<unsigned>{kMaxNumaNodeId + 1};
  auto s = validate(*t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("NUMA node 2048 is beyond"), std::string::npos) << s.error().message();
}

}  // namespace gpubind::topo
