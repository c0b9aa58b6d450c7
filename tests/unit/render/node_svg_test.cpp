// The node drawing (render/node_svg.hpp) on the example machines and synthetic ones: what is
// drawn for each part of the topology and of a plan, read back from the SVG with a small parser
// of its rectangles and tooltips.
#include "render/node_svg.hpp"
#include "render/svg.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>

#include "../../support/test_machines.hpp"
#include "discover/source.hpp"
#include "plan/plan.hpp"
#include "render/topo_text.hpp"

namespace gpubind::render {

namespace {

using testing::example;

plan::Plan planned(const topo::Topology& t, plan::Policy policy = plan::Policy::closest, std::optional<unsigned> ranks = {}) {
  plan::Request r;
  r.policy = policy;
  r.ranks = ranks;
  auto p = plan::make_plan(t, r);
  if (!p) throw std::runtime_error(p.error().message());
  return *p;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The tooltips (<title>) of the drawn core cells: "PUs 0,112: rank 0".
std::vector<std::string> core_titles(const std::string& svg) {
  std::vector<std::string> out;
  std::regex title("<title>(PUs [^<]*)</title>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), title); it != std::sregex_iterator(); ++it) out.push_back((*it)[1]);
  return out;
}

}  // namespace

TEST(NodeSvg, EveryCoreIsDrawnWithItsPus) {
  topo::Topology t = example("dgx-h100");
  std::vector<std::string> cores = core_titles(node_svg(t));
  ASSERT_EQ(cores.size(), t.cores.size());
  EXPECT_EQ(cores.front(), "PUs 0,112: no rank");
}

TEST(NodeSvg, EveryGpuAndNicIsDrawnOnce) {
  topo::Topology t = example("dgx-h100");
  std::string svg = node_svg(t);
  for (const topo::Gpu& g : t.gpus) EXPECT_EQ(count(svg, "<title>GPU" + std::to_string(g.index) + "  " + g.pci), 1u) << g.pci;
  for (const topo::Nic& n : t.nics) EXPECT_EQ(count(svg, "<title>NIC " + nic_label(n) + ","), 1u) << n.pci;
}

TEST(NodeSvg, APlanColoursEachRanksCoresAndNamesItsGpu) {
  topo::Topology t = example("dgx-h100");
  plan::Plan p = planned(t);
  std::string svg = plan_svg(t, p);
  std::vector<std::string> cores = core_titles(svg);
  for (const plan::RankBinding& rb : p.ranks) {
    size_t mine = 0;
    for (const std::string& c : cores) mine += c.ends_with(": rank " + std::to_string(rb.local_rank));
    EXPECT_EQ(mine, rb.cpus.count() / 2) << "rank " << rb.local_rank;  // two PUs per core
    EXPECT_NE(svg.find("<title>GPU" + std::to_string(rb.gpus.front().index) + "  " + rb.gpus.front().pci), std::string::npos);
    EXPECT_NE(svg.find("mem r" + std::to_string(rb.local_rank)), std::string::npos);
  }
}

TEST(NodeSvg, CoresSharedByRanksAreMarked) {
  topo::Topology t = example("workstation-socket0");
  plan::Plan p = planned(t, plan::Policy::numa, 4);
  std::vector<std::string> cores = core_titles(plan_svg(t, p));
  size_t shared = 0;
  for (const std::string& c : cores) shared += c.ends_with(": ranks 0-3");
  EXPECT_EQ(shared, 20u);  // socket 0's 20 cores, every rank on each
}

TEST(NodeSvg, ManyCoresCollapseIntoRunsOfOneRank) {
  topo::Topology t = example("gh200");  // 72 cores in one L3: more than 64
  plan::Plan p = planned(t);
  std::vector<std::string> cores = core_titles(plan_svg(t, p));
  ASSERT_EQ(cores.size(), 1u);
  EXPECT_EQ(cores.front(), "PUs 0-71: rank 0");
}

TEST(NodeSvg, MemoryOnlyNodesAndUnknownLocalityAreSaid) {
  std::string gh = node_svg(example("gh200"));
  EXPECT_NE(gh.find("memory only (GPUMemory)"), std::string::npos);
  std::string vm = node_svg(example("cloud-vm-unknown-locality"));
  EXPECT_NE(vm.find("Locality unknown"), std::string::npos);
  EXPECT_EQ(node_svg(example("dgx-h100")).find("Locality unknown"), std::string::npos);
}

TEST(NodeSvg, NvlinkAndXgmiGroupsAreNoted) {
  EXPECT_NE(node_svg(example("dgx-h100")).find("NVLink NV18: every pair of the 8 GPUs"), std::string::npos);
  EXPECT_NE(node_svg(example("frontier-like")).find("xGMI: every pair of the 8 GPUs"), std::string::npos);
}

TEST(NodeSvg, DevicesBehindOneSwitchAreBracketed) {
  std::string svg = node_svg(example("dgx-h100"));
  EXPECT_EQ(count(svg, "PCIe switch "), 8u);  // a GPU and its NIC behind each of 8 switches
}

TEST(NodeSvg, NamesFromTheTopologyAreEscaped) {
  topo::Topology t = example("gh200");
  t.gpus.front().name = "GPU <&> \"x\"";
  std::string svg = node_svg(t);
  EXPECT_EQ(svg.find("<&>"), std::string::npos);
  EXPECT_NE(svg.find("GPU &lt;&amp;&gt; &quot;x&quot;"), std::string::npos);
}

}  // namespace gpubind::render

namespace gpubind::render {

TEST(CompareSvg, EveryStrategyHasAPanelAndTheRanksOffTheirGpusNodeAreNamed) {
  topo::Topology t = example("dgx-a100-nps4");
  auto c = plan::compare_strategies(t, plan::Request{});
  ASSERT_TRUE(c) << c.error().message();
  std::string svg = compare_svg(t, *c);
  for (const plan::StrategyOutcome& o : c->strategies) EXPECT_NE(svg.find(">" + o.name + "</text>"), std::string::npos) << o.name;
  // GPU-unaware blocks from CPU 0 put every rank away from its GPU on this machine; closest none.
  size_t cpu_only = svg.find(">cpu-only</text>"), numa = svg.find(">numa</text>");
  size_t off = svg.find("ranks 0-7 off its GPU's NUMA node", cpu_only);
  EXPECT_TRUE(off != std::string::npos && off < numa);
  size_t closest = svg.find(">closest</text>"), split = svg.find(">socket-split</text>");
  EXPECT_EQ(svg.substr(closest, split - closest).find("off its GPU's NUMA node"), std::string::npos);
}

}  // namespace gpubind::render

namespace gpubind::render {

TEST(CheckSvg, EachProcessIsDrawnWithItsVerdictAndFindingsAreRed) {
  topo::Topology t = example("dgx-h100");
  check::Report r;
  probe::ProcessState good, wrong;
  good.pid = 2000;
  good.comm = "python";
  good.cpus_allowed = *CpuSet::parse_list("0-13,112-125");
  good.threads.push_back({});
  good.threads.back().last_cpu = 5;
  wrong.pid = 2030;
  wrong.comm = "python";
  wrong.cpus_allowed = *CpuSet::parse_list("56-69,168-181");
  r.processes.push_back({good, {"0000:18:00.0"}, "open device files", std::nullopt, {0}, std::nullopt, {}, true, "", {}, {}, "", ""});
  r.processes.push_back({wrong, {"0000:5d:00.0"}, "open device files", std::nullopt, {0}, std::nullopt,
                         {{check::Verdict::misplaced, "allowed CPUs are all off the GPU's node"}}, true, "", {}, {}, "", ""});
  Overlay o = check_overlay(r);
  EXPECT_EQ(o.title, "Check: 2 process(es), 1 with findings");
  ASSERT_EQ(o.entries.size(), 2u);
  EXPECT_FALSE(o.entries[0].bad);
  EXPECT_TRUE(o.entries[1].bad);
  EXPECT_TRUE(o.entries[0].ran_on.test(5));
  std::string svg = node_svg(t, &o);
  EXPECT_NE(svg.find("fill=\"#cc0000\">pid 2030 python"), std::string::npos);  // its legend line in red
  EXPECT_NE(svg.find(">pid 2000 python   GPU 0000:18:00.0   CPUs 0-13,112-125   OK</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>PUs 5,117: pid 2000</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>PUs 56,168: pid 2030</title>"), std::string::npos);
}

}  // namespace gpubind::render

namespace gpubind::render {

// The largest node the drawing must keep legible (issue 18): 64 GPUs, 512 PUs in 8 packages
// (tests/data/svg/make-64gpu.py). Every GPU chip drawn once, none overlapping another, every core
// still drawn with its PUs (32 per L3, under the collapse threshold), no text under 9 px, and a
// width a screen shows (the drawing grows downwards).
TEST(NodeSvg, SixtyFourGpusStayLegible) {
  auto t = discover::load_topology(std::string(GPUBIND_SOURCE_DIR) + "/tests/data/svg/64gpu.json");
  ASSERT_TRUE(t) << t.error().message();
  ASSERT_EQ(t->gpus.size(), 64u);
  std::string svg = plan_svg(*t, planned(*t));
  struct Box {
    double x, y, w, h;
  };
  std::vector<Box> chips;
  std::regex chip(R"re(<title>GPU\d+  [^<]*</title>\n<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), chip); it != std::sregex_iterator(); ++it)
    chips.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4])});
  ASSERT_EQ(chips.size(), 64u);
  for (size_t i = 0; i < chips.size(); ++i)
    for (size_t j = i + 1; j < chips.size(); ++j) {
      const Box &a = chips[i], &b = chips[j];
      bool apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
      EXPECT_TRUE(apart) << "GPU chips " << i << " and " << j << " overlap";
    }
  EXPECT_EQ(core_titles(svg).size(), t->cores.size());
  std::regex size("font-size=\"(\\d+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), size); it != std::sregex_iterator(); ++it)
    EXPECT_GE(std::stoi((*it)[1]), 9);
  std::smatch root;
  ASSERT_TRUE(std::regex_search(svg, root, std::regex("<svg[^>]* width=\"(\\d+)\"")));
  EXPECT_LE(std::stoi(root[1]), 1600);
  EXPECT_NE(svg.find("NVLink NV18: every pair within GPUs 0-7; 8-15; 16-23; 24-31; 32-39; 40-47; 48-55; 56-63"), std::string::npos);
}

}  // namespace gpubind::render

namespace gpubind::render {

// svg_number writes what printf's "%.1f" writes: quarters through integers (ties to even, the
// sign of negative zero kept), anything else through snprintf.
TEST(SvgNumber, WritesWhatPrintfWrites) {
  std::vector<double> values = {0, -0.0, 0.25, -0.25, 0.75, 1.25, 2.75, -2.75, 0.05, 0.15, 1.0 / 3, 12.5, 1e14 + 0.25, -1e14 - 0.75,
                                1e16, 3.999, -0.04, 1e300};
  for (int i = -4000; i <= 4000; ++i) values.push_back(i / 4.0), values.push_back(i / 8.0), values.push_back(i / 10.0);
  for (double v : values) {
    char b[400];
    std::snprintf(b, sizeof b, "%.1f", v);
    EXPECT_EQ(svg_number(v), b) << v;
  }
}

}  // namespace gpubind::render
