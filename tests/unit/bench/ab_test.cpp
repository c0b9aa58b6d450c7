// bench --ab on hand-made output and records: the step-time pattern (its named group, its unit),
// which lines count (one rank's, tagged by launch), step files, the report's verdicts against the
// base, what it says when samples are too few, and the record read back.
#include "bench/ab.hpp"

#include <gtest/gtest.h>

#include "render/bench_render.hpp"

namespace gpubind::bench {

namespace {

// `runs` runs per strategy of `steps` steps around `ms` (a regular +-10 % wobble), alternating.
AbRecord ab_record(double base_ms, double other_ms, unsigned runs, unsigned steps) {
  AbRecord r;
  r.machine = {"n1", 2, 2, 0, 16, 16, 2};
  r.command = {"python3", "train.py"};
  r.launch_args = {"-n", "2"};
  r.ranks = 2;
  r.strategies = {"closest", "none"};
  r.rounds = runs;
  r.warmup = 5;
  r.source = StepSource::pattern;
  r.pattern = "step [0-9]+ (?<ms>[0-9.]+) ms";
  for (unsigned i = 0; i < runs; ++i)
    for (const std::string& name : r.strategies) {
      AbRun run;
      run.strategy = name;
      run.round = i;
      run.wall_s = 3;
      double ms = name == "closest" ? base_ms : other_ms;
      for (unsigned s = 0; s < steps; ++s) run.step_ms.push_back(ms * (0.9 + 0.2 * double(s % 5) / 4));
      r.runs.push_back(run);
    }
  return r;
}

bool says(const AbReport& rep, const std::string& what) {
  return std::any_of(rep.notes.begin(), rep.notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
}

}  // namespace

TEST(BenchAbPattern, TheNamedGroupHoldsTheStepTimeInItsUnit) {
  auto ms = parse_step_pattern("step [0-9]+ (?<ms>[0-9.]+) ms");
  ASSERT_TRUE(ms) << ms.error().message();
  EXPECT_EQ(ms->group, 1u);
  EXPECT_EQ(step_times_in_output("[0] step 3 12.5 ms\n", *ms, 0), std::vector<double>{12.5});
  auto s = parse_step_pattern("iter (?P<s>[0-9.]+)s");  // Python's spelling, seconds
  ASSERT_TRUE(s);
  EXPECT_EQ(step_times_in_output("[0] iter 0.25s\n", *s, 0), std::vector<double>{250});
  auto us = parse_step_pattern("took (?<us>[0-9]+)");
  ASSERT_TRUE(us);
  EXPECT_EQ(step_times_in_output("[0] took 1500\n", *us, 0), std::vector<double>{1.5});
}

TEST(BenchAbPattern, GroupsBeforeTheNamedOneAreCountedAndOthersAreNot) {
  // (step|iter) is group 1; (?:...) captures nothing; a '(' escaped or in a class is a character.
  auto p = parse_step_pattern(R"((step|iter) \((?:no\.)?[0-9]+\) [(](?<ms>[0-9.]+))");
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->group, 2u);
  EXPECT_EQ(step_times_in_output("[0] iter (no.7) (4.25 ms\n", *p, 0), std::vector<double>{4.25});
  // A lookahead is refused, saying why (RE2 has none), not half-matched.
  auto ahead = parse_step_pattern(R"(step (?=[0-9])(?<ms>[0-9.]+))");
  ASSERT_FALSE(ahead);
  EXPECT_NE(ahead.error().why.find("no lookahead, lookbehind or backreference"), std::string::npos) << ahead.error().why;
}

TEST(BenchAbPattern, PatternsThatHungOrCrashedStdRegexMatchInLinearTime) {
  // Nested groups under a repeat over a 4,080-byte line overflowed libstdc++'s recursive
  // executor (SIGSEGV); (a|aa)+ before a 'b' that never comes backtracked exponentially (38 s at
  // 40 bytes). Both now finish (RE2 is linear and does not recurse on the input).
  auto nested = parse_step_pattern("(?<ms>((((((((.))))))))*)");
  ASSERT_TRUE(nested) << nested.error().message();
  std::string line = "[0] 0." + std::string(4078, '0') + "\n";  // 4,080 bytes after the tag: a step of 0 ms
  EXPECT_EQ(step_times_in_output(line, *nested, 0), std::vector<double>{0});
  auto exponential = parse_step_pattern("(?<ms>(a|aa)+)b");
  ASSERT_TRUE(exponential) << exponential.error().message();
  EXPECT_TRUE(step_times_in_output("[0] " + std::string(4000, 'a') + "\n", *exponential, 0).empty());
}

TEST(BenchAbPattern, APatternWithoutOneNamedUnitGroupIsRefusedWithHowToWriteIt) {
  auto none = parse_step_pattern("step ([0-9.]+) ms");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().why.find("(?<ms>[0-9.]+)"), std::string::npos);
  EXPECT_EQ(none.error().kind, ErrorKind::usage);
  auto unit = parse_step_pattern("(?<time>[0-9.]+)");
  ASSERT_FALSE(unit);
  EXPECT_NE(unit.error().why.find("ms, s or us"), std::string::npos);
  auto two = parse_step_pattern("(?<ms>[0-9]+) (?<s>[0-9]+)");
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().why.find("more than one"), std::string::npos);
  auto broken = parse_step_pattern("step (?<ms>[0-9.]+");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().why.find("not a regular expression"), std::string::npos);
  EXPECT_FALSE(parse_step_pattern("(?<ms"));
}

TEST(BenchAbOutput, OnlyTheChosenRanksMatchingLinesCount) {
  auto p = parse_step_pattern("step [0-9]+ (?<ms>[0-9.]+) ms");
  ASSERT_TRUE(p);
  std::string out =
      "[0] step 0 10.0 ms\n"
      "[1] step 0 99.0 ms\n"           // another rank
      "step 1 50.0 ms\n"               // launch's own line, or an untagged one
      "[0] loss 0.5\n"                 // no match
      "[0] epoch 1: step 1 11.5 ms\n"  // searched, not anchored
      "[10] step 1 77.0 ms\n"          // rank 10 is not rank 1 or 0
      "[0] step 2 nan ms\n";           // not a number: skipped
  EXPECT_EQ(step_times_in_output(out, *p, 0), (std::vector<double>{10.0, 11.5}));
  EXPECT_EQ(step_times_in_output(out, *p, 1), std::vector<double>{99.0});
  EXPECT_TRUE(step_times_in_output(out, *p, 2).empty());
}

TEST(BenchAbOutput, TheRanksBindingWarningsAreSaidOnceForThePolicy) {
  const std::string refused = "memory policy refused by the container (set_mempolicy 0: Operation not permitted): CPUs bound, "
                              "pages placed by first touch";
  std::string err = "gpubind: warning: the topology has no GPUs: CPU-only plan\n"  // launch's own: not a rank's
                    "[0] gpubind: warning: local rank 0: " + refused + "\n"
                    "[1] gpubind: warning: local rank 1: " + refused + "\n"
                    "[1] step 1 2.5 ms\n"
                    "[x] gpubind: warning: local rank 2: not a rank's tag\n"
                    "[0] gpubind: warning: GPU 0 is held by nvidia-persistenced\n"
                    "[0] gpubind: warning: local rank 0: " + refused + "\n";
  EXPECT_EQ(rank_warnings_in_output(err, "closest's ranks"),
            (std::vector<std::string>{"closest's ranks: " + refused, "closest's ranks: GPU 0 is held by nvidia-persistenced"}));
  EXPECT_TRUE(rank_warnings_in_output("[0] step 1 2.5 ms\n", "none's ranks").empty());
  EXPECT_EQ(rank_line_text("[12] hello"), std::optional<std::string_view>("hello"));
  EXPECT_FALSE(rank_line_text("[] hello"));
  EXPECT_FALSE(rank_line_text("gpubind launch: 2 rank(s)"));
}

TEST(BenchAbOutput, AStepFileHasOneTimePerLine) {
  auto t = step_times_in_file("# ms per step\n1.5\n\n  2.25 \n3\n");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(*t, (std::vector<double>{1.5, 2.25, 3}));
  auto bad = step_times_in_file("1.5\nstep 2\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().what, "line 2");
  EXPECT_FALSE(step_times_in_file("-1\n"));
}

TEST(BenchAbReport, AClearLossIsSlowerAgainstTheFirstStrategy) {
  AbReport rep = make_ab_report(ab_record(10, 15, 4, 30));
  ASSERT_EQ(rep.strategies.size(), 2u);
  EXPECT_EQ(rep.base, "closest");
  EXPECT_FALSE(rep.strategies[0].p50_vs_base);
  const AbStrategyReport& none = rep.strategies[1];
  EXPECT_EQ(none.runs, 4u);
  EXPECT_EQ(none.step_ms.count, 120u);
  ASSERT_TRUE(none.p50_vs_base);
  EXPECT_NEAR(none.p50_vs_base->estimate, 1.5, 1e-9);
  EXPECT_EQ(none.p50_vs_base->verdict, Verdict::slower);
  EXPECT_FALSE(none.p99_vs_base);
  EXPECT_TRUE(says(rep, "the p99 needs 500 samples per strategy"));
}

TEST(BenchAbReport, TheSameStepsAreNoSignificantDifference) {
  AbReport rep = make_ab_report(ab_record(10, 10, 4, 30));
  ASSERT_TRUE(rep.strategies[1].p50_vs_base);
  EXPECT_EQ(rep.strategies[1].p50_vs_base->verdict, Verdict::no_difference);
}

TEST(BenchAbReport, BelowFourRunsOfAPolicyTheRatioIsShownWithoutAVerdict) {
  // Two runs a policy: the bootstrap resamples 2 runs against 2, which no test over runs can call
  // different at 5 % (an A/A test gave "1.30x [1.28-1.52] slower" in 2 of 3 tries). A clear loss
  // of 3 runs is no verdict either; at 4 runs it is.
  for (unsigned runs : {2u, 3u}) {
    AbReport rep = make_ab_report(ab_record(10, 15, runs, 30));
    ASSERT_TRUE(rep.strategies[1].p50_vs_base) << runs;
    EXPECT_NEAR(rep.strategies[1].p50_vs_base->estimate, 1.5, 1e-9);
    EXPECT_EQ(rep.strategies[1].p50_vs_base->verdict, Verdict::too_few_runs) << runs;
    EXPECT_TRUE(says(rep, "too few runs to tell: " + std::to_string(runs) + " run(s) of a policy, and a test over runs needs 4 of each"));
    EXPECT_NE(render::bench_ab_text(ab_record(10, 15, runs, 30), rep).find("none: p50 1.50x"), std::string::npos);
    EXPECT_NE(render::bench_ab_text(ab_record(10, 15, runs, 30), rep).find("too few runs to tell; p99"), std::string::npos);
  }
  AbReport four = make_ab_report(ab_record(10, 15, 4, 30));
  EXPECT_EQ(four.strategies[1].p50_vs_base->verdict, Verdict::slower);
  EXPECT_FALSE(says(four, "too few runs"));
}

TEST(BenchAbReport, WallTimesAloneAreTooFewForAnIntervalAndTheReportSaysWhatToDo) {
  AbRecord r = ab_record(3000, 3500, 5, 1);
  r.source = StepSource::wall;
  r.warmup = 0;
  AbReport rep = make_ab_report(r);
  EXPECT_FALSE(rep.strategies[1].p50_vs_base);
  EXPECT_TRUE(says(rep, "wall time: one sample per run, 5 sample(s) for a strategy: no ratio against closest"));
  EXPECT_TRUE(says(rep, "--step-regex or --step-file"));
  EXPECT_FALSE(says(rep, "no GPU"));  // the record's machine has 2
}

TEST(BenchAbReport, MoreRanksThanAllowedCpusIsSaidOversubscribed) {
  AbRecord r = ab_record(10, 10, 4, 30);
  EXPECT_FALSE(says(make_ab_report(r), "oversubscribed"));  // 2 ranks on 16 CPUs
  r.machine.allowed_cpus = 2;
  EXPECT_FALSE(says(make_ab_report(r), "oversubscribed"));  // one CPU each
  r.machine.allowed_cpus = 1;  // Slurm's task/affinity gave bench one CPU (srun -n1)
  EXPECT_TRUE(says(make_ab_report(r), "oversubscribed: 2 ranks on 1 allowed CPU(s): every policy shares CPUs"));
  EXPECT_EQ(ab_node_notes(r).front().rfind("oversubscribed: ", 0), 0u);  // said before the runs, too
}

TEST(BenchAbRecordJson, TheRecordReadsBackAndReportsTheSame) {
  AbRecord r = ab_record(10, 12, 3, 25);
  r.machine.load_before = 0.5;
  auto back = ab_record_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->command, r.command);
  EXPECT_EQ(back->launch_args, r.launch_args);
  EXPECT_EQ(back->source, StepSource::pattern);
  ASSERT_EQ(back->runs.size(), 6u);
  EXPECT_EQ(back->runs[3].step_ms, r.runs[3].step_ms);
  EXPECT_EQ(render::bench_ab_text(*back, make_ab_report(*back)), render::bench_ab_text(r, make_ab_report(r)));
  // The full --json output (report included) is what --input reads, warnings too.
  r.warnings = {"closest's ranks: memory policy refused by the container"};
  auto full = render::bench_ab_json(r, make_ab_report(r));
  auto again = ab_record_from_json(nlohmann::json::parse(full.dump()));
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->warnings, r.warnings);
  EXPECT_NE(render::bench_ab_text(*again, make_ab_report(*again)).find("warnings:\n  closest's ranks: memory policy refused"), std::string::npos);
  // A record written before the warnings were kept reads as having none.
  auto old = nlohmann::json::parse(full.dump());
  old.erase("warnings");
  auto read_old = ab_record_from_json(old);
  ASSERT_TRUE(read_old) << read_old.error().message();
  EXPECT_TRUE(read_old->warnings.empty());
}

TEST(BenchAbRecordJson, BrokenRecordsSayWhatIsWrong) {
  auto j = nlohmann::json::parse(to_json(ab_record(10, 12, 1, 25)).dump());
  auto format = j;
  format["format"] = "gpubind-bench/3";
  EXPECT_NE(ab_record_from_json(format).error().why.find("gpubind-bench-ab/1"), std::string::npos);
  auto stranger = j;
  stranger["runs"][0]["strategy"] = "numa";
  EXPECT_NE(ab_record_from_json(stranger).error().why.find("'numa' is not among"), std::string::npos);
  auto negative = j;
  negative["runs"][1]["step_ms"][0] = -1;
  EXPECT_NE(ab_record_from_json(negative).error().why.find("negative"), std::string::npos);
  auto source = j;
  source["config"]["source"] = "guess";
  EXPECT_FALSE(ab_record_from_json(source));
  auto missing = j;
  missing.erase("runs");
  EXPECT_FALSE(ab_record_from_json(missing));
}

}  // namespace gpubind::bench
