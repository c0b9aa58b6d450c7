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

TEST(Check, AProcessNotInTheSlurmJobItClaimsIsListedApartNotJudgedWithTheJob) {
  // Another user's process with the victim's SLURM_JOB_ID: listed apart (NOT_IN_JOB), and its
  // CPUs shared with the rank are no OVERLAP of the job's.
  probe::ProcessState task = proc(1, "0000:18:00.0", "0-13,112-125", 5);
  task.env = {{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}, {"SLURM_LOCALID", "0"}};
  task.slurm_job_seen = "7";
  probe::ProcessState forged = proc(2, "0000:2a:00.0", "0-13,112-125", 6);
  forged.env = {{"SLURM_JOB_ID", "7"}, {"SLURM_LOCALID", "1"}};
  Report r = judge(dgx(), {task, forged}, {});
  EXPECT_EQ(verdicts_of(r.processes[0]), "OK");
  EXPECT_EQ(verdicts_of(r.processes[1]), "NOT_IN_JOB");
  EXPECT_NE(r.processes[1].apart.find("neither its cgroup nor a slurmstepd of the job is above it"), std::string::npos) << r.processes[1].apart;
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

// nvidia-persistenced keeps every GPU's device file open: on a node with a perfectly bound job it
// used to share CPUs with every rank (9/9 OVERLAP, exit 3). It is listed, not judged.
TEST(Check, PersistencedHoldingEveryGpuIsAHolderNotARank) {
  topo::Topology t = dgx();
  std::vector<probe::ProcessState> ps;
  for (unsigned g = 0; g < 8; ++g) {
    const topo::Gpu& gpu = t.gpus[g];
    CpuSet cpus = topo::cpus_of_nodes(t, *gpu.numa);
    probe::ProcessState p = proc(100 + int(g), gpu.pci, "0", 0);
    p.env["RANK"] = std::to_string(g);
    CpuSet mine;  // 7 CPUs of its GPU's node each, all different
    unsigned n = 0;
    for (unsigned c : cpus.ids())
      if (n++ / 7 == g % 4) mine.set(c);
    p.cpus_allowed = p.threads[0].cpus_allowed = mine;
    p.threads[0].last_cpu = *mine.first();
    ps.push_back(p);
  }
  probe::ProcessState daemon = proc(50, "", "0-223", 3);
  daemon.comm = "nvidia-persiste";  // the kernel's 15 bytes of "nvidia-persistenced"
  for (const topo::Gpu& g : t.gpus) daemon.gpus.push_back(g.pci);
  ps.push_back(daemon);
  Report r = judge(t, ps, {});
  EXPECT_FALSE(r.has_findings());
  for (const ProcessReport& p : r.processes) {
    if (p.state.pid != 50) {
      EXPECT_EQ(verdicts_of(p), "OK") << p.state.pid;
      continue;
    }
    EXPECT_EQ(verdicts_of(p), "GPU_HOLDER");
    EXPECT_EQ(p.holder, "a GPU daemon (nvidia-persistenced) holding 8 GPU device file(s), not a rank");
    EXPECT_FALSE(p.judged);
  }
}

TEST(Check, AProcessWithoutAContextIsAHolderOnlyWhereTheLibraryCanTell) {
  auto p = proc(7, "", "0-223", 3);
  p.comm = "gpu-monitor";
  p.gpus = {"0000:18:00.0", "0000:9a:00.0"};
  Report known = judge(dgx(), {p}, {}, {true});
  EXPECT_EQ(known.processes[0].holder, "holds 2 GPU device file(s) but has no GPU context and no rank variable");
  EXPECT_FALSE(known.has_findings());
  Report unknown = judge(dgx(), {p}, {}, {false});  // no NVML: it may be a rank before its first context
  EXPECT_TRUE(unknown.processes[0].holder.empty());
  EXPECT_TRUE(unknown.processes[0].judged);
  p.context_gpus = {"0000:18:00.0"};
  EXPECT_TRUE(judge(dgx(), {p}, {}, {true}).processes[0].holder.empty());
}

TEST(Check, ARankVariableMakesAnyProcessARank) {
  auto p = proc(7, "0000:18:00.0", "0-223", 3);
  p.comm = "nvidia-smi";
  EXPECT_EQ(verdicts_of(judge(dgx(), {p}, {}).processes[0]), "GPU_HOLDER");
  for (const char* var : {"LOCAL_RANK", "SLURM_PROCID", "GPUBIND_GPU"}) {
    auto q = p;
    q.env[var] = "0";
    EXPECT_EQ(verdicts_of(judge(dgx(), {q}, {}).processes[0]), "UNBOUND") << var;
  }
}

// A daemon pinned to a rank's CPUs (CPUAffinity= of its unit) is not a rank sharing them.
TEST(Check, AHolderPinnedOnARanksCpusIsNoOverlap) {
  auto rank = proc(100, "0000:18:00.0", "0-13", 1);
  rank.env["RANK"] = "0";
  auto daemon = proc(50, "0000:18:00.0", "0-1", 1);
  daemon.comm = "nv-hostengine";
  Report r = judge(dgx(), {rank, daemon}, {});
  EXPECT_FALSE(r.has_findings());
}

// Issue 52 item 23: `conda run` (or `uv run`, a waiting `bash -c`) starts the rank as its child,
// which inherits the launcher's rank variables: the wrapper is listed as WRAPPER, not as a
// second rank 0, and takes no part in OVERLAP. The rank's own children are not wrappers.
TEST(Check, AWrapperAboveARankIsNoRankOfItsOwn) {
  auto conda = proc(100, "", "0-13", 1);
  conda.comm = "conda";
  auto shell = proc(101, "", "0-13", 1);
  shell.ppid = 100;
  shell.comm = "bash";
  auto rank = proc(102, "0000:18:00.0", "0-13", 1);
  rank.ppid = 101;
  auto worker = proc(103, "", "0-13", 2);  // a DataLoader worker of the rank
  worker.ppid = 102;
  for (auto* p : {&conda, &shell, &rank, &worker}) p->env = {{"RANK", "0"}, {"LOCAL_RANK", "0"}, {"GPUBIND_GPU", "0000:18:00.0"}};
  Report r = judge(dgx(), {conda, shell, rank, worker}, {});
  EXPECT_EQ(verdicts_of(r.processes[0]), "WRAPPER");
  EXPECT_EQ(verdicts_of(r.processes[1]), "WRAPPER");
  EXPECT_NE(r.processes[0].wrapper.find("above PID 102 (python) of the same rank 0, which holds the GPU"), std::string::npos)
      << r.processes[0].wrapper;
  EXPECT_EQ(verdicts_of(r.processes[2]), "OK");
  EXPECT_EQ(verdicts_of(r.processes[3]), "OK") << "a worker below the rank is the rank's, judged by its GPUBIND_GPU";
  EXPECT_FALSE(r.has_findings());

  // Without a GPU seen anywhere, a known wrapper's name still tells it; a Python parent does not.
  rank.gpus.clear();
  rank.ppid = 100;
  EXPECT_EQ(wrappers_of_ranks({conda, rank}).size(), 1u);
  EXPECT_TRUE(wrappers_of_ranks({rank, worker}).empty());
  // Another rank's process below it (a launcher's agent starting ranks) is no wrapper's child.
  auto other = rank;
  other.env["RANK"] = "1";
  other.ppid = 100;
  EXPECT_TRUE(wrappers_of_ranks({conda, other}).empty());
}

}  // namespace gpubind::check
