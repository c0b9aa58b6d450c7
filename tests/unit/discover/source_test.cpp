#include "discover/source.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "render/hwloc_xml.hpp"

namespace gpubind::discover {

namespace fs = std::filesystem;

namespace {
class TempFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("gpubind-source-test-" + std::to_string(::getpid()));
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(m_dir / name) << text;
    return (m_dir / name).string();
  }
  fs::path m_dir;
};

std::string example_path(const std::string& name) { return std::string(GPUBIND_SOURCE_DIR) + "/data/examples/" + name; }
}  // namespace

TEST_F(TempFiles, MissingFileIsAnError) {
  auto t = load_topology((m_dir / "nope.xml").string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().why.find("no such file"), std::string::npos);
}

TEST_F(TempFiles, EmptyFileIsAnError) {
  auto t = load_topology(write("empty.xml", ""));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().why, "file is empty");
}

TEST_F(TempFiles, MalformedHwlocXmlIsAnError) {
  auto t = load_topology(write("bad.xml", "<topology version=\"2.0\"><object type=\"Machine\""));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().why.find("hwloc"), std::string::npos) << t.error().message();
}

TEST_F(TempFiles, UnknownXmlRootIsAnError) {
  auto t = load_topology(write("svg.xml", "<?xml version=\"1.0\"?><svg/>"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().why.find("<svg>"), std::string::npos);
}

TEST_F(TempFiles, MalformedJsonIsAnError) {
  auto t = load_topology(write("bad.json", "{\"schema_version\": 1,"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().why.find("malformed JSON"), std::string::npos);
}

TEST_F(TempFiles, TextFileIsAnError) {
  auto t = load_topology(write("notes.txt", "hello"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().why.find("not a topology file"), std::string::npos);
}

TEST_F(TempFiles, DirectoryWithoutSysIsAnError) {
  fs::create_directories(m_dir / "empty-tree");
  auto t = load_topology((m_dir / "empty-tree").string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().why.find("no sys/"), std::string::npos);
}

TEST_F(TempFiles, BrokenArchiveIsAnError) {
  auto t = load_topology(write("node.tar.bz2", "this is not bzip2"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().why.find("not a readable archive"), std::string::npos) << t.error().message();
}

TEST(Source, SyntheticStringLoads) {
  auto t = load_topology("pack:2 numa:2 l3:2 core:4 pu:2");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->packages.size(), 2u);
  EXPECT_EQ(t->numa_nodes.size(), 4u);
  EXPECT_EQ(t->l3_domains.size(), 8u);
  ASSERT_EQ(t->cores.size(), 32u);
  EXPECT_EQ(t->cpus.count(), 64u);
  EXPECT_EQ(t->cores[0].pus.count(), 2u);
}

TEST(Source, SyntheticStringHwlocRejects) {
  auto t = load_topology("pack:2 bogus:3");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().why.find("synthetic"), std::string::npos);
}

TEST(Source, DetectsKinds) {
  EXPECT_EQ(*detect_source(""), SourceKind::live);
  EXPECT_EQ(*detect_source(example_path("dgx-h100.json")), SourceKind::gpubind_json);
  EXPECT_EQ(*detect_source("node:2 pu:2"), SourceKind::synthetic);
  EXPECT_FALSE(detect_source("no-such-thing").ok());
}

// hwloc XML written by gpubind is read back by hwloc into the same machine.
TEST_F(TempFiles, HwlocXmlExportReloads) {
  for (const char* name : {"dgx-h100.json", "dgx-a100-nps4.json", "frontier-like.json", "gh200.json", "workstation-socket0.json",
                           "cloud-vm-unknown-locality.json"}) {
    auto orig = load_topology(example_path(name));
    ASSERT_TRUE(orig.ok()) << name;
    std::string path = write(std::string(name) + ".xml", render::to_hwloc_xml(*orig));
    auto back = load_topology(path);
    ASSERT_TRUE(back.ok()) << name << ": " << back.error().message();
    EXPECT_EQ(back->cpus, orig->cpus) << name;
    EXPECT_EQ(back->allowed_cpus, orig->allowed_cpus) << name;
    ASSERT_EQ(back->numa_nodes.size(), orig->numa_nodes.size()) << name;
    for (size_t i = 0; i < orig->numa_nodes.size(); ++i) {
      EXPECT_EQ(back->numa_nodes[i].cpus, orig->numa_nodes[i].cpus) << name << " node " << i;
      EXPECT_EQ(back->numa_nodes[i].memory_bytes, orig->numa_nodes[i].memory_bytes) << name;
    }
    EXPECT_EQ(back->distances, orig->distances) << name;
    EXPECT_EQ(back->cores.size(), orig->cores.size()) << name;
    EXPECT_EQ(back->l3_domains.size(), orig->l3_domains.size()) << name;
    ASSERT_EQ(back->gpus.size(), orig->gpus.size()) << name;
    ASSERT_EQ(back->nics.size(), orig->nics.size()) << name;  // before the loop below indexes them
    for (size_t i = 0; i < orig->gpus.size(); ++i) {
      EXPECT_EQ(back->gpus[i].pci, orig->gpus[i].pci) << name;
      EXPECT_EQ(back->gpus[i].numa, orig->gpus[i].numa) << name;
      EXPECT_EQ(back->gpus[i].cpus, orig->gpus[i].cpus) << name;
      for (size_t j = 0; j < orig->nics.size(); ++j)
        EXPECT_EQ(topo::path_class(back->gpus[i], back->nics[j]), topo::path_class(orig->gpus[i], orig->nics[j]))
            << name << " gpu " << i << " nic " << j;
    }
    for (size_t i = 0; i < orig->nics.size(); ++i) EXPECT_EQ(back->nics[i].os_names, orig->nics[i].os_names) << name;
  }
}

// Issue 52 item 10: an Intel GPU Max's stacks in an hwloc capture come from hwloc's levelzero
// backend (FLAT: one "zeN" per stack; COMPOSITE: one "zeN" with LevelZeroSubdevices and
// "zeN.K" children); a capture without them says the stacks are unknown.
TEST_F(TempFiles, IntelGpuStacksAreReadFromTheCapturesLevelZeroDevices) {
  auto orig = load_topology(std::string(GPUBIND_SOURCE_DIR) + "/tests/data/intel/gpu-max-1550-x8.json");
  ASSERT_TRUE(orig.ok()) << orig.error().message();
  const std::string flat = render::to_hwloc_xml(*orig);
  ASSERT_NE(flat.find("name=\"ze15\" subtype=\"LevelZero\""), std::string::npos);  // 8 GPUs x 2 stacks, numbered across them
  const std::regex level_zero(R"(\s*<object type="OSDev"[^>]*subtype="LevelZero"[^>]*>\s*<info[^>]*/>\s*</object>)");
  const std::string none = std::regex_replace(flat, level_zero, "");
  std::string composite = none;
  unsigned card = 0;
  for (size_t at = 0; (at = composite.find("[8086:0bd5]", at)) != std::string::npos; ++card) {
    at = composite.find("</object>", composite.find("<info name=\"PCIDevice\"", at));  // hwloc reads infos before children
    at = composite.rfind('\n', at) + 1;
    std::string c = std::to_string(card);
    std::string dev = "<object type=\"OSDev\" name=\"ze" + c + "\" subtype=\"LevelZero\" osdev_type=\"5\">"
                      "<info name=\"Backend\" value=\"LevelZero\"/><info name=\"LevelZeroSubdevices\" value=\"2\"/>";
    for (const char* k : {"0", "1"})
      dev += "<object type=\"OSDev\" name=\"ze" + c + "." + k + "\" subtype=\"LevelZero\" osdev_type=\"5\">"
             "<info name=\"LevelZeroSubdeviceID\" value=\"" + k + "\"/></object>";
    composite.insert(at, dev + "</object>\n");
  }
  ASSERT_EQ(card, 8u);
  auto stack_warnings = [](const topo::Topology& t) {
    return std::count_if(t.warnings.begin(), t.warnings.end(), [](const std::string& w) { return w.find("stacks") != std::string::npos; });
  };
  for (const auto& [name, xml] : {std::pair{"flat", flat}, std::pair{"composite", composite}}) {
    auto t = load_topology(write(std::string(name) + ".xml", xml));
    ASSERT_TRUE(t.ok()) << name << ": " << t.error().message();
    ASSERT_EQ(t->gpus.size(), 8u) << name;
    for (const topo::Gpu& g : t->gpus) {
      EXPECT_EQ(g.stacks, 2u) << name << " " << g.pci;
      EXPECT_EQ(g.os_names, (std::vector<std::string>{"card" + std::to_string(g.index + 1), "renderD" + std::to_string(128 + g.index)}))
          << name << ": Level Zero devices are no OS device files";
    }
    EXPECT_EQ(stack_warnings(*t), 0) << name;
    EXPECT_EQ(render::to_hwloc_xml(*t), flat) << name;  // written back the same
  }
  auto unknown = load_topology(write("none.xml", none));
  ASSERT_TRUE(unknown.ok()) << unknown.error().message();
  for (const topo::Gpu& g : unknown->gpus) EXPECT_EQ(g.stacks, 1u);
  ASSERT_EQ(stack_warnings(*unknown), 1) << "one warning naming every GPU whose stacks the capture does not show";
  auto w = std::find_if(unknown->warnings.begin(), unknown->warnings.end(), [](const std::string& x) { return x.find("stacks") != std::string::npos; });
  EXPECT_NE(w->find("0000:18:00.0, "), std::string::npos) << *w;
}

}  // namespace gpubind::discover
