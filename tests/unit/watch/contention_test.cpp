// watch's OVERSUBSCRIBED and THROTTLED (watch/watch.hpp), on hand-made snapshots of the DGX
// H100-like example (GPU 0 on node 0, CPUs 0-55,112-167): one test per rule and per edge.
#include <gtest/gtest.h>

#include <cmath>

#include "../../support/test_machines.hpp"
#include "render/metrics.hpp"
#include "watch/watch.hpp"

namespace gpubind::watch {

namespace contention_fixture {

using gpubind::testing::example;

const char* kRankGpu = "0000:18:00.0";

// A process on CPUs `cpus` whose `threads` threads each ran `run` and waited `wait` seconds so
// far (nullopt: its wait not read).
probe::ProcessState proc(int pid, int ppid, const std::string& comm, const char* cpus, unsigned threads, double run,
                         std::optional<double> wait, bool gpu = true) {
  probe::ProcessState p;
  p.pid = pid;
  p.ppid = ppid;
  p.comm = comm;
  p.cpus_allowed = *CpuSet::parse_list(cpus);
  if (gpu) p.gpus = {kRankGpu};
  p.env["RANK"] = "0";
  for (unsigned i = 0; i < threads; ++i) {
    probe::ThreadState t;
    t.tid = pid + int(i);
    t.comm = comm;
    t.cpus_allowed = p.cpus_allowed;
    t.last_cpu = p.cpus_allowed.first();
    t.run_ns = uint64_t(run * 1e9);
    if (wait) t.run_delay_ns = uint64_t(*wait * 1e9);
    p.threads.push_back(t);
  }
  return p;
}

Snapshot sample_at(double t, std::vector<probe::ProcessState> ps) { return {t, std::move(ps), {}}; }

const RankFinding* finding_of(const RankInterval& r, Finding f) {
  for (const RankFinding& x : r.findings)
    if (x.kind == f) return &x;
  return nullptr;
}

const RankInterval& rank_of(const Interval& iv, int pid) {
  for (const RankInterval& r : iv.ranks)
    if (r.pid == pid) return r;
  static RankInterval none;
  return none;
}

probe::CpuQuota quota(uint64_t periods, uint64_t throttled, double throttled_seconds, const char* cgroup = "/sys/fs/cgroup/job_7") {
  probe::CpuQuota q;
  q.cgroup = cgroup;
  q.setting = "cpu.max 50000 100000";
  q.cpus = 0.5;
  q.periods = periods;
  q.throttled_periods = throttled;
  q.throttled_ns = uint64_t(throttled_seconds * 1e9);
  return q;
}

}  // namespace contention_fixture
using namespace contention_fixture;

TEST(WatchContention, OversubscribedWhenThreadsRunningOrWaitingExceedTheCpus) {
  // 8 threads on 2 CPUs: each runs a quarter of each second and waits three quarters.
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(sample_at(0, {proc(10, 1, "pt_main_thread", "0-1", 8, 0, 0)}));
  auto iv = w.observe(sample_at(1, {proc(10, 1, "pt_main_thread", "0-1", 8, 0.25, 0.75)}));
  const RankInterval& r = rank_of(*iv, 10);
  EXPECT_DOUBLE_EQ(*r.run_delay_seconds, 6.0);
  EXPECT_DOUBLE_EQ(*r.runnable, 8.0);
  EXPECT_DOUBLE_EQ(*r.pool_runnable, 8.0);
  const RankFinding* f = finding_of(r, Finding::oversubscribed);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(
      f->reason.find("8.0 threads running or waiting for a CPU on average over the last 1 interval(s) on 2 allowed CPU(s) (4.0 per CPU)"),
      std::string::npos)
      << f->reason;
  EXPECT_NE(f->reason.find("8 thread(s) named like its main thread 'pt_main_thread'"), std::string::npos) << f->reason;
}

TEST(WatchContention, ThreadsThatKeepTheirCpusBusyWithoutWaitingAreNotOversubscribed) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(sample_at(0, {proc(10, 1, "python3", "0-1", 2, 0, 0)}));
  auto iv = w.observe(sample_at(1, {proc(10, 1, "python3", "0-1", 2, 1.0, 0.01)}));
  EXPECT_NEAR(*rank_of(*iv, 10).runnable, 2.02, 1e-9);
  EXPECT_EQ(finding_of(rank_of(*iv, 10), Finding::oversubscribed), nullptr);
}

TEST(WatchContention, MoreBusyThreadsThanCpusKeepingThemBusyAreOversubscribedThoughTheyHardlyQueue) {
  // 3 threads of a pool on 2 CPUs, each 0.55 s a second, 0.02 s waiting: they sleep at barriers
  // waiting for each other rather than queue (OpenMP's loss on 2 CPUs measured in docs/cli.md).
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(sample_at(0, {proc(10, 1, "pt_main_thread", "0-1", 3, 0, 0)}));
  auto iv = w.observe(sample_at(1, {proc(10, 1, "pt_main_thread", "0-1", 3, 0.55, 0.02)}));
  const RankInterval& r = rank_of(*iv, 10);
  EXPECT_EQ(r.busy_threads, 3u);
  EXPECT_NEAR(*r.pool_runnable, 1.71, 1e-9);  // under 1.25 per CPU
  const RankFinding* f = finding_of(r, Finding::oversubscribed);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->reason.find("3.0 threads busy (a tenth of a CPU or more each) on average over the last 1 interval(s) on 2 allowed CPU(s), "
                           "kept 83 % busy"),
            std::string::npos)
      << f->reason;
  // The same three threads at a third of a CPU each leave the CPUs half idle: no finding.
  Watcher idle(t, {});
  idle.observe(sample_at(0, {proc(10, 1, "pt_main_thread", "0-1", 3, 0, 0)}));
  iv = idle.observe(sample_at(1, {proc(10, 1, "pt_main_thread", "0-1", 3, 0.33, 0)}));
  EXPECT_EQ(finding_of(rank_of(*iv, 10), Finding::oversubscribed), nullptr);
}

TEST(WatchContention, WaitsOtherProcessesCauseAreNotTheRanksPools) {
  // 2 threads on 1 CPU that would each use a third of it, waiting most of each second because
  // other processes' load takes the CPU: the rank uses 0.4 of its CPU, so its pools are not wider.
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(sample_at(0, {proc(10, 1, "python3", "0", 2, 0, 0)}));
  auto iv = w.observe(sample_at(1, {proc(10, 1, "python3", "0", 2, 0.2, 0.7)}));
  EXPECT_NEAR(*rank_of(*iv, 10).pool_runnable, 1.8, 1e-9);
  EXPECT_EQ(finding_of(rank_of(*iv, 10), Finding::oversubscribed), nullptr);
}

TEST(WatchContention, WaitsReadEveryFewSamplesCountOverTheWindow) {
  // 3 threads on 1 CPU, each running a third of each second and waiting two thirds; their waits
  // are read only at every kLoadWindow-th sample (the light probe's turn), the last read standing
  // in between.
  auto t = example("dgx-h100");
  Watcher w(t, {});
  w.observe(sample_at(0, {proc(10, 1, "python3", "0", 3, 0, 0)}));
  const int n = int(kLoadWindow);
  std::vector<double> runnable;
  for (int s = 1; s <= 2 * n; ++s) {
    double wait = (s / n) * n * (2.0 / 3);  // read at samples n and 2n
    auto iv = w.observe(sample_at(s, {proc(10, 1, "python3", "0", 3, s / 3.0, wait)}));
    runnable.push_back(std::round(*rank_of(*iv, 10).runnable * 100) / 100);
    EXPECT_NE(finding_of(rank_of(*iv, 10), Finding::oversubscribed), nullptr) << "sample " << s;  // 3 busy threads on 1 CPU
  }
  // Under-counted before the first read (1 thread's worth: their CPU time), then the window's
  // mean: 3 threads, no dip between reads.
  std::vector<double> want(size_t(n - 1), 1.0);
  want.insert(want.end(), size_t(n + 1), 3.0);
  EXPECT_EQ(runnable, want);
}

TEST(WatchContention, TheRanksChildrenCountIntoItsPool) {
  // The rank's one busy thread and three DataLoader workers' on its 2 CPUs.
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto sample = [](double s) {
    std::vector<probe::ProcessState> ps = {proc(10, 1, "pt_main_thread", "0-1", 1, 0.5 * s, 0.5 * s)};
    for (int i = 0; i < 3; ++i) ps.push_back(proc(20 + i, 10, "pt_data_worker", "0-1", 1, 0.5 * s, 0.5 * s, false));
    return ps;
  };
  w.observe(sample_at(0, sample(0)));
  auto iv = w.observe(sample_at(1, sample(1)));
  const RankInterval& r = rank_of(*iv, 10);
  EXPECT_DOUBLE_EQ(*r.runnable, 1.0);
  EXPECT_DOUBLE_EQ(*r.pool_runnable, 4.0);
  const RankFinding* f = finding_of(r, Finding::oversubscribed);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->reason.find("(1.0 its own, the rest its children's)"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("3 child process(es) 'pt_data_worker' (DataLoader workers: num_workers)"), std::string::npos) << f->reason;
  EXPECT_EQ(finding_of(rank_of(*iv, 20), Finding::oversubscribed), nullptr);  // a worker alone: one thread on 2 CPUs
}

TEST(WatchContention, ThrottledWhenTheQuotaThrottledMoreThanAQuarterOfTheIntervalsPeriods) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto with = [](probe::CpuQuota q) {
    probe::ProcessState p = proc(10, 1, "python3", "0-1", 1, 0, 0);
    p.cpu_quota = q;
    return p;
  };
  w.observe(sample_at(0, {with(quota(100, 10, 1))}));
  auto iv = w.observe(sample_at(1, {with(quota(110, 18, 1.4))}));
  const RankInterval& r = rank_of(*iv, 10);
  EXPECT_EQ(r.periods, 10u);
  EXPECT_EQ(r.throttled_periods, 8u);
  EXPECT_NEAR(r.throttled_seconds, 0.4, 1e-9);
  const RankFinding* f = finding_of(r, Finding::throttled);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->reason.find("throttled in 8 of 10 periods in the interval (0.4 s of run queues held back) by /sys/fs/cgroup/job_7's "
                           "cpu.max 50000 100000, 0.50 CPU(s)' worth, under its 2 allowed CPU(s)"),
            std::string::npos)
      << f->reason;
  iv = w.observe(sample_at(2, {with(quota(120, 20, 1.5))}));  // 2 of 10: under a quarter
  EXPECT_EQ(finding_of(rank_of(*iv, 10), Finding::throttled), nullptr);
  // Another cgroup now (the process moved): no deltas across two cgroups' counters.
  iv = w.observe(sample_at(3, {with(quota(500, 400, 90, "/sys/fs/cgroup/job_8"))}));
  EXPECT_EQ(rank_of(*iv, 10).periods, 0u);
  EXPECT_EQ(finding_of(rank_of(*iv, 10), Finding::throttled), nullptr);
  Summary s = w.summary();
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_TRUE(s.ranks[0].quota);
  EXPECT_EQ(s.ranks[0].periods, 20u);
  EXPECT_EQ(s.ranks[0].throttled_periods, 10u);
  EXPECT_NEAR(s.ranks[0].throttled_seconds, 0.5, 1e-9);
}

TEST(WatchContention, TheMetricsCarryTheWaitsRunnableThreadsAndTheQuotasCounters) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto p = [](double s) {
    probe::ProcessState x = proc(10, 1, "python3", "0-1", 4, 0.5 * s, 1.5 * s);
    x.cpu_quota = quota(uint64_t(10 * s), uint64_t(5 * s), 0.25 * s);
    return x;
  };
  w.observe(sample_at(0, {p(0)}));
  w.observe(sample_at(1, {p(1)}));
  auto last = w.observe(sample_at(2, {p(2)}));
  Summary s = w.summary();
  render::MetricsInput in;
  in.node = "n1";
  in.topo = &t;
  in.last = &*last;
  in.summary = &s;
  std::string text = render::metrics_text(in);
  auto value = [&](const std::string& family) {
    size_t at = text.find("\n" + family + "{");
    if (at == std::string::npos) return std::string("absent");
    size_t sp = text.find("} ", at);
    return text.substr(sp + 2, text.find('\n', sp) - sp - 2);
  };
  EXPECT_EQ(value("gpubind_rank_run_delay_seconds_total"), "12");  // 4 threads x 1.5 s x 2 intervals
  EXPECT_EQ(value("gpubind_rank_runnable_threads"), "8");          // (2 + 6) / 1 s
  EXPECT_EQ(value("gpubind_rank_cfs_periods_total"), "20");
  EXPECT_EQ(value("gpubind_rank_cfs_throttled_periods_total"), "10");
  EXPECT_EQ(value("gpubind_rank_throttled_seconds_total"), "0.5");
  EXPECT_NE(text.find("gpubind_rank_cpu_quota_cpus{node=\"n1\",pid=\"10\""), std::string::npos);
  EXPECT_NE(text.find(",cgroup=\"/sys/fs/cgroup/job_7\"} 0.5\n"), std::string::npos);
}

}  // namespace gpubind::watch

namespace gpubind::watch {

TEST(WatchContention, DriftedNamesTheLibraryTheRanksEnvironmentSaysPinsItsThreads) {
  auto t = example("dgx-h100");
  Watcher w(t, {});
  auto p = [](const char* thread_cpus) {
    probe::ProcessState x = proc(10, 1, "python3", "0-1", 2, 0, 0);
    x.env["NCCL_IGNORE_CPU_AFFINITY"] = "1";
    x.threads[1].cpus_allowed = *CpuSet::parse_list(thread_cpus);
    return x;
  };
  w.observe(sample_at(0, {p("0-1")}));
  auto iv = w.observe(sample_at(1, {p("0-55")}));  // NCCL widened a thread to its GPU's node
  const RankFinding* f = finding_of(rank_of(*iv, 10), Finding::drifted);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->reason.find("; likely NCCL: NCCL_IGNORE_CPU_AFFINITY=1 is set: unset NCCL_IGNORE_CPU_AFFINITY (or set it to 0)"),
            std::string::npos)
      << f->reason;
}

}  // namespace gpubind::watch
