#include "discover/nccl_loader.hpp"

#include <gtest/gtest.h>

namespace gpubind::discover {

namespace {
// A small two-socket layout written for this test: one switch per socket holding a GPU and a
// NIC, GPUs on an NVSwitch fabric with 6 links each, and an RCCL-style direct link variant.
const char* kTwoSocket = R"(<system version="1">
  <cpu numaid="0" affinity="00000000,000000ff" arch="x86_64">
    <pci busid="0000:10:00.0" class="0x060400" vendor="0x1000" device="0xc010">
      <pci busid="0000:11:00.0" class="0x030200" vendor="0x10de" device="0x20b0">
        <gpu dev="0" sm="80" rank="0" gdr="1">
          <nvlink target="0000:f0:00.0" count="6" tclass="0x068000"/>
        </gpu>
      </pci>
      <pci busid="0000:12:00.0" class="0x020700" vendor="0x15b3" device="0x101b">
        <nic><net name="mlx5_0" dev="0"/></nic>
      </pci>
    </pci>
  </cpu>
  <cpu numaid="1" affinity="00000000,0000ff00" arch="x86_64">
    <pci busid="0000:90:00.0" class="0x060400" vendor="0x1000" device="0xc010">
      <pci busid="0000:91:00.0" class="0x030200" vendor="0x10de" device="0x20b0">
        <gpu dev="1" sm="80" rank="1" gdr="1">
          <nvlink target="0000:f0:00.0" count="6" tclass="0x068000"/>
        </gpu>
      </pci>
    </pci>
    <nic><net name="eth0" dev="1"/></nic>
  </cpu>
</system>)";
}  // namespace

TEST(NcclLoader, GpusNicsAndLocality) {
  auto t = load_nccl_xml(kTwoSocket, "test");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->gpus.size(), 2u);
  EXPECT_EQ(t->gpus[0].pci, "0000:11:00.0");
  EXPECT_EQ(t->gpus[0].index, 0u);
  EXPECT_EQ(t->gpus[0].vendor, topo::Vendor::nvidia);
  EXPECT_EQ(*t->gpus[1].numa, std::vector<unsigned>{1});
  EXPECT_EQ(t->gpus[1].cpus->to_list(), "8-15");
  ASSERT_EQ(t->nics.size(), 2u);
  EXPECT_EQ(t->nics[0].pci, "");  // eth0 has no PCI address
  EXPECT_EQ(t->nics[0].os_names, std::vector<std::string>{"eth0"});
  EXPECT_EQ(t->nics[1].os_names, std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(t->cpus.to_list(), "0-15");
  EXPECT_EQ(t->numa_nodes.size(), 2u);
}

TEST(NcclLoader, GpuAndNicOnOneSwitchArePIX) {
  auto t = load_nccl_xml(kTwoSocket, "test");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(topo::path_class(t->gpus[0], t->nics[1]), topo::PathClass::PIX);
  EXPECT_EQ(topo::path_class(t->gpus[1], t->nics[1]), topo::PathClass::SYS);
}

TEST(NcclLoader, NvswitchLinksBecomeGpuPairs) {
  auto t = load_nccl_xml(kTwoSocket, "test");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->links.size(), 1u);
  EXPECT_EQ(t->links[0].count, 6u);
  EXPECT_EQ(t->links[0].kind, topo::GpuLink::Kind::nvlink);
}

TEST(NcclLoader, WarnsThatCoresAreUnknown) {
  auto t = load_nccl_xml(kTwoSocket, "test");
  ASSERT_TRUE(t.ok());
  ASSERT_FALSE(t->warnings.empty());
  EXPECT_NE(t->warnings[0].find("no packages, cores"), std::string::npos);
}

TEST(NcclLoader, WithoutGpuElementsLinksAreSaidToBeUnknown) {
  // An NCCL_TOPO_FILE of PCI devices only (AWS p4d, Azure NDv4): NCCL finds NVLinks itself, so
  // the file's GPU-to-GPU classes are PCIe paths and links unknown, which topo must say (issue
  // 33 item 11). The same file with <gpu> elements says nothing of it.
  std::string bare = kTwoSocket;
  for (const char* drop : {"<gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\">", "<gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\">",
                           "<nvlink target=\"0000:f0:00.0\" count=\"6\" tclass=\"0x068000\"/>", "</gpu>"})
    for (size_t at; (at = bare.find(drop)) != std::string::npos;) bare.erase(at, std::string(drop).size());
  auto t = load_nccl_xml(bare, "test");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->gpus.size(), 2u);
  EXPECT_TRUE(t->links.empty());
  bool said = false;
  for (const auto& w : t->warnings) said = said || w.find("no <gpu> elements, so NVLink/xGMI links") != std::string::npos;
  EXPECT_TRUE(said);
  auto full = load_nccl_xml(kTwoSocket, "test");
  ASSERT_TRUE(full.ok());
  for (const auto& w : full->warnings) EXPECT_EQ(w.find("no <gpu> elements"), std::string::npos) << w;
}

TEST(NcclLoader, RcclDialectDefaultsToAmd) {
  const char* xml = R"(<system version="2"><cpu numaid="0" affinity="0000000f">
      <pci busid="0000:02:00.0" class="0x120000"><gpu dev="0"/></pci></cpu></system>)";
  auto t = load_nccl_xml(xml, "test");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->gpus.size(), 1u);
  EXPECT_EQ(t->gpus[0].vendor, topo::Vendor::amd);
}

TEST(NcclLoader, MalformedXmlSaysWhere) {
  auto t = load_nccl_xml("<system version=\"1\"><cpu numaid=\"0\">", "bad.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("malformed XML"), std::string::npos) << t.error().message();
}

TEST(NcclLoader, BadAffinityIsAnError) {
  auto t = load_nccl_xml(R"(<system version="1"><cpu numaid="0" affinity="zz"/></system>)", "bad.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("hex digit"), std::string::npos) << t.error().message();
}

TEST(NcclLoader, NoCpuAffinityMeansNoPUs) {
  auto t = load_nccl_xml(R"(<system version="1"><cpu numaid="0"/></system>)", "nopu.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("no processing units"), std::string::npos);
}

}  // namespace gpubind::discover

namespace gpubind::discover {

// Issue 10: an NCCL file has no cores. Two equal blocks per node, half the machine apart, are
// Linux's SMT numbering (0-3,8-11 and 4-7,12-15 on 16 CPUs): n and n+8 are one core.
TEST(NcclLoader, SmtSiblingsInferredFromTwoBlockNodes) {
  const char* xml = R"(<system version="1">
  <cpu numaid="0" affinity="00000f0f" arch="x86_64"/>
  <cpu numaid="1" affinity="0000f0f0" arch="x86_64"/>
</system>)";
  auto t = load_nccl_xml(xml, "test");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_TRUE(t->cores_known);
  ASSERT_EQ(t->cores.size(), 8u);
  EXPECT_EQ(t->cores[0].pus.to_list(), "0,8");
  EXPECT_EQ(t->cores[7].pus.to_list(), "7,15");
}

TEST(NcclLoader, CoresUnknownWhenTheNumberingCannotBeTold) {
  // One block per node: a machine without SMT and one numbering siblings adjacently look alike.
  auto t = load_nccl_xml(kTwoSocket, "test");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->cores_known);
  EXPECT_EQ(t->cores.size(), 16u);
  bool warned = false;
  for (const auto& w : t->warnings) warned = warned || w.find("core sharing cannot be ruled out") != std::string::npos;
  EXPECT_TRUE(warned);
}

namespace {

std::string with(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

}  // namespace

// Numbers past their field's width are errors, never wrapped: vendor 0x1ffff was read as 0xffff,
// an NVLink count of 2^32+1 as 1, numaid 2^32 as node 0.
TEST(NcclLoader, ANumberWiderThanItsFieldIsAnErrorNotWrapped) {
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"vendor=\"0x10de\"", "vendor=\"0x1ffff\""},
           {"count=\"6\"", "count=\"4294967297\""},
           {"numaid=\"0\"", "numaid=\"4294967296\""},
           {"dev=\"0\" sm", "dev=\"4294967296\" sm"}}) {
    auto t = load_nccl_xml(with(kTwoSocket, from, to), "test");
    ASSERT_FALSE(t.ok()) << to;
    EXPECT_NE(t.error().message().find("larger than"), std::string::npos) << t.error().message();
  }
}

// Two <cpu> blocks of one node (NCCL writes one per CPU set it sees): the second block's CPUs are
// that node's too.
TEST(NcclLoader, TwoCpuBlocksOfOneNodeBothCount) {
  auto t = load_nccl_xml(with(kTwoSocket, "<cpu numaid=\"1\"", "<cpu numaid=\"0\""), "test");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->numa_nodes.size(), 1u);
  EXPECT_EQ(t->numa_nodes[0].cpus.to_list(), "0-15");
  // NCCL writes one block per node: a file with two was edited by hand, and that is said.
  bool said = std::any_of(t->warnings.begin(), t->warnings.end(), [](const std::string& w) {
    return w.find("two <cpu numaid=\"0\"> blocks (CPUs 0-7 and 8-15): taken together as node 0's CPUs") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

}  // namespace gpubind::discover
