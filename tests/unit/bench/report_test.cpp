// The report of `gpubind bench` on recorded measurements (bench/record.hpp), its JSON record read
// back as --input reads it, and its renderings.
#include "bench/record.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "render/bench_render.hpp"

namespace gpubind::bench {

namespace {

RankRecord rank(unsigned r, std::optional<uint64_t> migrations, double busy_s, double off_home_s, uint64_t remote_pages) {
  RankRecord k;
  k.rank = r;
  k.cpus = CpuSet::of({r});
  k.mem_nodes = {0};
  k.mem_policy = "preferred";
  k.home_nodes = {0};
  k.measured_s = 2;
  k.step_s = 1;
  k.busy_s = busy_s;
  k.work_s = 1;
  k.off_home_s = off_home_s;
  k.migrations = migrations;
  k.pages = 100;
  k.remote_pages = remote_pages;
  return k;
}

Record two_node_record() {
  Record r;
  r.machine = {"n1", 2, 2, 0, 16, 16, 2};
  r.config = {2, 1, 4, 2, 1, 2, 8u << 20, 100};
  StrategyRecord closest{"closest", plan::Policy::closest, 1, {10, 10, 10, 20}, {rank(0, 0, 0.9, 0, 0), rank(1, 0, 0.7, 0, 0)}};
  StrategyRecord none{"none", plan::Policy::none, 1, {10, 20, 30, 40}, {rank(0, 8, 0.5, 0.5, 50), rank(1, 4, 0.5, 0.25, 0)}};
  StrategyRecord twice{"none-2x", plan::Policy::none, 2, {20, 20, 40, 40}, {rank(0, 2, 1, 0, 0), rank(1, 2, 1, 0, 0)}};
  r.strategies = {closest, none, twice};
  return r;
}

// Steps around `ms`: a regular +-10 % wobble, as a quiet machine gives.
std::vector<double> steps_around(double ms, size_t n) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(ms * (0.9 + 0.2 * double(i % 5) / 4));
  return out;
}

// closest and none with the noise roaming (none clearly slower: it runs into the noise) and both
// with it on the reserved CPU 0 (the same: nothing left to run into), 100 steps each.
Record placements_record() {
  Record r = two_node_record();
  r.config.steps = 100;
  r.config.rounds = 5;
  r.config.reserved = CpuSet::of({0, 8});
  auto with = [&](const char* name, plan::Policy policy, double ms, NoisePlacement noise) {
    StrategyRecord s{name, policy, 1, steps_around(ms, 100), {rank(0, 0, 0.9, 0, 0), rank(1, 0, 0.9, 0, 0)}};
    s.noise = noise;
    return s;
  };
  r.strategies = {with("closest", plan::Policy::closest, 10, NoisePlacement::roaming),
                  with("none", plan::Policy::none, 20, NoisePlacement::roaming),
                  with("closest", plan::Policy::closest, 5, NoisePlacement::reserved),
                  with("none", plan::Policy::none, 5, NoisePlacement::reserved)};
  return r;
}

// A copy: the report is often a temporary.
StrategyReport find(const Report& rep, const std::string& name) {
  for (const StrategyReport& s : rep.strategies)
    if (s.name == name) return s;
  throw std::runtime_error("no strategy " + name);
}

}  // namespace

TEST(BenchReport, StepTimesAreSummarisedPerStrategy) {
  Report rep = make_report(two_node_record());
  const StrategyReport& none = find(rep, "none");
  EXPECT_DOUBLE_EQ(none.step_ms.p50, 25);
  EXPECT_DOUBLE_EQ(none.step_ms.max, 40);
  EXPECT_NEAR(none.step_ms.p99, 39.7, 1e-9);
}

TEST(BenchReport, ABiggerBatchIsReportedPerSample) {
  StrategyReport twice = find(make_report(two_node_record()), "none-2x");
  EXPECT_EQ(twice.batch, 2u);
  EXPECT_DOUBLE_EQ(twice.step_ms.p50, 15);  // steps of 20 and 40 ms, two samples each
  EXPECT_DOUBLE_EQ(twice.step_ms.max, 20);
  EXPECT_EQ(twice.footprint_bytes, 2 * (8u << 20));
}

TEST(BenchReport, IdleIsTheShareOfTheStepARankWaitsAtTheBarrier) {
  StrategyReport closest = find(make_report(two_node_record()), "closest");
  EXPECT_NEAR(closest.idle_mean, (0.1 + 0.3) / 2, 1e-12);
  EXPECT_NEAR(closest.idle_max, 0.3, 1e-12);
}

TEST(BenchReport, MigrationsArePerRankPerSecond) {
  Report rep = make_report(two_node_record());
  EXPECT_DOUBLE_EQ(*find(rep, "none").migrations_per_rank_s, 12.0 / 4);  // 12 over 2 ranks x 2 s
  EXPECT_DOUBLE_EQ(*find(rep, "closest").migrations_per_rank_s, 0);
}

TEST(BenchReport, UnknownMigrationsStayUnknown) {
  Record r = two_node_record();
  r.strategies[1].ranks[1].migrations.reset();
  EXPECT_FALSE(find(make_report(r), "none").migrations_per_rank_s);
  EXPECT_FALSE(find(make_report(r), "none").migrations_vs_closest);
}

TEST(BenchReport, CrossNumaAndRemoteMemoryAreSharesOfAllRanks) {
  StrategyReport none = find(make_report(two_node_record()), "none");
  EXPECT_DOUBLE_EQ(*none.cross_numa, 0.75 / 2);
  EXPECT_DOUBLE_EQ(*none.remote_memory, 50.0 / 200);
}

TEST(BenchReport, RatiosAreAgainstClosestAndInfiniteWhenClosestHadNone) {
  Report rep = make_report(two_node_record());
  const StrategyReport& none = find(rep, "none");
  EXPECT_FALSE(none.p99_vs_closest);  // 2 steps each: too few for an interval, so no ratio
  EXPECT_FALSE(find(rep, "closest").p99_vs_closest);
  EXPECT_TRUE(std::isinf(*none.migrations_vs_closest));
  EXPECT_DOUBLE_EQ(*find(rep, "closest").migrations_vs_closest, 1.0);  // 0 against 0
}

TEST(BenchReport, NoRatiosWithoutClosest) {
  Record r = two_node_record();
  r.strategies.erase(r.strategies.begin());
  Report rep = make_report(r);
  for (const StrategyReport& s : rep.strategies) {
    EXPECT_FALSE(s.p99_vs_closest) << s.name;
    EXPECT_FALSE(s.migrations_vs_closest) << s.name;
  }
}

TEST(BenchReport, OneNumaNodeIsSaidPlainly) {
  Record r = two_node_record();
  auto says_one_node = [](const Report& rep) {
    for (const std::string& n : rep.notes)
      if (n.starts_with("one NUMA node")) return true;
    return false;
  };
  EXPECT_FALSE(says_one_node(make_report(r)));
  r.machine.numa_nodes = 1;
  EXPECT_TRUE(says_one_node(make_report(r)));
}

TEST(BenchReport, OversubscriptionIsSaidWithWhatItMeasuresInstead) {
  Record r = two_node_record();  // 2 ranks x 1 thread + 2 noise on 16 CPUs: room enough
  auto said = [](const Report& rep, const std::string& what) {
    return std::any_of(rep.notes.begin(), rep.notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  EXPECT_FALSE(said(make_report(r), "oversubscribed"));
  r.machine.allowed_cpus = 2;  // 4 wanted on 2
  Report rep = make_report(r);
  EXPECT_TRUE(said(rep, "oversubscribed: 2 rank(s) x 1 thread(s) + 2 noise process(es) on 2 allowed CPUs"));
  EXPECT_TRUE(said(rep, "not where it runs"));
}

TEST(BenchReport, EachNoisePlacementIsComparedWithItsOwnClosest) {
  Report rep = make_report(placements_record());
  ASSERT_EQ(rep.strategies.size(), 4u);
  const StrategyReport& roaming_none = rep.strategies[1];
  const StrategyReport& reserved_none = rep.strategies[3];
  EXPECT_EQ(roaming_none.noise, NoisePlacement::roaming);
  EXPECT_EQ(reserved_none.noise, NoisePlacement::reserved);
  ASSERT_TRUE(roaming_none.p50_vs_closest);
  EXPECT_NEAR(roaming_none.p50_vs_closest->estimate, 2.0, 1e-9);  // 20 over roaming closest's 10, not reserved's 5
  EXPECT_EQ(roaming_none.p50_vs_closest->verdict, Verdict::slower);
  ASSERT_TRUE(reserved_none.p50_vs_closest);
  EXPECT_NEAR(reserved_none.p50_vs_closest->estimate, 1.0, 1e-9);
  EXPECT_EQ(reserved_none.p50_vs_closest->verdict, Verdict::no_difference);
  EXPECT_FALSE(rep.strategies[0].p50_vs_closest);  // each closest is its placement's base
  EXPECT_FALSE(rep.strategies[2].p50_vs_closest);
  // And what keeping the noise on the reserved CPUs did to closest: half the step time.
  ASSERT_TRUE(rep.reserved_vs_roaming_p50);
  EXPECT_NEAR(rep.reserved_vs_roaming_p50->estimate, 0.5, 1e-9);
  EXPECT_EQ(rep.reserved_vs_roaming_p50->verdict, Verdict::faster);
  EXPECT_FALSE(rep.reserved_vs_roaming_p99);  // 100 steps: no p99 interval
  EXPECT_FALSE(make_report(two_node_record()).reserved_vs_roaming_p50);  // one placement: nothing to compare
}

TEST(BenchReport, OversubscriptionUnderReservedNoiseCountsTheCpusLeftBesideThem) {
  Record r = placements_record();  // 2 ranks x 1 thread, 2 noise processes on 0 and 8, 16 CPUs
  auto said = [](const Record& rec, const std::string& what) {
    Report rep = make_report(rec);
    return std::any_of(rep.notes.begin(), rep.notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  EXPECT_FALSE(said(r, "oversubscribed"));
  EXPECT_TRUE(said(r, "noise on reserved CPUs 0,8: the noise processes run only there"));
  r.machine.allowed_cpus = 4;  // roaming: 2 + 2 on 4, room enough; reserved: 2 ranks on the 2 left
  EXPECT_FALSE(said(r, "oversubscribed"));
  r.config.threads = 2;  // roaming: 4 + 2 on 4; reserved: 4 on the 2 left
  EXPECT_TRUE(said(r, "oversubscribed (noise roaming): 2 rank(s) x 2 thread(s) + 2 noise process(es) on 4 allowed CPUs"));
  EXPECT_TRUE(said(r, "oversubscribed (noise on reserved CPUs): 2 rank(s) x 2 thread(s) on the 2 CPU(s) left beside the reserved 0,8"));
  r.machine.allowed_cpus = 6;  // roaming: 4 + 2 on 6 fits; reserved: 4 on 4 fits
  EXPECT_FALSE(said(r, "oversubscribed"));
}

TEST(BenchReport, HousekeepingCpusAreTheReserveOrEachPackagesFirstCore) {
  // Two packages of two cores, SMT siblings numbered n and n+4.
  topo::Topology t;
  t.cpus = CpuSet::parse_list("0-7").value();
  t.allowed_cpus = t.cpus;
  t.packages = {{0, CpuSet::parse_list("0-1,4-5").value()}, {1, CpuSet::parse_list("2-3,6-7").value()}};
  for (unsigned c = 0; c < 4; ++c) t.cores.push_back({CpuSet::of({c, c + 4})});
  plan::Request r;
  EXPECT_EQ(housekeeping_cpus(t, r), CpuSet::parse_list("0,2,4,6").value());
  r.allowed = CpuSet::parse_list("1-3,5-7").value();  // a cgroup without CPU 0's core
  EXPECT_EQ(housekeeping_cpus(t, r), CpuSet::parse_list("1-2,5-6").value());
  r.reserve = CpuSet::of({3});  // --reserve: that core, whole
  EXPECT_EQ(housekeeping_cpus(t, r), CpuSet::of({3, 7}));
  r.reserve = CpuSet::of({0});  // reserved outside the allowed CPUs: nothing to put the noise on
  EXPECT_TRUE(housekeeping_cpus(t, r).empty());
}

TEST(BenchReport, ARanksWarningIsTheWholeRunsWithoutItsRankNumber) {
  EXPECT_EQ(ranks_warning("local rank 3: memory policy refused by the container (set_mempolicy 1: Operation not permitted)", "ranks"),
            "ranks: memory policy refused by the container (set_mempolicy 1: Operation not permitted)");
  EXPECT_EQ(ranks_warning("GPU 0 is held by DCGM", "closest's ranks"), "closest's ranks: GPU 0 is held by DCGM");
}

TEST(BenchReport, OtherLoadAndStolenTimeAreSaid) {
  Record r = two_node_record();
  auto said = [](const Record& rec, const std::string& what) {
    Report rep = make_report(rec);
    return std::any_of(rep.notes.begin(), rep.notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  r.machine.load_before = 2.0;  // on 16 CPUs: light
  r.machine.steal_share = 0.01;
  r.machine.runnable_outside_mean = 0.25;  // a daemon waking now and then
  r.machine.runnable_outside_max = 1;
  r.machine.allowed_cpus = 2;  // a Slurm step given 2 of the 16: the load average is the whole machine's
  EXPECT_FALSE(said(r, "other load"));
  EXPECT_FALSE(said(r, "stolen time"));
  r.machine.load_before = 9.5;
  r.machine.steal_share = 0.125;
  r.machine.runnable_outside_mean = 3.25;
  r.machine.runnable_outside_max = 4;
  EXPECT_TRUE(said(r, "the 1-minute load average was 9.50 on 16 CPUs"));
  EXPECT_TRUE(said(r, "other load during the run: 3.25 threads of other processes were runnable on average (at most 4"));
  EXPECT_TRUE(said(r, "the hypervisor took 12.50% of the CPU time"));
}

TEST(BenchReport, ProcStatAndLoadavgAreParsed) {
  auto t = parse_cpu_ticks("cpu  100 5 50 800 10 1 2 32 7 0\ncpu0 50 2 25 400 5 0 1 16 3 0\n");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->total, 100u + 5 + 50 + 800 + 10 + 1 + 2 + 32);  // guest time is inside user already
  EXPECT_EQ(t->steal, 32u);
  EXPECT_FALSE(parse_cpu_ticks("cpu0 1 2 3\n"));
  EXPECT_FALSE(parse_cpu_ticks("cpu  1 2 x 4 5 6 7 8\n"));
  EXPECT_FALSE(parse_cpu_ticks("cpu  1 2 3\n"));  // fewer than eight columns
  EXPECT_EQ(parse_load_average("0.52 0.58 0.59 2/431 12345\n"), 0.52);
  EXPECT_FALSE(parse_load_average("x 0.58\n"));
  EXPECT_FALSE(parse_load_average(""));
}

TEST(BenchReport, StrategiesArePoliciesWithAnOptionalDoubledBatch) {
  auto s = parse_strategy("none-2x");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->policy, plan::Policy::none);
  EXPECT_EQ(s->batch, 2u);
  auto c = parse_strategy("cpu-only");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->policy, plan::Policy::cpu_only);
  EXPECT_EQ(c->batch, 1u);
  EXPECT_FALSE(parse_strategy("fastest"));
  EXPECT_FALSE(parse_strategy("-2x"));
  for (const std::string& name : default_strategies()) EXPECT_TRUE(parse_strategy(name)) << name;
}

TEST(BenchRecordJson, TheRecordReadsBackAsItWasWritten) {
  Record r = two_node_record();
  r.warnings = {"a warning"};
  r.strategies[1].ranks[0].migrations.reset();
  r.machine.load_before = 0.25;  // steal_share not read: stays unknown
  r.machine.runnable_outside_mean = 1.5;
  r.machine.runnable_outside_max = 3;
  auto back = record_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->machine.name, "n1");
  EXPECT_EQ(back->machine.load_before, 0.25);
  EXPECT_FALSE(back->machine.steal_share);
  EXPECT_EQ(back->machine.runnable_outside_mean, 1.5);
  EXPECT_EQ(back->machine.runnable_outside_max, 3u);
  EXPECT_EQ(back->config.buffer_bytes, r.config.buffer_bytes);
  ASSERT_EQ(back->strategies.size(), 3u);
  EXPECT_EQ(back->strategies[2].batch, 2u);
  EXPECT_EQ(back->strategies[1].step_ms, r.strategies[1].step_ms);
  EXPECT_FALSE(back->strategies[1].ranks[0].migrations);
  EXPECT_EQ(back->strategies[1].ranks[1].migrations, 4u);
  EXPECT_EQ(back->strategies[0].ranks[1].cpus, CpuSet::of({1}));
  EXPECT_EQ(back->warnings, r.warnings);
}

TEST(BenchRecordJson, NoisePlacementsAndTheReservedCpusReadBack) {
  Record r = placements_record();
  auto j = nlohmann::json::parse(to_json(r).dump());
  auto back = record_from_json(j);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->config.reserved, CpuSet::of({0, 8}));
  ASSERT_EQ(back->strategies.size(), 4u);
  EXPECT_EQ(back->strategies[1].noise, NoisePlacement::roaming);
  EXPECT_EQ(back->strategies[3].noise, NoisePlacement::reserved);
  EXPECT_EQ(render::bench_text(*back, make_report(*back), true), render::bench_text(r, make_report(r), true));
  // A record from before the placements: every strategy's noise roamed.
  auto old = j;
  old["config"].erase("reserved_cpus");
  for (auto& s : old["samples"]) s.erase("noise");
  auto old_back = record_from_json(old);
  ASSERT_TRUE(old_back) << old_back.error().message();
  EXPECT_TRUE(old_back->config.reserved.empty());
  EXPECT_EQ(old_back->strategies[3].noise, NoisePlacement::roaming);
  auto unknown = j;
  unknown["samples"][2]["noise"] = "pinned";
  EXPECT_NE(record_from_json(unknown).error().why.find("unknown noise placement 'pinned'"), std::string::npos);
  auto cpus = j;
  cpus["config"]["reserved_cpus"] = "x";
  EXPECT_FALSE(record_from_json(cpus));
}

TEST(BenchRecordJson, TheFullOutputIsWhatInputReads) {
  Record r = two_node_record();
  Report rep = make_report(r);
  auto back = record_from_json(nlohmann::json::parse(render::bench_json(r, rep).dump()));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(render::bench_text(*back, make_report(*back), true), render::bench_text(r, rep, true));
}

TEST(BenchRecordJson, BrokenRecordsSayWhatIsWrong) {
  auto j = nlohmann::json::parse(to_json(two_node_record()).dump());
  auto without = j;
  without.erase("machine");
  EXPECT_NE(record_from_json(without).error().why.find("missing 'machine'"), std::string::npos);
  auto negative = j;
  negative["samples"][0]["step_ms"][1] = -3;
  EXPECT_NE(record_from_json(negative).error().why.find("negative"), std::string::npos);
  auto batch = j;
  batch["samples"][0]["batch"] = 0;
  EXPECT_FALSE(record_from_json(batch));
  auto policy = j;
  policy["samples"][0]["policy"] = "fastest";
  EXPECT_NE(record_from_json(policy).error().why.find("unknown policy"), std::string::npos);
  auto cpus = j;
  cpus["samples"][0]["ranks"][0]["cpus"] = "3-1";
  EXPECT_FALSE(record_from_json(cpus));
  auto type = j;
  type["config"]["steps"] = "many";
  EXPECT_NE(record_from_json(type).error().why.find("wrong type"), std::string::npos);
  EXPECT_FALSE(record_from_json(nlohmann::json::array()));
}

TEST(BenchSvg, OneBoxPerStrategyAndTheAxisCoversEveryP99) {
  Record r = two_node_record();
  std::string svg = render::bench_svg(r, make_report(r));
  size_t boxes = 0;
  for (size_t at = svg.find("fill-opacity"); at != std::string::npos; at = svg.find("fill-opacity", at + 1)) ++boxes;
  EXPECT_EQ(boxes, 3u);
  EXPECT_TRUE(svg.starts_with("<?xml"));
  EXPECT_NE(svg.find(">none-2x</text>"), std::string::npos);
  EXPECT_EQ(svg.find("\u2192"), std::string::npos);  // every max is within the axis here
}

TEST(BenchText, EachNoisePlacementIsASectionOfItsOwn) {
  Record r = placements_record();
  std::string text = render::bench_text(r, make_report(r), false);
  size_t roaming = text.find("noise roaming over every allowed CPU:"), reserved = text.find("noise on the reserved CPUs 0,8,");
  ASSERT_NE(roaming, std::string::npos) << text;
  ASSERT_NE(reserved, std::string::npos) << text;
  EXPECT_LT(roaming, reserved);
  EXPECT_NE(text.find("  none: p50 2.00x ["), std::string::npos) << text;  // in the roaming section
  EXPECT_NE(text.find("  none: p50 1.00x ["), std::string::npos) << text;  // in the reserved one
  EXPECT_NE(text.find("closest with the noise on the reserved CPUs against closest with it roaming"), std::string::npos);
  std::string one = render::bench_text(two_node_record(), make_report(two_node_record()), false);
  EXPECT_EQ(one.find("noise roaming over"), std::string::npos);  // one placement: no sections
  EXPECT_NE(render::bench_svg(r, make_report(r)).find(">none (noise reserved)</text>"), std::string::npos);
}

TEST(BenchSvg, AMaxFarBeyondTheP99sIsDrawnAtTheEdgeWithItsValue) {
  Record r = two_node_record();
  r.strategies[0].step_ms.assign(200, 10);
  r.strategies[0].step_ms.push_back(500);
  std::string svg = render::bench_svg(r, make_report(r));
  EXPECT_NE(svg.find("max 500.0 \u2192"), std::string::npos);
}

}  // namespace gpubind::bench
