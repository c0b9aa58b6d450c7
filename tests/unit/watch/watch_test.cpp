// watch's rules (watch/watch.hpp), one test per rule and per edge, on hand-made snapshots of the
// DGX H100-like example (GPU 0 on node 0 = package 0, CPUs 0-55,112-167) and the NPS4 DGX A100
// (GPU 0 on node 3, CPUs 48-63,176-191, package 0 also holding nodes 0-2).
#include "watch/watch.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "../../support/test_machines.hpp"
#include "discover/source.hpp"

namespace gpubind::watch {

namespace {

using testing::example;

struct T {  // one thread: where it last ran, its counters so far
  int tid;
  unsigned last_cpu;
  uint64_t migrations = 0;
  double run_seconds = 0;
  const char* allowed = "0-223";
};

probe::ProcessState process(int pid, const std::string& gpu, std::vector<T> threads, const char* rank = "0") {
  probe::ProcessState p;
  p.pid = pid;
  p.comm = "python3";
  p.cpus_allowed = *CpuSet::parse_list(threads.empty() ? "0-223" : threads[0].allowed);
  p.gpus = {gpu};
  p.env["RANK"] = rank;
  for (const T& t : threads) {
    probe::ThreadState s;
    s.tid = t.tid;
    s.comm = p.comm;
    s.last_cpu = t.last_cpu;
    s.migrations = t.migrations;
    s.run_ns = uint64_t(t.run_seconds * 1e9);
    s.cpus_allowed = *CpuSet::parse_list(t.allowed);
    p.threads.push_back(s);
  }
  return p;
}

Snapshot at(double t, std::vector<probe::ProcessState> ps, std::vector<probe::GpuUsage> gpus = {}) { return {t, std::move(ps), std::move(gpus)}; }

bool has(const RankInterval& r, Finding f) { return r.has(f); }

const char* kGpu0 = "0000:18:00.0";

}  // namespace

TEST(Watch, TheFirstSnapshotIsTheBaselineOnly) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  EXPECT_FALSE(w.observe(at(0, {process(10, kGpu0, {{10, 3}})})).has_value());
  EXPECT_EQ(w.summary().intervals, 0u);
}

TEST(Watch, MigratingAboveTheRateThreshold) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 100, 1}, {11, 4, 0, 1}})}));
  auto iv = w.observe(at(2, {process(10, kGpu0, {{10, 5, 104, 2}, {11, 6, 0, 2}})}));
  ASSERT_TRUE(iv && iv->ranks.size() == 1);
  EXPECT_EQ(iv->ranks[0].migrations, 4u);
  EXPECT_DOUBLE_EQ(iv->ranks[0].migrations_per_second, 2.0);  // 4 in 2 s, above 1/s
  EXPECT_TRUE(has(iv->ranks[0], Finding::migrating));
  iv = w.observe(at(4, {process(10, kGpu0, {{10, 5, 105, 3}, {11, 6, 0, 3}})}));
  EXPECT_FALSE(has(iv->ranks[0], Finding::migrating));  // 1 in 2 s: under the threshold
}

TEST(Watch, AMigrationCounterThatWentDownIsAReusedThreadNotANegativeCount) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 500, 1}})}));
  auto iv = w.observe(at(1, {process(10, kGpu0, {{10, 3, 2, 1.5}})}));
  EXPECT_EQ(iv->ranks[0].migrations, 0u);
  EXPECT_FALSE(has(iv->ranks[0], Finding::migrating));
}

TEST(Watch, CrossSocketShareIsWeightedByCpuTime) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  // Thread 10 used 0.9 s on CPU 60 (node 1, the other package); thread 11 0.1 s on its GPU's node.
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0}, {11, 3, 0, 0}})}));
  auto iv = w.observe(at(1, {process(10, kGpu0, {{10, 60, 0, 0.9}, {11, 3, 0, 0.1}})}));
  const RankInterval& r = iv->ranks[0];
  ASSERT_TRUE(r.cross_numa && r.cross_socket);
  EXPECT_NEAR(*r.cross_numa, 0.9, 1e-9);
  EXPECT_NEAR(*r.cross_socket, 0.9, 1e-9);
  EXPECT_TRUE(has(r, Finding::cross_socket));
  EXPECT_FALSE(has(r, Finding::cross_numa));  // the worse of the two is named
  EXPECT_NEAR(r.cpu_seconds, 1.0, 1e-9);
}

TEST(Watch, CrossNumaWithinTheGpusPackage) {
  auto t = example("dgx-a100-nps4");
  Watcher w(t, {});
  const char* gpu = "0000:07:00.0";  // node 3: CPUs 48-63,176-191; CPU 20 is node 1, same package
  w.observe(at(0, {process(10, gpu, {{10, 50, 0, 0}})}));
  auto iv = w.observe(at(1, {process(10, gpu, {{10, 20, 0, 0.5}})}));
  const RankInterval& r = iv->ranks[0];
  EXPECT_NEAR(*r.cross_numa, 1.0, 1e-9);
  EXPECT_NEAR(*r.cross_socket, 0.0, 1e-9);
  EXPECT_TRUE(has(r, Finding::cross_numa));
  EXPECT_FALSE(has(r, Finding::cross_socket));
}

TEST(Watch, AnIdleThreadOffTheNodeDoesNotCount) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 1}, {11, 60, 0, 1}})}));
  auto iv = w.observe(at(1, {process(10, kGpu0, {{10, 3, 0, 1.8}, {11, 60, 0, 1}})}));  // 11 did not run
  EXPECT_NEAR(*iv->ranks[0].cross_numa, 0.0, 1e-9);
  EXPECT_TRUE(iv->ranks[0].findings.empty());
}

// Where the light probe did not read a thread's last CPU again (confined to one NUMA node, it
// migrated), its allowed CPUs tell where it ran when they lie within the domain or outside it.
// Thread 10 is pinned to node 1 (CPUs 56-111) with a stale last CPU 3 on node 0; thread 11 is
// pinned to node 0 with a stale last CPU 60; thread 12 is unbound and last ran on 60 (fresh);
// thread 13 is pinned to node 0 and its fresh last CPU 60 (re-pinned since) is taken as read.
TEST(Watch, AStaleLastCpuGivesWayToTheAllowedCpus) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto threads = [](double run) {
    return std::vector<T>{{10, 3, 0, run, "56-111"}, {11, 60, 0, run, "0-55"}, {12, 60, 0, run, "0-223"}, {13, 60, 0, run, "0-55"}};
  };
  auto stale = [](probe::ProcessState p) {
    p.threads[0].last_cpu_stale = p.threads[1].last_cpu_stale = true;
    return p;
  };
  w.observe(at(0, {stale(process(10, kGpu0, threads(0)))}));
  auto iv = w.observe(at(1, {stale(process(10, kGpu0, threads(1)))}));
  const RankInterval& r = iv->ranks[0];
  ASSERT_TRUE(r.cross_numa.has_value());
  EXPECT_NEAR(*r.cross_numa, 3.0 / 4.0, 1e-9);  // 10 by its mask, 12 and 13 by their last CPU; not 11
  EXPECT_NEAR(*r.cross_socket, 3.0 / 4.0, 1e-9);
}

TEST(Watch, DriftedWhenAThreadsAllowedCpusChangeAfterTheFirstSample) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0, "0-13"}})}));
  auto iv = w.observe(at(1, {process(10, kGpu0, {{10, 3, 0, 0.5, "0-13"}})}));
  EXPECT_FALSE(has(iv->ranks[0], Finding::drifted));
  iv = w.observe(at(2, {process(10, kGpu0, {{10, 3, 0, 1, "0-27"}})}));  // re-pinned (taskset)
  EXPECT_TRUE(has(iv->ranks[0], Finding::drifted));
}

// The reproducer: a rank re-pinned between the sockets every second. Sampled every
// second, what watch first saw and what it sees now agree at every other sample; DRIFTED must not
// flip with them, and each change is counted with the thread that made it.
TEST(Watch, DriftedDoesNotFlipWithTheSamplingPhaseOfAMaskPinnedBackAndForth) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  const char* masks[] = {"0-55", "56-111"};
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0, masks[0]}})}));
  for (int i = 1; i <= 6; ++i) {
    auto iv = w.observe(at(i, {process(10, kGpu0, {{10, 3, 0, double(i), masks[i % 2]}})}));
    ASSERT_TRUE(iv);
    EXPECT_TRUE(has(iv->ranks[0], Finding::drifted)) << "interval " << i;
    ASSERT_EQ(iv->ranks[0].mask_changes.size(), 1u) << "interval " << i;
    EXPECT_EQ(iv->ranks[0].mask_changes[0].after.to_list(), masks[i % 2]);
  }
  Summary s = w.summary();
  EXPECT_EQ(s.ranks[0].mask_changes(), 6u);
  EXPECT_EQ(s.ranks[0].changes_by_thread, (std::map<std::string, uint64_t>{{"python", 6}}));  // "python3" less its digit
  ASSERT_TRUE(s.ranks[0].last_change);
  EXPECT_EQ(s.ranks[0].last_change->tid, 10);
}

// Back where watch first saw it: DRIFTED for the hold after the last change, then no longer.
TEST(Watch, DriftedEndsOneHoldAfterTheMaskCameBack) {
  auto t = example("dgx-h100");
  Thresholds th;
  th.drift_hold = 10;
  Watcher w(t, th);
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0, "0-13"}})}));
  auto iv = w.observe(at(1, {process(10, kGpu0, {{10, 3, 0, 1, "0-27"}})}));
  EXPECT_TRUE(has(iv->ranks[0], Finding::drifted));
  iv = w.observe(at(2, {process(10, kGpu0, {{10, 3, 0, 2, "0-13"}})}));  // put back at t=2
  EXPECT_TRUE(has(iv->ranks[0], Finding::drifted));
  iv = w.observe(at(12, {process(10, kGpu0, {{10, 3, 0, 3, "0-13"}})}));
  EXPECT_TRUE(has(iv->ranks[0], Finding::drifted));  // 10 s after: at the hold
  iv = w.observe(at(13, {process(10, kGpu0, {{10, 3, 0, 4, "0-13"}})}));
  EXPECT_FALSE(has(iv->ranks[0], Finding::drifted));
}

// Counters of CPU time off the GPU's node and package: what an alert's increase() over a window
// divides by gpubind_rank_cpu_seconds_total, whatever the per-interval share did between scrapes.
TEST(Watch, CrossNumaCpuSecondsAddUpAcrossIntervals) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0}})}));
  w.observe(at(1, {process(10, kGpu0, {{10, 60, 0, 0.6}})}));  // 0.6 s off the package
  w.observe(at(2, {process(10, kGpu0, {{10, 3, 0, 1.5}})}));   // 0.9 s on the GPU's node
  auto iv = w.observe(at(3, {process(10, kGpu0, {{10, 60, 0, 1.7}})}));  // 0.2 s off
  EXPECT_NEAR(*iv->ranks[0].cross_numa_seconds, 0.2, 1e-9);
  Summary s = w.summary();
  ASSERT_TRUE(s.ranks[0].cross_numa_seconds && s.ranks[0].cross_socket_seconds);
  EXPECT_NEAR(*s.ranks[0].cross_numa_seconds, 0.8, 1e-9);
  EXPECT_NEAR(*s.ranks[0].cross_socket_seconds, 0.8, 1e-9);
  EXPECT_NEAR(s.ranks[0].cpu_seconds, 1.7, 1e-9);
}

TEST(Watch, WithoutKernelCpuTimeThereIsNoCrossNumaCounter) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  probe::ProcessState p = process(10, kGpu0, {{10, 60}});
  p.threads[0].run_ns.reset();
  w.observe(at(0, {p}));
  auto iv = w.observe(at(1, {p}));
  EXPECT_NEAR(*iv->ranks[0].cross_numa, 1.0, 1e-9);  // by thread
  EXPECT_FALSE(iv->ranks[0].cross_numa_seconds);
  EXPECT_FALSE(w.summary().ranks[0].cross_numa_seconds);
}

// The changes' thread names are a metric label: a rank whose threads are all named differently
// keeps kMaxThreadNames names and counts the rest as "(other)".
TEST(Watch, ChangesByThreadNameAreBounded) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto threads = [](const char* mask) {
    probe::ProcessState p = process(10, kGpu0, {});
    for (int i = 0; i < 20; ++i) {
      probe::ThreadState th;
      th.tid = 100 + i;
      th.comm = std::string(1, char('a' + i)) + "worker_" + std::to_string(i);
      th.cpus_allowed = *CpuSet::parse_list(mask);
      p.threads.push_back(th);
    }
    return p;
  };
  w.observe(at(0, {threads("0-13")}));
  w.observe(at(1, {threads("0-27")}));
  Summary s = w.summary();
  EXPECT_EQ(s.ranks[0].mask_changes(), 20u);
  EXPECT_EQ(s.ranks[0].changes_by_thread.size(), kMaxThreadNames + 1);
  EXPECT_EQ(s.ranks[0].changes_by_thread.at(kOtherThreads), 12u);
  EXPECT_EQ(s.ranks[0].changes_by_thread.at("aworker"), 1u);
}

// nvidia-persistenced holds every GPU's device file and uses no CPU: counted as a rank it made
// every busy node 100 % imbalanced. It is listed as a holder, with no finding, out of IMBALANCE.
TEST(Watch, AGpuDaemonIsNoRankAndTakesNoPartInImbalance) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto daemon = [](double run) {
    probe::ProcessState p = process(50, kGpu0, {{50, 100, 0, run}});
    p.comm = "nvidia-persiste";
    p.env.clear();
    p.gpus = {kGpu0, "0000:2a:00.0"};
    return p;
  };
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0, "0-13"}}, "0"), process(11, "0000:2a:00.0", {{11, 20, 0, 0, "14-27"}}, "1"), daemon(0)}));
  auto iv = w.observe(at(1, {process(10, kGpu0, {{10, 3, 0, 0.9, "0-13"}}, "0"), process(11, "0000:2a:00.0", {{11, 20, 0, 0.9, "14-27"}}, "1"),
                             daemon(0)}));
  ASSERT_TRUE(iv);
  ASSERT_TRUE(iv->imbalance);
  EXPECT_NEAR(*iv->imbalance, 0.0, 1e-9);
  for (const RankInterval& r : iv->ranks) {
    EXPECT_TRUE(r.findings.empty()) << r.pid << ": " << (r.findings.empty() ? "" : r.findings[0].reason);
    EXPECT_EQ(r.holder.empty(), r.pid != 50);
  }
}

// `conda run python train.py`: conda waits for the rank it started, which inherited its RANK.
// Counted as a rank, conda's idle CPU made every interval 100 % imbalanced; it is listed as a
// WRAPPER, with no finding, out of IMBALANCE (issue 52 item 23).
TEST(Watch, AWrapperAboveARankTakesNoPartInImbalance) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto conda = [](double run) {
    probe::ProcessState p = process(9, "", {{9, 3, 0, run, "0-13"}}, "0");
    p.comm = "conda";
    p.gpus.clear();
    return p;
  };
  auto rank = [](int pid, const char* gpu, unsigned cpu, double run, const char* cpus, const char* r, int ppid) {
    probe::ProcessState p = process(pid, gpu, {{pid, cpu, 0, run, cpus}}, r);
    p.ppid = ppid;
    return p;
  };
  w.observe(at(0, {conda(0), rank(10, kGpu0, 3, 0, "0-13", "0", 9), rank(11, "0000:2a:00.0", 20, 0, "14-27", "1", 1)}));
  auto iv = w.observe(at(1, {conda(0.01), rank(10, kGpu0, 3, 0.9, "0-13", "0", 9), rank(11, "0000:2a:00.0", 20, 0.9, "14-27", "1", 1)}));
  ASSERT_TRUE(iv);
  ASSERT_TRUE(iv->imbalance);
  EXPECT_NEAR(*iv->imbalance, 0.0, 1e-9);
  for (const RankInterval& r : iv->ranks) {
    EXPECT_TRUE(r.findings.empty()) << r.pid << ": " << (r.findings.empty() ? "" : r.findings[0].reason);
    EXPECT_EQ(r.holder.starts_with("a wrapper (conda) above PID 10"), r.pid == 9) << r.pid << ": " << r.holder;
  }
}

TEST(Watch, ThreadFamilyDropsTrailingNumbering) {
  EXPECT_EQ(thread_family("pt_nccl_0"), "pt_nccl");
  EXPECT_EQ(thread_family("cuda-EvtHandlr"), "cuda-EvtHandlr");
  EXPECT_EQ(thread_family("python3"), "python");
  EXPECT_EQ(thread_family("omp 12"), "omp");
  EXPECT_EQ(thread_family("0"), "(unnamed)");
}

TEST(Watch, RemoteMemoryAboveTheThresholdWhenNumaMapsWasRead) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto p0 = process(10, kGpu0, {{10, 3}});
  auto p1 = process(10, kGpu0, {{10, 3, 0, 1}});
  p1.pages_per_node = std::map<unsigned, uint64_t>{{0, 300}, {1, 700}};
  w.observe(at(0, {p0}));
  auto iv = w.observe(at(1, {p1}));
  ASSERT_TRUE(iv->ranks[0].remote_memory.has_value());
  EXPECT_NEAR(*iv->ranks[0].remote_memory, 0.7, 1e-9);
  EXPECT_TRUE(has(iv->ranks[0], Finding::remote_memory));
  iv = w.observe(at(2, {process(10, kGpu0, {{10, 3, 0, 2}})}));
  EXPECT_FALSE(iv->ranks[0].remote_memory.has_value());  // not read this time: not judged
}

TEST(Watch, OverlapWhenTwoPinnedRanksShareCpus) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto snap = [&](double s) {
    return at(s, {process(10, kGpu0, {{10, 3, 0, s, "0-13"}}, "0"), process(20, "0000:2a:00.0", {{20, 5, 0, s, "0-13"}}, "1")});
  };
  w.observe(snap(0));
  auto iv = w.observe(snap(1));
  ASSERT_EQ(iv->ranks.size(), 2u);
  EXPECT_TRUE(has(iv->ranks[0], Finding::overlap));
  EXPECT_TRUE(has(iv->ranks[1], Finding::overlap));
}

TEST(Watch, ImbalanceWhenRanksCpuTimeSpreadsBeyondTheThreshold) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0}}, "0"), process(20, kGpu0, {{20, 4, 0, 0}}, "1")}));
  auto iv = w.observe(at(1, {process(10, kGpu0, {{10, 3, 0, 1.0}}, "0"), process(20, kGpu0, {{20, 4, 0, 0.2}}, "1")}));
  ASSERT_TRUE(iv->imbalance.has_value());
  EXPECT_NEAR(*iv->imbalance, 0.8, 1e-9);
  EXPECT_NEAR(*iv->cpu_cv, 0.4 / 0.6, 1e-9);
  EXPECT_TRUE(has(iv->ranks[0], Finding::imbalance));
  EXPECT_TRUE(has(iv->ranks[1], Finding::imbalance));
  iv = w.observe(at(2, {process(10, kGpu0, {{10, 3, 0, 2.0}}, "0"), process(20, kGpu0, {{20, 4, 0, 1.1}}, "1")}));
  EXPECT_FALSE(has(iv->ranks[0], Finding::imbalance));  // 1.0 s and 0.9 s
}

TEST(Watch, ARankThatStartsIsNewAndOneThatExitsIsReportedOnce) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0}})}));
  auto iv = w.observe(at(1, {process(11, kGpu0, {{11, 3, 90, 5}})}));  // rank 0 restarted as PID 11
  ASSERT_EQ(iv->ranks.size(), 1u);
  EXPECT_TRUE(iv->ranks[0].started);
  EXPECT_FALSE(has(iv->ranks[0], Finding::migrating));  // no delta for a process seen once
  EXPECT_EQ(iv->exited, std::vector<int>{10});
  iv = w.observe(at(2, {process(11, kGpu0, {{11, 3, 90, 6}})}));
  EXPECT_TRUE(iv->exited.empty());
  EXPECT_FALSE(iv->ranks[0].started);
}

// A watch that runs for months over processes that come and go: the summary keeps the most recent
// kMaxExitedInSummary exited ones and counts the rest, with their findings, so memory stays flat.
TEST(Watch, TheSummaryKeepsABoundedNumberOfExitedProcessesAndCountsTheRest) {
  auto t = example("dgx-h100");
  Thresholds th;
  th.imbalance = 1e9;  // CPU time differs between the long- and short-lived ones: not judged here
  Watcher w(t, th);
  const int n = 3 * int(kMaxExitedInSummary);  // twice as many dropped as kept
  auto long_lived = [](double run) { return process(100, "0000:3a:00.0", {{100, 30, 0, run, "28-41"}}); };
  w.observe(at(0, {long_lived(0)}));
  // Each short-lived process is seen in two samples, on GPU 0 or 1 by turns (two at a time, on
  // CPUs of their own); the first three run off their GPU's node.
  auto short_lived = [](int i, double run) {
    bool off = i <= 3, odd = i % 2;
    return process(1000 + i, odd ? kGpu0 : "0000:2a:00.0",
                   {{1000 + i, off ? 60u : odd ? 3u : 17u, 0, run, off ? "56-111" : odd ? "0-13" : "14-27"}});
  };
  for (int i = 1; i <= n; ++i) {
    std::vector<probe::ProcessState> ps = {long_lived(0.1 * i), short_lived(i, 0.1)};
    if (i > 1) ps.push_back(short_lived(i - 1, 0.6));
    w.observe(at(i, std::move(ps)));
  }
  Summary s = w.summary();
  // The long-lived process, the two still running, and the most recent exited ones.
  EXPECT_EQ(s.ranks.size(), kMaxExitedInSummary + 3);
  EXPECT_EQ(s.exited_not_listed, uint64_t(n - 2 - kMaxExitedInSummary));
  EXPECT_EQ(s.exited_not_listed_with_findings, 3u);
  EXPECT_TRUE(s.any_finding);
  EXPECT_TRUE(std::none_of(s.ranks.begin(), s.ranks.end(), [](const RankSummary& r) { return r.pid == 1001; }));
  EXPECT_TRUE(std::any_of(s.ranks.begin(), s.ranks.end(), [&](const RankSummary& r) { return r.pid == 1000 + n; }));
}

TEST(Watch, APidReusedAfterItsProcessExitedStartsAFreshSummary) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0}})}));
  w.observe(at(1, {process(10, kGpu0, {{10, 3, 0, 0.5}})}));
  w.observe(at(2, {}));                                      // 10 exited
  w.observe(at(3, {process(10, kGpu0, {{10, 3, 0, 0.2}})}));  // a new process with the same PID
  Summary s = w.summary();
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_FALSE(s.ranks[0].exited);
  EXPECT_EQ(s.ranks[0].intervals, 1u);
}

TEST(Watch, TheSummaryAddsUpEveryIntervalAndNamesTheWorst) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0}})}));
  w.observe(at(1, {process(10, kGpu0, {{10, 3, 0, 1}})}));       // on its node
  w.observe(at(2, {process(10, kGpu0, {{10, 60, 10, 2}})}));      // off its socket, migrating
  w.observe(at(3, {process(10, kGpu0, {{10, 3, 10, 3}})}));
  Summary s = w.summary();
  EXPECT_EQ(s.intervals, 3u);
  EXPECT_DOUBLE_EQ(s.seconds, 3.0);
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_EQ(s.ranks[0].migrations, 10u);
  EXPECT_NEAR(s.ranks[0].cpu_seconds, 3.0, 1e-9);
  EXPECT_NEAR(*s.ranks[0].cross_numa, 1.0 / 3.0, 1e-9);
  EXPECT_EQ(s.ranks[0].worst_interval, 2u);
  EXPECT_EQ(s.ranks[0].seen, (std::vector<Finding>{Finding::migrating, Finding::cross_socket}));
  EXPECT_TRUE(s.any_finding);
}

}  // namespace gpubind::watch

namespace gpubind::watch {

TEST(Watch, ImbalanceIsNotJudgedAmongIdleRanks) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  // 0.05 s and 0 s of CPU in a 1 s interval: idle ranks differing by noise, not an imbalance.
  w.observe(at(0, {process(10, kGpu0, {{10, 3, 0, 0}}, "0"), process(20, kGpu0, {{20, 4, 0, 0}}, "1")}));
  auto iv = w.observe(at(1, {process(10, kGpu0, {{10, 3, 0, 0.05}}, "0"), process(20, kGpu0, {{20, 4, 0, 0}}, "1")}));
  EXPECT_FALSE(iv->imbalance.has_value());
  EXPECT_TRUE(iv->ranks[0].findings.empty());
}

}  // namespace gpubind::watch

namespace gpubind::watch {

namespace {
probe::GpuUsage usage(const std::string& pci, double utilization) {
  probe::GpuUsage g;
  g.pci = pci;
  g.utilization = utilization;
  return g;
}
const char* kGpu1 = "0000:2a:00.0";
// Ranks 0 and 1 on GPUs 0 and 1, each with `s` seconds of CPU time so far (equal: no CPU imbalance).
std::vector<probe::ProcessState> two_ranks(double s) {
  return {process(10, kGpu0, {{10, 3, 0, s}}, "0"), process(20, kGpu1, {{20, 4, 0, s}}, "1")};
}
}  // namespace

TEST(Watch, ImbalanceWhenTheRanksGpusUtilizationSpreadsBeyondTheThreshold) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  // GPU 0 at 97 %, GPU 1 at 20 %: 77 points apart.
  w.observe(at(0, two_ranks(0)));
  auto iv = w.observe(at(1, two_ranks(1), {usage(kGpu0, 0.97), usage(kGpu1, 0.20), usage("0000:3a:00.0", 0.0)}));
  ASSERT_TRUE(iv->gpu_imbalance.has_value());
  EXPECT_NEAR(*iv->gpu_imbalance, 0.77, 1e-9);  // the idle GPU no rank holds is not counted
  EXPECT_EQ(iv->gpus.size(), 3u);
  for (const RankInterval& r : iv->ranks) {
    ASSERT_TRUE(has(r, Finding::imbalance));
    EXPECT_NE(r.findings.back().reason.find("GPUs' utilization differs by 77 points (" + std::string(kGpu1) + " at 20 %"),
              std::string::npos)
        << r.findings.back().reason;
  }
  const RankInterval& r0 = iv->ranks[0].pid == 10 ? iv->ranks[0] : iv->ranks[1];
  EXPECT_NEAR(*r0.gpu_utilization, 0.97, 1e-9);
  // 90 % and 80 %: within the threshold.
  iv = w.observe(at(2, two_ranks(2), {usage(kGpu0, 0.9), usage(kGpu1, 0.8)}));
  EXPECT_FALSE(has(iv->ranks[0], Finding::imbalance));
}

TEST(Watch, GpuImbalanceIsNotJudgedWhenTheGpusAreIdleOrUnknown) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(at(0, two_ranks(0)));
  auto iv = w.observe(at(1, two_ranks(1), {usage(kGpu0, 0.05), usage(kGpu1, 0.0)}));  // both idle
  EXPECT_FALSE(iv->gpu_imbalance.has_value());
  iv = w.observe(at(2, two_ranks(2), {usage(kGpu0, 0.97)}));  // one GPU known
  EXPECT_FALSE(iv->gpu_imbalance.has_value());
  EXPECT_FALSE(iv->ranks[0].gpu_utilization.has_value() && iv->ranks[1].gpu_utilization.has_value());
  iv = w.observe(at(3, two_ranks(3)));  // no runtime library
  EXPECT_FALSE(iv->gpu_imbalance.has_value());
  EXPECT_TRUE(iv->gpus.empty());
}

}  // namespace gpubind::watch
