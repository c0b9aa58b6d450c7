// The SPANK plugin's entry points driven by a stand-in for slurmstepd: the spank_* calls the
// plugin makes are answered from a task environment held here, and can be told to fail. Each
// failure must leave the task as slurmstepd gave it (no CPU affinity, memory policy or GPUBIND_*
// variable of a binding it does not have) with one line on stderr: a warning and return 0, or
// -1 with `strict`. The failures of the binding syscalls come from the sys layer's libfiu
// failure points (docs/FAULTS.md), compiled into the sanitizer build only.
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#ifdef GPUBIND_FAULT_POINTS
#include <fiu-control.h>
#include <fiu.h>
#endif

#include "discover/source.hpp"
#include "plan/plan.hpp"
#include "sys/binder.hpp"
#include "sys/fsroot.hpp"
#include "util/cpuset.hpp"

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av);
extern "C" int slurm_spank_task_init(spank_t sp, int ac, char** av);
extern "C" int slurm_spank_exit(spank_t sp, int ac, char** av);
extern "C" int slurm_spank_user_init(spank_t sp, int ac, char** av);

namespace {

// What slurmstepd holds for the task.
struct Host {
  std::map<std::string, std::string> env;
  std::string refuse_setenv;  // spank_setenv of this variable fails
  std::vector<std::string> slurm_errors;
  std::vector<std::string> slurm_debug;
  std::string step_cores;  // S_STEP_ALLOC_CORES; "" = not answered
  uint32_t step_id = 7;    // S_JOB_STEPID
};
Host g_host;
std::string formatted(const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}
struct spank_option* g_registered = nullptr;  // the plugin's --gpubind, as it registered it

}  // namespace

extern "C" {
spank_context_t spank_context(void) { return S_CTX_REMOTE; }
spank_err_t spank_option_register(spank_t, struct spank_option* o) {
  g_registered = o;
  return spank_err_t(ESPANK_SUCCESS);
}
spank_err_t spank_getenv(spank_t, const char* var, char* buf, int len) {
  auto it = g_host.env.find(var);
  if (it == g_host.env.end()) return spank_err_t(ESPANK_ENV_NOEXIST);
  if (int(it->second.size()) >= len) return spank_err_t(ESPANK_NOSPACE);
  std::snprintf(buf, size_t(len), "%s", it->second.c_str());
  return spank_err_t(ESPANK_SUCCESS);
}
spank_err_t spank_setenv(spank_t, const char* var, const char* val, int) {
  if (g_host.refuse_setenv == var) return spank_err_t(ESPANK_ERROR);
  g_host.env[var] = val;
  return spank_err_t(ESPANK_SUCCESS);
}
spank_err_t spank_unsetenv(spank_t, const char* var) {
  g_host.env.erase(var);
  return spank_err_t(ESPANK_SUCCESS);
}
// Job 42, step 7, global task 3.
spank_err_t spank_get_item(spank_t, spank_item_t item, ...) {
  va_list ap;
  va_start(ap, item);
  spank_err_t rc = spank_err_t(ESPANK_SUCCESS);
  if (item == S_JOB_ID) *va_arg(ap, uint32_t*) = 42;
  else if (item == S_JOB_STEPID) *va_arg(ap, uint32_t*) = g_host.step_id;
  else if (item == S_TASK_GLOBAL_ID) *va_arg(ap, uint32_t*) = 3;
  else if (item == S_STEP_ALLOC_CORES && !g_host.step_cores.empty()) *va_arg(ap, char**) = g_host.step_cores.data();
  else rc = spank_err_t(ESPANK_BAD_ARG);
  va_end(ap);
  return rc;
}
void slurm_debug(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_host.slurm_debug.push_back(formatted(fmt, ap));
  va_end(ap);
}
const char* spank_strerror(spank_err_t e) { return e == ESPANK_ERROR ? "Generic error" : "other spank error"; }
void slurm_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_host.slurm_errors.push_back(formatted(fmt, ap));
  va_end(ap);
}
}

namespace {

using gpubind::CpuSet;

// This thread's CPUs, read with the syscall itself: the sys layer's reader may be the one a
// test made fail.
std::string affinity_now() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "unknown";
  CpuSet out;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.set(c);
  return out.to_list();
}

class SpankHost : public ::testing::Test {
 protected:
  void SetUp() override {
    g_host = Host{};
    // Two tasks on this node, this one local rank 0, as srun -n 2 exports them.
    g_host.env = {{"SLURM_LOCALID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "2"}, {"SLURM_NODEID", "0"}, {"GPUBIND_CPUS", "from the user"}};
    m_affinity = affinity_now();
    m_config = ::testing::TempDir() + "gpubind-spank-host.conf";
    std::ofstream(m_config) << "cache_dir = off\n";
  }
  void TearDown() override {
    slurm_spank_exit(nullptr, 0, nullptr);  // the step's option forgotten, as slurmstepd ends
    // What a failed test left (a binding) must not narrow the tests after it.
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned c : CpuSet::parse_list(m_affinity)->ids()) CPU_SET(c, &set);
    sched_setaffinity(0, sizeof set, &set);
    syscall(SYS_set_mempolicy, 0, nullptr, 0);
#ifdef GPUBIND_FAULT_POINTS
    if (!m_point.empty()) fiu_disable(m_point.c_str());
#endif
  }

  // slurm_spank_init with these plugstack.conf arguments, then slurm_spank_task_init; stderr in
  // m_stderr.
  // `gpubind`: the user's --gpubind=VALUE, given to the plugin's option callback as slurmstepd does.
  int run_task(std::vector<std::string> args, const char* gpubind = nullptr) {
    args.push_back("config=" + m_config);
    std::vector<char*> av;
    for (std::string& a : args) av.push_back(a.data());
    if (int rc = slurm_spank_init(nullptr, int(av.size()), av.data()); rc != 0) return rc;
    if (m_step_env) {  // the step's environment in slurm_spank_user_init, then the task's
      std::map<std::string, std::string> task = g_host.env;
      g_host.env = *m_step_env;
      slurm_spank_user_init(nullptr, 0, nullptr);
      g_host.env = task;
    }
    if (gpubind) {
      if (!g_registered) return -100;
      if (int rc = g_registered->cb(g_registered->val, gpubind, 1); rc != 0) return rc;
    }
    ::testing::internal::CaptureStderr();
    int rc = slurm_spank_task_init(nullptr, 0, nullptr);
    m_stderr = ::testing::internal::GetCapturedStderr();
    return rc;
  }

  // Nothing of a binding: the affinity slurmstepd gave, and the user's own variable untouched.
  // `users`: the task is marked as left to its user's binding (GPUBIND_BINDING=user or none).
  void expect_unbound(const char* users = nullptr) {
    EXPECT_EQ(affinity_now(), m_affinity);
    EXPECT_EQ(g_host.env["GPUBIND_CPUS"], "from the user");
    if (users) {
      EXPECT_EQ(g_host.env["GPUBIND_BINDING"], users);
    }
    for (const auto& [k, v] : g_host.env)
      if (k != "GPUBIND_CPUS" && (k != "GPUBIND_BINDING" || !users)) {
        EXPECT_NE(k.rfind("GPUBIND_", 0), 0u) << k << "=" << v;
      }
  }
  void expect_one_line(const std::string& start, const std::string& part) {
    EXPECT_EQ(std::count(m_stderr.begin(), m_stderr.end(), '\n'), 1) << m_stderr;
    EXPECT_EQ(m_stderr.rfind(start, 0), 0u) << m_stderr;
    EXPECT_NE(m_stderr.find(part), std::string::npos) << m_stderr;
  }

  std::optional<std::map<std::string, std::string>> m_step_env;  // the step's, seen before the task's
  std::string m_affinity;  // as slurmstepd gave it
  std::string m_point;  // the failure point a test enabled
  std::string m_config;
  std::string m_stderr;
};

TEST_F(SpankHost, BindsTheTaskAndExportsItsBinding) {
  ASSERT_EQ(run_task({"default=closest"}), 0) << m_stderr;
  ASSERT_TRUE(g_host.env.count("GPUBIND_CPUS"));
  EXPECT_NE(g_host.env["GPUBIND_CPUS"], "from the user");
  EXPECT_EQ(affinity_now(), g_host.env["GPUBIND_CPUS"]);
}

// The plugin takes exec's planning options (bind/request.hpp): each changes the task's binding
// as `gpubind exec --FLAG` would. Planned (dryrun) on the DGX H100-like example, 8 tasks.
// --gpubind=numa,mem=interleave,verbose: the mode, the user's memory policy and the task's line,
// all from one option (a mode with verbose was refused before).
TEST_F(SpankHost, AModeCombinesWithMemAndVerbose) {
  ASSERT_EQ(run_task({}, "numa,mem=interleave,verbose"), 0) << m_stderr;
  EXPECT_EQ(g_host.env["GPUBIND_POLICY"], "numa");
  EXPECT_EQ(g_host.env["GPUBIND_MEM_POLICY"], "interleave");
  EXPECT_NE(m_stderr.find(" job 42.7 rank 3 (local 0): GPU "), std::string::npos) << m_stderr;
  ASSERT_EQ(g_host.slurm_debug.size(), 1u);
  EXPECT_NE(g_host.slurm_debug[0].find(" job 42.7 rank 3 (local 0): GPU "), std::string::npos) << g_host.slurm_debug[0];
}

// A task variable longer than the plugin's first 4096-byte buffer was dropped as if unset: here
// the user's own --cpu-bind (SLURM_CPU_BIND with a long mask list), so the site default bound the
// task over it. The plugin now grows its buffer and stands back.
TEST_F(SpankHost, ALongTaskVariableIsReadWhole) {
  std::string masks = "quiet,mask_cpu:";
  while (masks.size() < 6000) masks += "0x1,";
  g_host.env["SLURM_CPU_BIND"] = masks;
  ASSERT_EQ(run_task({"default=closest"}), 0) << m_stderr;
  expect_unbound("user");
}

// Issue 30: under TaskPlugin=task/affinity every task carries Slurm's automatic binding in
// SLURM_CPU_BIND*, which the site default took for the user's --cpu-bind and stood back. srun
// exports the user's to the step (seen in slurm_spank_user_init); task/affinity writes its own
// into the task only.
TEST_F(SpankHost, SiteDefaultReplacesTaskAffinitysAutomaticBinding) {
  m_step_env = std::map<std::string, std::string>{{"SLURM_STEP_TASKS_PER_NODE", "2"}};
  g_host.env.insert({{"SLURM_CPU_BIND", "quiet,mask_cpu:0x1,0x2"}, {"SLURM_CPU_BIND_TYPE", "mask_cpu:"}, {"SLURM_CPU_BIND_LIST", "0x1,0x2"}});
  ASSERT_EQ(run_task({"default=closest"}), 0) << m_stderr;
  ASSERT_NE(g_host.env["GPUBIND_CPUS"], "from the user") << m_stderr;
  EXPECT_EQ(affinity_now(), g_host.env["GPUBIND_CPUS"]);
}

TEST_F(SpankHost, SiteDefaultStandsBackForTheUsersCpuBind) {
  std::map<std::string, std::string> user = {{"SLURM_CPU_BIND", "quiet,map_cpu:1,0"}, {"SLURM_CPU_BIND_TYPE", "map_cpu:"}, {"SLURM_CPU_BIND_LIST", "1,0"}};
  m_step_env = user;
  g_host.env.insert(user.begin(), user.end());
  ASSERT_EQ(run_task({"default=closest"}), 0) << m_stderr;
  expect_unbound("user");  // marked, so watch --enforce leaves it as the user bound it
  // --cpu-bind=verbose alone chooses no binding: the site default binds.
  SetUp();
  m_step_env = std::map<std::string, std::string>{{"SLURM_CPU_BIND", "verbose"}, {"SLURM_CPU_BIND_TYPE", ""}};
  ASSERT_EQ(run_task({"default=closest"}), 0) << m_stderr;
  EXPECT_NE(g_host.env["GPUBIND_CPUS"], "from the user");
}

// sbatch --ntasks-per-node=2 under the site default (or sbatch --gpubind): the batch script was
// bound as local rank 0 of the job's 2 tasks per node, and all it ran directly with it, carrying
// rank 0's GPUBIND_*. It keeps what Slurm gave it; salloc's interactive step too.
TEST_F(SpankHost, TheBatchScriptAndTheInteractiveStepKeepTheJobsCpus) {
  for (uint32_t step : {uint32_t(SLURM_BATCH_SCRIPT), uint32_t(SLURM_INTERACTIVE_STEP)}) {
    SetUp();
    slurm_spank_exit(nullptr, 0, nullptr);  // the earlier round's option forgotten
    g_host.step_id = step;
    g_host.env.erase("SLURM_STEP_TASKS_PER_NODE");
    g_host.env["SLURM_TASKS_PER_NODE"] = "2";  // the job's
    ASSERT_EQ(run_task({"default=closest"}), 0) << m_stderr;
    expect_unbound();
    ASSERT_EQ(run_task({}, "closest,verbose"), 0) << m_stderr;
    expect_unbound();
    EXPECT_NE(m_stderr.find("the batch script keeps the job's CPUs"), std::string::npos) << m_stderr;
  }
}

// srun --gpubind=verbose --cpu-bind=map_cpu:1,0: no mode named, so the user's own binding wins as
// over the site default (it was replaced without a word); with a mode named, gpubind binds and
// says whose binding it replaces.
TEST_F(SpankHost, TheUsersCpuBindWinsOverAGpubindThatNamesNoModeAndIsReplacedAloudByOneThatDoes) {
  std::map<std::string, std::string> user = {{"SLURM_CPU_BIND", "quiet,map_cpu:1,0"}, {"SLURM_CPU_BIND_TYPE", "map_cpu:"}, {"SLURM_CPU_BIND_LIST", "1,0"}};
  m_step_env = user;
  g_host.env.insert(user.begin(), user.end());
  ASSERT_EQ(run_task({}, "verbose"), 0) << m_stderr;
  expect_unbound("user");
  EXPECT_NE(m_stderr.find("srun --cpu-bind=map_cpu:1,0: the user's binding wins"), std::string::npos) << m_stderr;
  slurm_spank_exit(nullptr, 0, nullptr);
  SetUp();
  m_step_env = user;
  g_host.env.insert(user.begin(), user.end());
  ASSERT_EQ(run_task({}, "closest"), 0) << m_stderr;
  EXPECT_NE(g_host.env["GPUBIND_CPUS"], "from the user");
  EXPECT_NE(m_stderr.find("gpubind: note: --gpubind=closest replaces srun --cpu-bind=map_cpu:1,0 for this task"), std::string::npos) << m_stderr;
}

// srun --gpubind=none: unbound, and marked so that an enforcing watch leaves it alone too.
TEST_F(SpankHost, GpubindNoneLeavesTheTaskUnboundAndMarked) {
  ASSERT_EQ(run_task({"default=closest"}, "none"), 0) << m_stderr;
  expect_unbound("none");
}

// Issue 30: with --gpus-per-task=1 (or --gpu-bind=map_gpu) each task sees only its own GPU, and
// every task was planned as if all shared GPU 0. The plan is made over the step's GPUs, each task
// on the GPU Slurm gave it: task 3 gets what `gpubind plan -n 8` gives that GPU's rank.
TEST_F(SpankHost, PerTaskGpusArePlannedOverTheWholeStep) {
  std::string topology = "topology=" GPUBIND_SOURCE_DIR "/data/examples/dgx-h100.json";
  auto t = gpubind::discover::load_topology(GPUBIND_SOURCE_DIR "/data/examples/dgx-h100.json");
  ASSERT_TRUE(t.ok());
  gpubind::plan::Request eight;
  eight.ranks = 8;
  auto plan = gpubind::plan::make_plan(*t, eight);
  ASSERT_TRUE(plan.ok());
  struct Case {
    const char* tres_bind;
    const char* task_gpu;  // SLURM_STEP_GPUS of task 3
    const char* cuda;      // its CUDA_VISIBLE_DEVICES (renumbered by Slurm under ConstrainDevices)
    unsigned gpu;          // the GPU whose rank's CPUs it must get
  };
  for (const Case& c : {Case{"gpu:per_task:1", "3", "0", 3}, Case{"gpu:map_gpu:7,6,5,4,3,2,1,0", "4", "0", 4},
                        Case{"gpu:closest", "6", "6", 6}}) {
    SetUp();
    m_step_env = std::map<std::string, std::string>{
        {"SLURM_STEP_TASKS_PER_NODE", "8"}, {"SLURM_STEP_GPUS", "0,1,2,3,4,5,6,7"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}};
    g_host.env["SLURM_LOCALID"] = "3";
    g_host.env["SLURM_STEP_TASKS_PER_NODE"] = "8";
    g_host.env["SLURM_STEP_GPUS"] = c.task_gpu;
    g_host.env["CUDA_VISIBLE_DEVICES"] = c.cuda;
    g_host.env["SLURMD_TRES_BIND"] = c.tres_bind;
    ASSERT_EQ(run_task({"default=closest", "dryrun", topology}), 0) << m_stderr;
    EXPECT_EQ(g_host.env["GPUBIND_CPUS"], plan->ranks[c.gpu].cpus.to_list()) << c.tres_bind << ": " << m_stderr;
    EXPECT_EQ(g_host.env["GPUBIND_GPU"], plan->ranks[c.gpu].gpus[0].pci) << c.tres_bind;
    // Only closest leaves the other tasks' GPUs unsaid, and says so.
    EXPECT_EQ(m_stderr.find("are assumed") != std::string::npos, std::string(c.tres_bind) == "gpu:closest") << m_stderr;
  }
}

// Issue 30: Slurm keeps specialized cores (CoreSpecCount=1) and other jobs' cores out of the
// step's allocation, but without task/cgroup the task's cgroup is the whole node: a lone rank was
// bound to every CPU, the specialized one included. The plan is made over the step's cores.
TEST_F(SpankHost, OnlyTheStepsCoresArePlanned) {
  CpuSet all = *CpuSet::parse_list(m_affinity);
  if (all.count() < 2) GTEST_SKIP() << "needs two CPUs to hold one back (this process has " << m_affinity << ")";
  g_host.env["SLURM_STEP_TASKS_PER_NODE"] = "1";
  g_host.step_cores = "0";
  ASSERT_EQ(run_task({}, "verbose"), 0) << m_stderr;
  std::string cpus = g_host.env["GPUBIND_CPUS"];
  ASSERT_NE(cpus, "from the user");
  EXPECT_FALSE(CpuSet::parse_list(cpus)->test(*all.ids().rbegin())) << cpus;
  EXPECT_TRUE(CpuSet::parse_list(cpus)->is_subset_of(all)) << cpus;
  EXPECT_NE(m_stderr.find("held back: not among the step's cores"), std::string::npos) << m_stderr;
  // A core number beyond this machine (slurm.conf of another layout): said, and the step's
  // cgroup CPUs are planned as before.
  TearDown();  // the first task's binding undone before the next is planned
  SetUp();
  g_host.env["SLURM_STEP_TASKS_PER_NODE"] = "1";
  g_host.step_cores = "4095";
  ASSERT_EQ(run_task({}, "verbose"), 0) << m_stderr;
  EXPECT_NE(m_stderr.find("core 4095 is beyond this machine's"), std::string::npos) << m_stderr;
  EXPECT_EQ(g_host.env["GPUBIND_CPUS"], m_affinity);
}

TEST_F(SpankHost, ExecsPlanningOptionsApplyInThePlugin) {
  std::string topology = "topology=" GPUBIND_SOURCE_DIR "/data/examples/dgx-h100.json";
  g_host.env["SLURM_STEP_TASKS_PER_NODE"] = "8";
  ASSERT_EQ(run_task({"default=closest", "dryrun", topology}), 0) << m_stderr;
  std::string cpus_with_smt = g_host.env["GPUBIND_CPUS"];
  for (const char* v : {"CUDA_VISIBLE_DEVICES", "OMP_PLACES", "NCCL_IB_HCA"}) EXPECT_EQ(g_host.env.count(v), 0u) << v;

  SetUp();
  g_host.env["SLURM_STEP_TASKS_PER_NODE"] = "8";
  ASSERT_EQ(run_task({"default=closest", "dryrun", topology, "no-smt", "isolate-gpus", "omp", "nic-env"}), 0) << m_stderr;
  EXPECT_EQ(g_host.env["CUDA_VISIBLE_DEVICES"], "0");  // isolate-gpus: this task sees its own GPU only
  EXPECT_EQ(g_host.env["OMP_PLACES"], "cores");        // omp
  EXPECT_FALSE(g_host.env["NCCL_IB_HCA"].empty());     // nic-env: the GPU's NIC
  // no-smt: one PU of each core, so half the CPUs of the SMT binding on this 2-way SMT machine.
  auto smt = CpuSet::parse_list(cpus_with_smt), one_pu = CpuSet::parse_list(g_host.env["GPUBIND_CPUS"]);
  ASSERT_TRUE(smt.ok() && one_pu.ok());
  EXPECT_EQ(one_pu->count() * 2, smt->count()) << cpus_with_smt << " vs " << g_host.env["GPUBIND_CPUS"];
  EXPECT_TRUE((*one_pu - *smt).empty());
}

TEST_F(SpankHost, BadPlanningArgumentIsNamed) {
  EXPECT_EQ(run_task({"default=closest", "gpus-per-rank=0"}), -1);
  ASSERT_EQ(g_host.slurm_errors.size(), 1u);
  EXPECT_NE(g_host.slurm_errors[0].find("gpus-per-rank=0"), std::string::npos) << g_host.slurm_errors[0];
}

TEST_F(SpankHost, RefusedSetenvLeavesTheTaskUnbound) {
  g_host.refuse_setenv = "GPUBIND_MEM";
  EXPECT_EQ(run_task({"default=closest"}), 0);
  expect_one_line("gpubind: warning (task runs unbound): ", "spank_setenv GPUBIND_MEM: Generic error");
  expect_unbound();
}

TEST_F(SpankHost, StrictFailsTheTaskWhenSetenvIsRefused) {
  g_host.refuse_setenv = "GPUBIND_MEM";
  EXPECT_EQ(run_task({"default=closest", "strict"}), -1);
  expect_one_line("gpubind: error: ", "spank_setenv GPUBIND_MEM");
  expect_unbound();
}

TEST_F(SpankHost, MissingTopologyFileWarnsOrFailsWithStrict) {
  EXPECT_EQ(run_task({"default=closest", "topology=/nonexistent/gpubind.json"}), 0);
  expect_one_line("gpubind: warning (task runs unbound): ", "/nonexistent/gpubind.json");
  expect_unbound();
  EXPECT_EQ(run_task({"default=closest", "topology=/nonexistent/gpubind.json", "strict"}), -1);
  expect_one_line("gpubind: error: ", "/nonexistent/gpubind.json");
  expect_unbound();
}

TEST_F(SpankHost, UnreadableConfigWarnsOrFailsWithStrict) {
  m_config = "/nonexistent/gpubind.conf";
  EXPECT_EQ(run_task({"default=closest"}), 0);
  expect_one_line("gpubind: warning (task runs unbound): ", "/nonexistent/gpubind.conf");
  expect_unbound();
}

TEST_F(SpankHost, BadPlugstackArgumentFailsInitWithOneSlurmError) {
  EXPECT_EQ(run_task({"default=closest", "colour=blue"}), -1);
  ASSERT_EQ(g_host.slurm_errors.size(), 1u);
  EXPECT_NE(g_host.slurm_errors[0].find("colour"), std::string::npos) << g_host.slurm_errors[0];
}

// The binding syscalls failing inside slurmstepd: each a warning and an unbound task, or -1
// with strict; slurmstepd itself goes on. (set_mempolicy refused, EPERM or ENOSYS, keeps the CPU
// binding instead: bind/apply_test.cpp, tests/slurm/spank_test.sh case 13.)
class SpankHostFaults : public SpankHost, public ::testing::WithParamInterface<std::pair<const char*, int>> {};

TEST_P(SpankHostFaults, RefusedSyscallLeavesTheTaskUnbound) {
#ifndef GPUBIND_FAULT_POINTS
  GTEST_SKIP() << "built without failure points (the sanitizer build of make test has them)";
#else
  auto [point, err] = GetParam();
  if (std::string(point) == "gpubind/set_mempolicy") {
    auto root = gpubind::sys::open_fsroot("/");
    ASSERT_TRUE(root.ok());
    auto nodes = gpubind::sys::online_numa_nodes(**root);
    if (nodes && nodes->count() == 1)
      GTEST_SKIP() << "set_mempolicy is not called on a machine with one NUMA node, as this one; tests/slurm/spank_test.sh "
                      "case 13 fails it in slurmstepd with a two-node view of /sys";
  }
  ASSERT_EQ(fiu_init(0), 0);
  m_point = point;
  ASSERT_EQ(fiu_enable(point, 1, reinterpret_cast<void*>(long(err)), 0), 0);
  EXPECT_EQ(run_task({"default=closest"}), 0);
  expect_one_line("gpubind: warning (task runs unbound): ", std::strerror(err));
  expect_unbound();
  EXPECT_EQ(run_task({"default=closest", "strict"}), -1);
  expect_one_line("gpubind: error: ", std::strerror(err));
  expect_unbound();
#endif
}

INSTANTIATE_TEST_SUITE_P(Syscalls, SpankHostFaults,
                         ::testing::Values(std::make_pair("gpubind/sched_setaffinity", EINVAL),
                                           std::make_pair("gpubind/set_mempolicy", ENOMEM),
                                           std::make_pair("gpubind/sched_getaffinity", EPERM),
                                           std::make_pair("gpubind/read/proc/self/status", EIO)),
                         [](const auto& p) {  // e.g. set_mempolicy_errno_1
                           std::string name = std::string(p.param.first).substr(8) + "_errno_" + std::to_string(p.param.second);
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
