// The launcher formats of a plan, on hand-built plans: each format's rule, independent of any
// topology the planner would read (the CLI goldens cover whole machines).
#include "render/plan_render.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"
#include "render/compare_render.hpp"
#include "render/json_text.hpp"

namespace gpubind::render {

namespace {

plan::Plan two_ranks(plan::MemPolicy mem) {
  plan::Plan p;
  p.policy = plan::Policy::closest;
  p.mem = mem;
  p.ranks.resize(2);
  p.ranks[0].cpus = *CpuSet::parse_list("0-3");
  p.ranks[0].gpus = {{2, "0000:17:00.0", topo::Vendor::nvidia, std::nullopt}};
  p.ranks[0].mem_nodes = {0};
  p.ranks[1].local_rank = 1;
  p.ranks[1].cpus = *CpuSet::parse_list("64,66");
  p.ranks[1].gpus = {{5, "0000:b1:00.0", topo::Vendor::nvidia, std::nullopt}};
  p.ranks[1].mem_nodes = {1, 3};
  for (auto& r : p.ranks) r.mem_policy = mem;
  return p;
}

}  // namespace

TEST(PlanSlurm, MasksAreHexPerRankAndGpusAreTheirIndexes) {
  std::string s = plan_slurm(two_ranks(plan::MemPolicy::bind));
  EXPECT_NE(s.find("--cpu-bind=mask_cpu:0xf,0x50000000000000000"), std::string::npos) << s;
  EXPECT_NE(s.find("--gpu-bind=map_gpu:2,5"), std::string::npos) << s;
  EXPECT_NE(s.find("--mem-bind=mask_mem:0x1,0xa"), std::string::npos) << s;  // bind: no "prefer,"
  EXPECT_EQ(s.find("prefer"), std::string::npos) << s;
}

TEST(PlanSlurm, PreferredMemoryIsPreferAndNoPolicyIsNoMemBind) {
  EXPECT_NE(plan_slurm(two_ranks(plan::MemPolicy::preferred)).find("--mem-bind=prefer,mask_mem:0x1,"), std::string::npos);
  EXPECT_EQ(plan_slurm(two_ranks(plan::MemPolicy::none)).find("--mem-bind"), std::string::npos);
}

TEST(PlanSlurm, PreferTakesOneNodeAndSaysSo) {
  // Rank 1 prefers nodes 1 and 3; Slurm's prefer is MPOL_PREFERRED on the mask's first node
  // (issue 33 item 11): the flags name node 1 and a note says what was dropped. bind keeps both.
  EXPECT_NE(plan_slurm(two_ranks(plan::MemPolicy::preferred)).find("mask_mem:0x1,0x2\n"), std::string::npos);
  auto notes = plan_slurm_notes(two_ranks(plan::MemPolicy::preferred));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("rank 1: memory preferred on nodes 1,3"), std::string::npos) << notes[0];
  EXPECT_NE(plan_slurm(two_ranks(plan::MemPolicy::bind)).find("--mem-bind=mask_mem:0x1,0xa"), std::string::npos);
  EXPECT_TRUE(plan_slurm_notes(two_ranks(plan::MemPolicy::bind)).empty());
}

TEST(PlanNumactl, OneCommandLinePerRank) {
  std::string s = plan_numactl(two_ranks(plan::MemPolicy::bind));
  EXPECT_NE(s.find("--physcpubind=0-3"), std::string::npos) << s;
  EXPECT_NE(s.find("--physcpubind=64,66"), std::string::npos) << s;
  EXPECT_NE(s.find("--membind=1,3"), std::string::npos) << s;
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 2) << s;
}

TEST(PlanEnv, ExportsTheRanksOwnBinding) {
  std::string s = plan_env(two_ranks(plan::MemPolicy::preferred), 1);
  EXPECT_NE(s.find("export GPUBIND_CPUS=64,66"), std::string::npos) << s;
  EXPECT_NE(s.find("export GPUBIND_GPU=0000:b1:00.0"), std::string::npos) << s;
  EXPECT_EQ(s.find("0-3"), std::string::npos) << s;  // nothing of rank 0
}

TEST(CoreMap, OneCharacterPerPuCoresSplitBySlashPackagesByBrackets) {
  auto t = discover::load_topology("pack:2 core:2 pu:2");
  ASSERT_TRUE(t.ok()) << t.error().message();
  // hwloc numbers PUs depth-first: package 0 holds PUs 0-3 (cores 0-1, 2-3).
  EXPECT_EQ(core_map(*t, *CpuSet::parse_list("0,1,5")), "[BB/..][.B/..]");
  EXPECT_EQ(core_map(*t, CpuSet()), "[../..][../..]");
}

TEST(DescribeBinding, GpusWithTheirAddressAndKnownUuidThenCpusMemoryAndNics) {
  plan::Plan p = two_ranks(plan::MemPolicy::preferred);
  topo::Topology t;
  t.gpus.resize(2);
  t.gpus[0].pci = "0000:17:00.0";
  t.gpus[0].uuid = "GPU-8f3c";
  t.gpus[1].pci = "0000:b1:00.0";  // no UUID known
  EXPECT_EQ(describe_binding(p.ranks[0], t), "GPU 2 (0000:17:00.0, GPU-8f3c), CPUs 0-3, memory preferred 0");
  plan::RankBinding both = p.ranks[1];
  both.gpus.insert(both.gpus.begin(), p.ranks[0].gpus[0]);
  both.nics = {{"0000:c1:00.0", "mlx5_1", topo::PathClass::PIX}, {"0000:c2:00.0", "", topo::PathClass::PXB}};
  EXPECT_EQ(describe_binding(both, t, "refused by the container"),
            "GPUs 2 (0000:17:00.0, GPU-8f3c), 5 (0000:b1:00.0), CPUs 64,66, memory preferred 1,3 refused by the container, NICs mlx5_1; "
            "0000:c2:00.0");
  plan::RankBinding none = p.ranks[0];
  none.gpus.clear();
  none.mem_policy = plan::MemPolicy::none;
  EXPECT_EQ(describe_binding(none, t), "GPU none, CPUs 0-3, memory unchanged");
  none.nics = {{"0000:c1:00.0", "mlx5\nx", topo::PathClass::PIX}};
  t.hostname = std::string("node\x1b") + "7";
  EXPECT_EQ(report_line(t, 42, -1, 2, none, ""),
            "[node\\x1b7:42] gpubind: rank ? (local 0 of 2) bound to GPU none, CPUs 0-3, memory unchanged, NIC mlx5\\nx: " +
                core_map(t, none.cpus));
}

TEST(JsonText, InvalidUtf8BecomesAReplacementCharacterNotAFailure) {
  nlohmann::ordered_json j;
  j["comm"] = std::string("bad\xff", 4);
  std::string s = json_text(j);
  EXPECT_NE(s.find("bad\xEF\xBF\xBD"), std::string::npos) << s;
  EXPECT_EQ(s.back(), '\n');
}

TEST(CompareRender, APeerThatCannotPlanIsNotApplicableWithItsReason) {
  plan::Comparison c;
  c.topology_origin = "test";
  c.ranks = 2;
  c.strategies.push_back({"closest", "gpubind's", true, two_ranks(plan::MemPolicy::preferred), ""});
  c.strategies.push_back({"torchrun-exclusive", "a peer", false, std::nullopt, "one process per GPU only"});
  std::string text = compare_text(c);
  EXPECT_NE(text.find("Compare: 2 rank(s) on test"), std::string::npos) << text;
  EXPECT_NE(text.find("torchrun-exclusive: cannot plan this: one process per GPU only"), std::string::npos) << text;
  nlohmann::ordered_json j = compare_json(c);
  ASSERT_EQ(j["strategies"].size(), 2u);
  EXPECT_TRUE(j["strategies"][1]["score"].is_null());
  EXPECT_EQ(j["strategies"][1]["error"], "one process per GPU only");
  EXPECT_FALSE(j["strategies"][0]["score"].is_null());
}

}  // namespace gpubind::render
