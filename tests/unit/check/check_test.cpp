#include "check/check.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"

namespace gpubind::check {

namespace {

probe::ProcessState proc(int pid, const std::string& gpu, const std::string& cpus, unsigned last_cpu) {
  probe::ProcessState p;
  p.pid = pid;
  p.ppid = 1;
  p.comm = "python";
  if (!gpu.empty()) p.gpus = {gpu};
  p.cpus_allowed = *CpuSet::parse_list(cpus);
  probe::ThreadState t;
  t.tid = pid;
  t.cpus_allowed = p.cpus_allowed;
  t.last_cpu = last_cpu;
  p.threads = {t};
  return p;
}

std::vector<Verdict> verdicts(const ProcessReport& r) {
  std::vector<Verdict> v;
  for (const auto& f : r.findings) v.push_back(f.verdict);
  return v;
}

topo::Topology dgx() { return *discover::load_topology("example:dgx-h100"); }

}  // namespace

TEST(Check, BoundOnTheGpusNodeIsOk) {
  Report r = judge(dgx(), {proc(1, "0000:18:00.0", "0-13,112-125", 5)}, {});
  EXPECT_TRUE(r.processes[0].findings.empty());
  EXPECT_FALSE(r.has_findings());
}

TEST(Check, AllowedEverywhereIsUnbound) {
  Report r = judge(dgx(), {proc(1, "0000:18:00.0", "0-223", 5)}, {});
  EXPECT_EQ(verdicts(r.processes[0]), std::vector<Verdict>{Verdict::unbound});
}

TEST(Check, OtherSocketIsMisplaced) {
  Report r = judge(dgx(), {proc(1, "0000:18:00.0", "56-69", 60)}, {});
  EXPECT_EQ(verdicts(r.processes[0]), std::vector<Verdict>{Verdict::misplaced});
}

TEST(Check, ThreadsThatRanOffNodeAreMisplaced) {
  auto p = proc(1, "0000:18:00.0", "0-13", 5);
  // Bound correctly now, but a thread last ran on socket 1 (it was moved after the fact).
  p.threads[0].last_cpu = 80;
  Report r = judge(dgx(), {p}, {});
  EXPECT_EQ(verdicts(r.processes[0]), std::vector<Verdict>{Verdict::misplaced});
}

TEST(Check, SharedCpusAreOverlapUnlessSameRank) {
  Report r = judge(dgx(), {proc(100, "0000:18:00.0", "0-13", 1), proc(200, "0000:2a:00.0", "10-20", 11)}, {});
  EXPECT_EQ(verdicts(r.processes[0]), std::vector<Verdict>{Verdict::overlap});
  auto child = proc(300, "0000:18:00.0", "0-13", 1);
  child.ppid = 100;  // a child of the first rank: the same rank
  Report same = judge(dgx(), {proc(100, "0000:18:00.0", "0-13", 1), child}, {});
  EXPECT_FALSE(same.has_findings());
}

TEST(Check, WiderThanAppliedIsDrifted) {
  auto p = proc(1, "0000:18:00.0", "0-55", 1);
  p.env["GPUBIND_CPUS"] = "0-13";
  Report r = judge(dgx(), {p}, {});
  EXPECT_EQ(verdicts(r.processes[0]), std::vector<Verdict>{Verdict::drifted});
  // A thread narrowing itself inside the applied set (NCCL does) is not drift.
  auto q = proc(2, "0000:18:00.0", "0-13", 1);
  q.env["GPUBIND_CPUS"] = "0-13";
  q.threads[0].cpus_allowed = CpuSet::of({4});
  EXPECT_FALSE(judge(dgx(), {q}, {}).has_findings());
}

TEST(Check, MostPagesElsewhereIsRemoteMemory) {
  auto p = proc(1, "0000:18:00.0", "0-13", 1);
  p.pages_per_node = std::map<unsigned, uint64_t>{{0, 10}, {1, 90}};
  Report r = judge(dgx(), {p}, {});
  EXPECT_EQ(verdicts(r.processes[0]), std::vector<Verdict>{Verdict::remote_memory});
}

TEST(Check, NoGpuIsListedNotJudged) {
  Report r = judge(dgx(), {proc(1, "", "0-223", 1)}, {});
  EXPECT_FALSE(r.processes[0].judged);
  EXPECT_FALSE(r.has_findings());
}

TEST(Check, IntentWithoutOpenGpuUsesGpubindGpu) {
  auto p = proc(1, "", "56-69", 60);
  p.env["GPUBIND_GPU"] = "0000:18:00.0";
  p.env["GPUBIND_CPUS"] = "56-69";
  Report r = judge(dgx(), {p}, {});
  EXPECT_EQ(r.processes[0].gpu_source, "GPUBIND_GPU");
  EXPECT_EQ(verdicts(r.processes[0]), std::vector<Verdict>{Verdict::misplaced});
}

TEST(Check, TheGpuItHasAContextOnWinsOverTheDeviceFilesItHoldsOpen) {
  // CUDA opens every visible GPU's device file; NVML knows which one the process computes on.
  auto p = proc(1, "", "56-69", 60);
  p.gpus = {"0000:18:00.0", "0000:9a:00.0"};
  p.context_gpus = {"0000:9a:00.0"};  // node 1, where it runs
  Report r = judge(dgx(), {p}, {});
  EXPECT_EQ(r.processes[0].gpu_source, "GPU contexts");
  EXPECT_EQ(r.processes[0].gpus, std::vector<std::string>{"0000:9a:00.0"});
  EXPECT_TRUE(r.processes[0].findings.empty());
  p.context_gpus.clear();  // by its open files it spans both nodes
  EXPECT_EQ(judge(dgx(), {p}, {}).processes[0].gpu_source, "open device files");
}

}  // namespace gpubind::check
