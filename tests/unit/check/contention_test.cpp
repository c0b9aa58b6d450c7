// OVERSUBSCRIBED and THROTTLED as check judges one probe (check/contention.hpp): one test per rule
// and per edge, on the DGX H100-like example (GPU 0 on node 0, CPUs 0-55,112-167).
#include "check/contention.hpp"

#include <gtest/gtest.h>

#include "check/check.hpp"
#include "discover/source.hpp"

namespace gpubind::check {

namespace contention_fixture {

const char* kRankGpu = "0000:18:00.0";

// A rank bound to `cpus` on GPU 0's node with `threads` threads, `runnable` of them in state R
// now; each thread ran `run` seconds and waited `wait` seconds for a CPU since it started.
probe::ProcessState rank(int pid, const std::string& cpus, unsigned threads, unsigned runnable, double run, double wait,
                         const std::string& comm = "pt_main_thread") {
  probe::ProcessState p;
  p.pid = pid;
  p.ppid = 1;
  p.comm = comm;
  p.gpus = {kRankGpu};
  p.cpus_allowed = *CpuSet::parse_list(cpus);
  for (unsigned i = 0; i < threads; ++i) {
    probe::ThreadState t;
    t.tid = pid + int(i);
    t.comm = comm;
    t.cpus_allowed = p.cpus_allowed;
    t.last_cpu = p.cpus_allowed.first();
    t.state = i < runnable ? 'R' : 'S';
    t.run_ns = uint64_t(run * 1e9);
    t.run_delay_ns = uint64_t(wait * 1e9);
    p.threads.push_back(t);
  }
  return p;
}

probe::ProcessState child(int pid, int ppid, const std::string& cpus, const std::string& comm, double run, double wait) {
  probe::ProcessState c = rank(pid, cpus, 1, 1, run, wait, comm);
  c.ppid = ppid;
  c.gpus.clear();
  return c;
}

const Finding* finding_of(const ProcessReport& r, Verdict v) {
  for (const Finding& f : r.findings)
    if (f.verdict == v) return &f;
  return nullptr;
}

topo::Topology dgx_h100() { return *discover::load_topology("example:dgx-h100"); }

probe::CpuQuota quota(double cpus, uint64_t periods, uint64_t throttled) {
  probe::CpuQuota q;
  q.cgroup = "/sys/fs/cgroup/job_7";
  q.setting = "cpu.max " + std::to_string(int(cpus * 100000)) + " 100000";
  q.cpus = cpus;
  q.periods = periods;
  q.throttled_periods = throttled;
  q.throttled_ns = throttled * 50'000'000;
  return q;
}

}  // namespace contention_fixture
using namespace contention_fixture;

TEST(Contention, OversubscribedWhenMoreThreadsRunOrWaitThanTheRankHasCpusAndTheyWaited) {
  // 8 threads of the intra-op pool runnable on 4 CPUs, each having waited as long as it ran.
  probe::ProcessState p = rank(100, "0-3", 10, 8, 4, 4);
  p.env["OMP_NUM_THREADS"] = "8";
  Report r = judge(dgx_h100(), {p}, {});
  const Finding* f = finding_of(r.processes[0], Verdict::oversubscribed);
  ASSERT_NE(f, nullptr) << verdicts_of(r.processes[0]);
  EXPECT_NE(f->reason.find("8.0 threads running or waiting for a CPU now"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("on 4 allowed CPU(s) (2.0 per CPU)"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("waited 50 %"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("8 thread(s) named like its main thread 'pt_main_thread'"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("OMP_NUM_THREADS=8"), std::string::npos) << f->reason;
  EXPECT_EQ(verdicts_of(r.processes[0]), "OVERSUBSCRIBED");
}

TEST(Contention, AsManyRunnableThreadsAsCpusIsNotOversubscribed) {
  Report r = judge(dgx_h100(), {rank(100, "0-3", 6, 5, 4, 4)}, {});  // 5 on 4: 1.25 per CPU, not above
  EXPECT_EQ(finding_of(r.processes[0], Verdict::oversubscribed), nullptr);
}

TEST(Contention, ManyRunnableThreadsAtOneMomentWithoutWaitsAreNotOversubscribed) {
  // 12 in state R now, but their waits since they started are 5 % of their runnable time: a
  // moment (a barrier's wake-up), not a rank short of CPUs.
  Report r = judge(dgx_h100(), {rank(100, "0-3", 12, 12, 19, 1)}, {});
  EXPECT_EQ(finding_of(r.processes[0], Verdict::oversubscribed), nullptr);
}

TEST(Contention, TheRanksChildrenCountIntoItsPoolAndAreNamed) {
  // One busy thread of the rank, four DataLoader workers on its 2 CPUs.
  std::vector<probe::ProcessState> ps = {rank(100, "0-1", 3, 1, 2, 3)};
  for (int i = 0; i < 4; ++i) ps.push_back(child(200 + i * 10, 100, "0-1", "pt_data_worker", 2, 3));
  Report r = judge(dgx_h100(), ps, {});
  const Finding* f = finding_of(r.processes[0], Verdict::oversubscribed);
  ASSERT_NE(f, nullptr) << verdicts_of(r.processes[0]);
  EXPECT_NE(f->reason.find("5.0 threads"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("4 child process(es) 'pt_data_worker' (DataLoader workers: num_workers)"), std::string::npos) << f->reason;
  // A worker alone is one thread on two CPUs.
  EXPECT_EQ(verdicts_of(r.processes[1]), "NO_GPU");
}

TEST(Contention, ThrottledWhenTheQuotaThrottledMoreThanAQuarterOfItsPeriods) {
  probe::ProcessState p = rank(100, "0-3", 4, 1, 1, 0);
  p.cpu_quota = quota(1.5, 400, 300);
  Report r = judge(dgx_h100(), {p}, {});
  const Finding* f = finding_of(r.processes[0], Verdict::throttled);
  ASSERT_NE(f, nullptr) << verdicts_of(r.processes[0]);
  EXPECT_NE(f->reason.find("throttled in 300 of 400 periods since the cgroup was made (15.0 s of run queues held back)"), std::string::npos)
      << f->reason;
  EXPECT_NE(f->reason.find("/sys/fs/cgroup/job_7's cpu.max 150000 100000, 1.50 CPU(s)' worth, under its 4 allowed CPU(s)"),
            std::string::npos)
      << f->reason;
}

TEST(Contention, AQuotaRarelyThrottledOrAtLeastItsCpusIsNoFindingOrNoAdvice) {
  probe::ProcessState p = rank(100, "0-3", 4, 1, 1, 0);
  p.cpu_quota = quota(1.5, 400, 100);  // exactly a quarter: not above
  EXPECT_EQ(finding_of(judge(dgx_h100(), {p}, {}).processes[0], Verdict::throttled), nullptr);
  p.cpu_quota = quota(8, 400, 399);  // a quota over its CPUs, throttled anyway: a finding, no advice to size pools to it
  Report r = judge(dgx_h100(), {p}, {});
  const Finding* f = finding_of(r.processes[0], Verdict::throttled);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->reason.find("under its"), std::string::npos) << f->reason;
}

TEST(Contention, PoolsAreNamedByTheirThreadsNamesAndTheSettingsThatSizeThem) {
  std::map<std::string, std::string> env = {{"MKL_NUM_THREADS", "4"}};
  std::string s = thread_pools({{"pt_autograd", 2, false}, {"python3", 6, false}, {"NCCL Service", 1, false}, {"pt_data_pin", 1, false}},
                               "python3", env);
  // Most first; the main thread's name with an intra-op pool's settings as the environment says them.
  EXPECT_EQ(s.find("6 thread(s) named like its main thread 'python3'"), 0u) << s;
  EXPECT_NE(s.find("OMP_NUM_THREADS unset, MKL_NUM_THREADS=4 or torch.set_num_threads"), std::string::npos) << s;
  EXPECT_NE(s.find("2 thread(s) 'pt_autograd' (autograd's device threads)"), std::string::npos) << s;
  EXPECT_NE(s.find("1 thread(s) 'NCCL Service' (NCCL's proxy and service threads"), std::string::npos) << s;
  EXPECT_NE(s.find("'pt_data_pin' (DataLoader's pin-memory thread: pin_memory)"), std::string::npos) << s;
  // One thread under the main thread's name is the main thread, not a pool.
  EXPECT_EQ(thread_pools({{"python3", 1, false}}, "python3", {}), "1 thread(s) 'python3'");
  EXPECT_EQ(name_family("pt_autograd_0"), "pt_autograd");
  EXPECT_EQ(name_family("NCCL Service 3"), "NCCL Service");
  EXPECT_EQ(name_family("42"), "(unnamed)");
}

}  // namespace gpubind::check

namespace gpubind::check {

TEST(Contention, TheLibraryBehindAThreadsChangeIsNamedByItsNameOrTheKnobsSet) {
  EXPECT_EQ(library_behind("python3", {}), "");
  EXPECT_EQ(library_behind("python3", {{"NCCL_IGNORE_CPU_AFFINITY", "1"}}),
            "likely NCCL: NCCL_IGNORE_CPU_AFFINITY=1 is set: unset NCCL_IGNORE_CPU_AFFINITY (or set it to 0)");
  EXPECT_EQ(library_behind("NCCL Service 0", {{"AMD_CPU_AFFINITY", "1"}, {"NCCL_PROXY_CPUSET", "0-3"}}),
            "NCCL: NCCL_PROXY_CPUSET=0-3 is set: unset NCCL_PROXY_CPUSET, or list CPUs of the rank's in it");
  EXPECT_NE(library_behind("NCCL Progress 1", {}).find("unless NCCL_IGNORE_CPU_AFFINITY or NCCL_PROXY_CPUSET is set"), std::string::npos);
  EXPECT_EQ(library_behind("pt_main_thread", {{"AMD_CPU_AFFINITY", "true"}}),
            "likely the HIP runtime: AMD_CPU_AFFINITY=true is set: set AMD_CPU_AFFINITY=0");
  EXPECT_EQ(library_behind("pt_main_thread", {{"AMD_CPU_AFFINITY", "0"}}), "");
}

}  // namespace gpubind::check
