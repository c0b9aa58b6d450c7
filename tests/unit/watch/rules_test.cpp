// watch's rules one by one, on evidence built by hand (tests/unit/watch/watch_test.cpp drives them
// through the Watcher from snapshots).
#include "watch/rules.hpp"

#include <gtest/gtest.h>

namespace gpubind::watch::rules {
namespace {

RankInterval measured() {
  RankInterval r;
  r.pid = 42;
  r.gpus = {"0000:18:00.0"};
  return r;
}
RankEvidence evidence(const RankInterval& r) { return RankEvidence{r, 2.0, *CpuSet::parse_list("0-7"), {0}, {}, std::nullopt, false, {}}; }
MaskChange change(int tid, const char* thread, const char* before, const char* after) {
  return {tid, thread, *CpuSet::parse_list(before), *CpuSet::parse_list(after)};
}

TEST(Rules, MigratingAboveTheRateNamesCountSecondsAndThreshold) {
  RankInterval r = measured();
  r.migrations = 9;
  r.migrations_per_second = 4.5;
  auto f = migrating(evidence(r), {});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Finding::migrating);
  EXPECT_EQ(f->reason, "9 migrations in 2.0 s (4.5/s, threshold 1.0/s)");
  r.migrations_per_second = 1.0;  // at the threshold: not above it
  EXPECT_FALSE(migrating(evidence(r), {}));
}

TEST(Rules, MigratingIsNotJudgedForARankNewInTheInterval) {
  RankInterval r = measured();
  r.migrations_per_second = 100;
  r.started = true;
  EXPECT_FALSE(migrating(evidence(r), {}));
}

TEST(Rules, CrossSocketAboveTheShareNamesTheGpusCpus) {
  RankInterval r = measured();
  r.cross_socket = r.cross_numa = 0.5;
  auto f = cross_socket(evidence(r), {});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->reason, "50 % of its CPU time on another package than its GPU's (CPUs 0-7 are the GPU's node)");
}

TEST(Rules, CrossNumaGivesWayToCrossSocket) {
  RankInterval r = measured();
  r.cross_socket = r.cross_numa = 0.5;
  EXPECT_FALSE(cross_numa(evidence(r), {}));
  r.cross_socket = 0.0;  // off the node, within the package
  auto f = cross_numa(evidence(r), {});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Finding::cross_numa);
  EXPECT_EQ(f->reason, "50 % of its CPU time off its GPU's NUMA node 0 (CPUs 0-7)");
}

TEST(Rules, LocalityIsNotJudgedWithoutTheGpusCpus) {
  RankInterval r = measured();
  r.cross_socket = r.cross_numa = 1.0;
  RankEvidence e = evidence(r);
  e.gpu_cpus.reset();
  EXPECT_FALSE(cross_socket(e, {}));
  EXPECT_FALSE(cross_numa(e, {}));
}

TEST(Rules, RemoteMemoryAboveTheShare) {
  RankInterval r = measured();
  r.remote_memory = 0.21;
  auto f = remote_memory(evidence(r), {});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->reason, "21 % of its resident pages off its GPU's node 0");
  r.remote_memory = 0.2;
  EXPECT_FALSE(remote_memory(evidence(r), {}));
  r.remote_memory.reset();  // numa_maps not read
  EXPECT_FALSE(remote_memory(evidence(r), {}));
}

TEST(Rules, DriftedFromIntentComesFirst) {
  RankInterval r = measured();
  RankEvidence e = evidence(r);
  EXPECT_FALSE(drifted(e, {}));
  e.drifted_from_intent = true;
  e.drifted_threads = {change(43, "pt_nccl", "0-7", "8-15")};
  ASSERT_TRUE(drifted(e, {}));
  EXPECT_EQ(drifted(e, {})->reason,
            "allowed CPUs differ from what gpubind applied (GPUBIND_CPUS); allowed CPUs of 1 thread(s) differ from when watch first "
            "saw them (thread 43 'pt_nccl': 0-7 -> 8-15)");
  e.drifted_threads.clear();
  EXPECT_EQ(drifted(e, {})->reason, "allowed CPUs differ from what gpubind applied (GPUBIND_CPUS)");
}

TEST(Rules, DriftedFromTheFirstSampleNamesTheThreadAndItsMasks) {
  RankInterval r = measured();
  RankEvidence e = evidence(r);
  e.drifted_threads = {change(43, "pt_nccl", "0-7", "8-15"), change(44, "omp", "0-7", "0-15")};
  ASSERT_TRUE(drifted(e, {}));
  EXPECT_EQ(drifted(e, {})->reason, "allowed CPUs of 2 thread(s) differ from when watch first saw them (thread 43 'pt_nccl': 0-7 -> 8-15)");
}

// A mask flipped back and forth: at this sample it is what watch first saw, but it changed 12 s
// ago, within the hold; past the hold the rank is no longer DRIFTED.
TEST(Rules, DriftedHoldsForTheDriftHoldAfterAChange) {
  RankInterval r = measured();
  r.mask_changes = {change(45, "python3", "8-15", "0-7")};
  RankEvidence e = evidence(r);
  e.since_change = 12;
  ASSERT_TRUE(drifted(e, {}));
  EXPECT_EQ(drifted(e, {})->reason, "allowed CPUs changed (thread 45 'python3': 8-15 -> 0-7) 12 s ago (DRIFTED holds 30 s after a change)");
  e.since_change = 30;  // at the hold: still held
  EXPECT_TRUE(drifted(e, {}));
  e.since_change = 30.5;
  EXPECT_FALSE(drifted(e, {}));
  Thresholds longer;
  longer.drift_hold = 60;
  EXPECT_TRUE(drifted(e, longer));
}

TEST(Rules, OverlapJoinsChecksReasons) {
  RankInterval r = measured();
  RankEvidence e = evidence(r);
  EXPECT_FALSE(overlap(e, {}));
  e.overlaps = {"shares CPUs 0-1 with PID 7", "shares CPUs 2 with PID 8"};
  EXPECT_EQ(overlap(e, {})->reason, "shares CPUs 0-1 with PID 7; shares CPUs 2 with PID 8");
}

TEST(Rules, EveryRankRuleInTheOrderFindingsAreListed) {
  RankInterval r = measured();
  r.migrations_per_second = 10;
  r.cross_numa = 1.0;
  r.cross_socket = 0.0;
  r.remote_memory = 1.0;
  RankEvidence e = evidence(r);
  e.drifted_threads = {change(42, "python3", "0", "1")};
  e.overlaps = {"x"};
  std::vector<Finding> found;
  for (RankRule rule : kRankRules)
    if (auto f = rule(e, {})) found.push_back(f->kind);
  // Off the node but within the package: CROSS_NUMA, not CROSS_SOCKET.
  EXPECT_EQ(found, (std::vector<Finding>{Finding::migrating, Finding::cross_numa, Finding::remote_memory, Finding::drifted,
                                         Finding::overlap}));
}

TEST(Rules, CpuSpreadNeedsTwoRanksAndABusyOne) {
  EXPECT_FALSE(cpu_spread({1.0}, 1.0));
  EXPECT_FALSE(cpu_spread({0.05, 0.09}, 1.0));  // the busiest under a tenth of the interval
  auto s = cpu_spread({0.5, 1.0}, 1.0);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->least, 0.5);
  EXPECT_DOUBLE_EQ(s->most, 1.0);
  EXPECT_DOUBLE_EQ(s->imbalance, 0.5);
  EXPECT_NEAR(s->cv, 0.25 / 0.75, 1e-12);  // standard deviation 0.25 over mean 0.75
}

TEST(Rules, GpuSpreadNeedsTwoGpusAndABusyOne) {
  EXPECT_FALSE(gpu_spread({{"a", 0.9}}));
  EXPECT_FALSE(gpu_spread({{"a", 0.05}, {"b", 0.0}}));
  auto s = gpu_spread({{"a", 0.2}, {"b", 0.97}, {"c", 0.5}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->least_pci, "a");
  EXPECT_EQ(s->most_pci, "b");
  EXPECT_NEAR(s->imbalance, 0.77, 1e-12);
}

TEST(Rules, ImbalanceOverEitherSpreadOneLineForBoth) {
  CpuSpread cpu{0.5, 1.0, 0.5, 0.33};
  GpuSpread gpu{"a", "b", 0.2, 0.97, 0.77};
  EXPECT_EQ(*imbalance(cpu, std::nullopt, {}), "ranks' CPU time differs by 50 % of the busiest (0.50 s to 1.00 s)");
  EXPECT_EQ(*imbalance(std::nullopt, gpu, {}), "GPUs' utilization differs by 77 points (a at 20 %, b at 97 %)");
  EXPECT_EQ(*imbalance(cpu, gpu, {}),
            "ranks' CPU time differs by 50 % of the busiest (0.50 s to 1.00 s); GPUs' utilization differs by 77 points (a at 20 %, b "
            "at 97 %)");
  cpu.imbalance = gpu.imbalance = 0.25;  // at the threshold
  EXPECT_FALSE(imbalance(cpu, gpu, {}));
}

}  // namespace
}  // namespace gpubind::watch::rules
