// gpubind_spank.so: `srun --gpubind[=MODE][,verbose][,mem=POLICY][,nic-env]` binds every task the way
// `gpubind exec` would, inside slurmstepd, after fork and before exec. A thin C ABI shim over the
// same library calls; no exception crosses it, and it never crashes slurmstepd.
//
// plugstack.conf:  required /path/gpubind_spank.so [default=closest] [mem=preferred] [strict] [require-mem-policy]
//                                                  [topology=/admin/path.json] [dryrun]
//   default=  binds every job step even without --gpubind (an admin's choice)
//   mem=      memory policy: preferred (default), bind, interleave, none
//   strict    a binding that cannot be applied fails the task (default: warning, task unbound)
//   require-mem-policy  a memory policy the container refuses fails the task (default: a warning,
//             the task keeps its CPU binding)
//   topology= a topology file chosen by the admin (never one named by the user's environment)
//   dryrun    plan and export GPUBIND_* but apply nothing (tests with a fake node layout)
//   no-smt, nic-env, isolate-gpus, no-spread-gpus, omp, balanced, require-gpu, gpus-per-rank=N, mem-node=N
//             the planning options of `gpubind exec` (same names without "--", same meaning)
//   config=   the gpubind.conf to read (default /etc/gpubind.conf; never one named by the user's
//             environment): binding = off disables the plugin; policy = is the mode of a bare
//             --gpubind; mem = and reserve = apply unless plugstack.conf says otherwise
extern "C" {
#include <slurm/slurm.h>  // SLURM_BATCH_SCRIPT, SLURM_INTERACTIVE_STEP
#include <slurm/spank.h>
}

#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "bind/apply.hpp"
#include "bind/bind_rank.hpp"
#include "bind/config.hpp"
#include "bind/request.hpp"
#include "bind/slurm_step.hpp"
#include "bind/spank_args.hpp"
#include "discover/gpu_runtime.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "plan/plan.hpp"
#include "probe/probe.hpp"
#include "render/plan_render.hpp"
#include "sys/affinity.hpp"
#include "sys/binder.hpp"
#include "sys/fsroot.hpp"
#include "topo/binding_env.hpp"
#include "topo/launcher_env.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

extern "C" {
// SPANK_PLUGIN() declares these const, which C++ gives internal linkage; define them by hand.
extern const char plugin_name[] = "gpubind";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {
// bind::kSpankBuiltFor and the release of the slurm_version.h it was built with, "22.05.8".
struct BuiltFor {
  char text[80];
};
constexpr BuiltFor built_for(unsigned version) {
  BuiltFor b{};
  size_t n = 0;
  for (char c : gpubind::bind::kSpankBuiltFor) b.text[n++] = c;
  auto put = [&](unsigned x, bool two_digits) {
    if (x >= 100) b.text[n++] = char('0' + x / 100);
    if (x >= 10 || two_digits) b.text[n++] = char('0' + x / 10 % 10);
    b.text[n++] = char('0' + x % 10);
  };
  put((version >> 16) & 0xff, false);
  b.text[n++] = '.';
  put((version >> 8) & 0xff, true);
  b.text[n++] = '.';
  put(version & 0xff, false);
  return b;
}
}  // namespace

extern "C" {
// Exported (gpubind_spank.map) so the linker keeps it: `gpubind doctor` and strings(1) read it.
extern const BuiltFor gpubind_slurm_release = built_for(SLURM_VERSION_NUMBER);
}

namespace {

using namespace gpubind;

// The admin's plugstack.conf arguments and the user's --gpubind option (bind/spank_args).
bind::PlugstackArgs g_args;
bind::GpubindOption g_opt;
bool g_requested = false;  // --gpubind given
std::string g_mode;        // the mode this task is bound with (set in task_init)
// The step's environment as srun sent it, read in slurm_spank_user_init before slurmstepd adds
// each task's binding and GPU variables (bind/slurm_step.hpp says what tells them apart).
bind::EnvMap g_step;
bool g_step_seen = false;

int option_cb(int, const char* optarg, int) {
  auto o = bind::parse_gpubind_option(optarg);
  if (!o) return -1;
  g_opt = *o;
  g_requested = true;
  return 0;
}

struct spank_option g_option = {
    const_cast<char*>("gpubind"), const_cast<char*>("mode"),
    const_cast<char*>("Bind every task to its GPU's cores, memory and NIC [mode: closest (default), socket-split, socket, numa, none; "
                      "combined by commas with verbose, report, mem=POLICY, nic-env]"),
    2, 0, option_cb};

// A variable of the task's environment, whatever its length: a buffer too small for it is grown
// (Linux caps one variable at 128 KiB, MAX_ARG_STRLEN), never cut or taken as unset.
std::optional<std::string> spank_task_value(spank_t sp, const std::string& name) {
  for (size_t size = 4096; size <= (1u << 20); size *= 2) {
    std::vector<char> buf(size);
    spank_err_t e = spank_getenv(sp, name.c_str(), buf.data(), int(buf.size()));
    if (e == ESPANK_SUCCESS) return std::string(buf.data());
    if (e != ESPANK_NOSPACE) return std::nullopt;
  }
  return std::nullopt;
}

// Environment changes go to the task's environment (spank_setenv), not slurmstepd's.
class SpankBinder final : public sys::Binder {
 public:
  SpankBinder(spank_t sp, std::unique_ptr<sys::Binder> real, bool dry) : m_sp(sp), m_real(std::move(real)), m_dry(dry) {}
  Status set_cpu_affinity(const CpuSet& cpus) override { return m_dry ? Status(Ok{}) : m_real->set_cpu_affinity(cpus); }
  Status set_memory_policy(sys::MemMode mode, const CpuSet& nodes) override {
    return m_dry ? Status(Ok{}) : m_real->set_memory_policy(mode, nodes);
  }
  Status reset_memory_policy() override { return m_dry ? Status(Ok{}) : m_real->reset_memory_policy(); }
  Status set_env(const std::string& name, const std::string& value) override {
    if (spank_err_t e = spank_setenv(m_sp, name.c_str(), value.c_str(), 1); e != ESPANK_SUCCESS)
      return Error{"spank_setenv " + name, spank_strerror(e)};
    return Ok{};
  }
  std::optional<std::string> get_env(const std::string& name) override { return spank_task_value(m_sp, name); }
  Status unset_env(const std::string& name) override {
    if (spank_err_t e = spank_unsetenv(m_sp, name.c_str()); e != ESPANK_SUCCESS) return Error{"spank_unsetenv " + name, spank_strerror(e)};
    return Ok{};
  }
  sys::ExecFailure exec(const std::vector<std::string>&) override { return {kExitExecFailed, "exec is slurmstepd's job"}; }

 private:
  spank_t m_sp;
  std::unique_ptr<sys::Binder> m_real;
  bool m_dry;
};

// The task's own variables: its rank, its GPUs (narrowed by Slurm's per-task GPU binding), the
// rule Slurm narrowed them by, and the CPU binding variables (read when the step's were not seen).
std::map<std::string, std::string> task_env(spank_t sp) {
  std::map<std::string, std::string> env;
  std::vector<std::string> names = topo::local_rank_env_names();
  for (const std::string& n : bind::slurm_step_env_names()) names.push_back(n);
  names.push_back("SLURMD_TRES_BIND");
  for (const std::string& n : names)
    if (auto v = spank_task_value(sp, n)) env[n] = *v;
  return env;
}

// The task is left as its user chose (GPUBIND_BINDING): watch --enforce must leave it so too.
void mark_users_binding(spank_t sp, const char* how) {
  if (spank_err_t e = spank_setenv(sp, topo::binding_env::kBinding, how, 1); e != ESPANK_SUCCESS)
    std::fprintf(stderr, "gpubind: warning: spank_setenv %s: %s\n", topo::binding_env::kBinding, spank_strerror(e));
}

// The site default never fights what the user chose (bind_task says which). The user's
// --cpu-bind is told apart from task/affinity's automatic binding by the step's environment
// (srun exports the user's there; task/affinity writes its own into each task only). A Slurm
// that did not call slurm_spank_user_init leaves only the task's, where both look the same: the
// site default then stands back from any CPU binding.
bool site_default_stands_back(spank_t sp, const std::map<std::string, std::string>& env, const topo::LocalRank& lr) {
  if (auto user = bind::user_cpu_binding(g_step_seen ? g_step : env)) {
    if (g_opt.verbose) std::fprintf(stderr, "gpubind: srun --cpu-bind=%s: the user's binding wins over the site default\n", user->c_str());
    mark_users_binding(sp, "user");
    return true;
  }
  if (lr.size == 1) {
    if (g_opt.verbose) std::fprintf(stderr, "gpubind: one task on this node: left to its own launcher (site default)\n");
    return true;
  }
  return false;
}

// The user asked for gpubind (--gpubind) and gave srun --cpu-bind too. Without a mode named
// (--gpubind, --gpubind=verbose) the user's own binding wins, as it does over the site default;
// with one (--gpubind=closest) gpubind binds, and says whose binding it replaces (it replaced
// the user's map silently).
// Only where the step's environment was seen: the task's alone cannot tell the user's --cpu-bind
// from task/affinity's automatic binding, and the user asked for gpubind.
bool users_cpu_bind_wins(spank_t sp) {
  auto user = g_step_seen ? bind::user_cpu_binding(g_step) : std::nullopt;
  if (!user) return false;
  if (g_opt.defaulted) {
    std::fprintf(stderr, "gpubind: note: srun --cpu-bind=%s: the user's binding wins (--gpubind names no mode; --gpubind=closest replaces it)\n",
                 user->c_str());
    mark_users_binding(sp, "user");
    return true;
  }
  std::fprintf(stderr, "gpubind: note: --gpubind=%s replaces srun --cpu-bind=%s for this task\n", g_mode.c_str(), user->c_str());
  return false;
}

void warn(const std::vector<std::string>& lines) {
  for (const std::string& n : lines) std::fprintf(stderr, "gpubind: warning: %s\n", one_line(n).c_str());
}

// The admin's topology= is used for binding only when it describes this node; with dryrun it may
// be any machine (nothing is applied). GPUs named by UUID in the task's CUDA_VISIBLE_DEVICES
// (Slurm's gres UniqueId, MIG instances): this node's NVML / ROCm SMI says which GPU each is,
// also in dryrun; nothing is loaded otherwise.
Result<topo::Topology> task_topology(const bind::Config& cfg, const std::map<std::string, std::string>& env) {
  std::string cache = discover::default_cache_dir(cfg.cache_dir.value_or(""));
  std::vector<std::string> cache_notes;
  auto topo = g_args.dry_run ? (g_args.topology.empty() ? discover::load_live_cached(cache, cfg.cache_max_files, &cache_notes)
                                                         : discover::load_topology(g_args.topology))
                             : discover::load_for_binding(g_args.topology, "plugstack.conf topology=" + g_args.topology, cache,
                                                          cfg.cache_max_files, &cache_notes);
  warn(cache_notes);
  if (!topo) return topo;
  auto task_value = [&env](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  warn(discover::add_runtime_identity(*topo, task_value));
  return topo;
}

std::string env_value(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// Slurm's per-task GPU binding (--gpus-per-task, --gpu-bind) narrowed the task's GPUs below the
// step's: the node is planned over the step's GPUs with each task on the GPUs Slurm gave it, so a
// rank gets the same CPUs as without the narrowing, and they are its own GPU's.
void per_task_gpus(const std::map<std::string, std::string>& env, const topo::LocalRank& lr, bind::RankRequest& r) {
  if (!g_step_seen || !lr.size) return;
  auto gpus = bind::slurm_task_gpus(env_value(g_step, "SLURM_STEP_GPUS"), env_value(env, "SLURM_STEP_GPUS"),
                                    env_value(env, "SLURMD_TRES_BIND"), *lr.size, lr.rank);
  if (!gpus) return;
  r.gpu_env.clear();
  for (const std::string& n : plan::gpu_env_names())
    if (auto it = g_step.find(n); it != g_step.end()) r.gpu_env.insert(*it);
  r.options.rank_gpus = gpus->rows;
  if (!gpus->exact) warn({gpus->how + ": tasks sharing a NUMA node may overlap"});
}

// The CPUs of the cores Slurm allocated to the step here (spank's S_STEP_ALLOC_CORES): the cores
// it keeps for the system (CoreSpecCount, CpuSpecList, --core-spec) and other jobs' are not among
// them, and without task/cgroup nothing else keeps the task off them. nullopt in a dry run (the
// file machine is not this one) or when Slurm's numbering does not fit this machine (said).
std::optional<CpuSet> step_cpus(spank_t sp, const topo::Topology& t) {
  char* cores = nullptr;
  if (g_args.dry_run || spank_get_item(sp, S_STEP_ALLOC_CORES, &cores) != ESPANK_SUCCESS || !cores || !*cores) return std::nullopt;
  auto cpus = bind::slurm_core_cpus(t, cores);
  if (!cpus) {
    warn({cpus.error().message() + ": planned over the step's cgroup CPUs " + t.allowed_cpus.to_list()});
    return std::nullopt;
  }
  return *cpus;
}

// The same options and binding as `gpubind exec` under srun (bind/bind_rank.hpp): planned over
// the step's cgroup CPUs; dryrun plans over the whole file machine and exports GPUBIND_* only.
Result<bind::RankRequest> task_request(const bind::Config& cfg, const std::map<std::string, std::string>& env,
                                       const topo::LocalRank& lr, const topo::Topology& t, const std::optional<CpuSet>& step) {
  bind::RankRequest r;
  r.options = g_args.plan;
  r.options.ranks = lr.size;
  r.options.policy = g_mode;
  if (g_args.mem_set) r.options.mem = plan::to_string(g_args.mem);
  if (g_opt.mem) r.options.mem = plan::to_string(*g_opt.mem);  // the user's, for their own job
  r.options.nic_env = r.options.nic_env || g_opt.nic_env;
  bind::apply_config(cfg, r.options, {true, g_args.mem_set || g_opt.mem.has_value(), false});
  r.local = lr;
  r.from = g_args.dry_run ? bind::AllowedFrom::topology : bind::AllowedFrom::cgroup;
  r.mem_refused = g_args.require_mem_policy ? bind::MemRefused::error : bind::MemRefused::warn;
  for (const std::string& n : plan::gpu_env_names())
    if (auto it = env.find(n); it != env.end()) r.gpu_env.insert(*it);
  per_task_gpus(env, lr, r);
  if (step && !(*step & t.allowed_cpus).empty()) r.options.allowed = (*step & t.allowed_cpus).to_list();
  if (g_args.dry_run) {
    r.machine = {t.cpus, t.cpus, CpuSet::range(0, 4095)};
    return r;
  }
  auto cur = bind::live_machine_state();
  if (!cur) return cur.error();
  r.machine = *cur;
  auto live = probe::this_process_allowance(t, r.gpu_env);
  if (!live) return live.error();
  r.allowance = std::move(*live);
  return r;
}

// One line of where the task runs and what it is bound to, like Open MPI's --report-bindings:
// host, job and step, global and local rank, then the binding in exec's words
// (render::describe_binding: GPUs with PCI address and UUID when known, CPUs, memory, NICs).
std::string binding_line(spank_t sp, const plan::RankBinding& rb, const topo::Topology& t, bind::MemoryApplied memory) {
  uint32_t job = 0, step = 0, global = 0;
  bool ids = spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS && spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
             spank_get_item(sp, S_TASK_GLOBAL_ID, &global) == ESPANK_SUCCESS;
  std::string where = sys::hostname();
  if (ids) where += " job " + std::to_string(job) + "." + (step == SLURM_BATCH_SCRIPT ? std::string("batch") : std::to_string(step)) +
                    " rank " + std::to_string(global) + " (local " + std::to_string(rb.local_rank) + ")";
  else where += " local rank " + std::to_string(rb.local_rank);
  return one_line(where) + ": " + render::describe_binding(rb, t, bind::memory_applied_note(memory)) + (g_args.dry_run ? " (dry run)" : "");
}

// The warnings, then what the site default narrowed (always said), --gpubind=verbose's line on
// the job's stderr, and the same line in slurmd's log at debug level.
// `held_back`: CPUs of the step's cgroup outside Slurm's allocation for the step.
void report(spank_t sp, const bind::BoundRank& b, const topo::Topology& t, bool site_default, const CpuSet& held_back) {
  warn(b.plan_warnings);
  warn(b.apply_warnings);
  const plan::RankBinding& rb = b.binding;
  CpuSet step = (g_args.dry_run ? t.cpus : t.allowed_cpus) - held_back;
  if (site_default && rb.cpus != step)
    std::fprintf(stderr, "gpubind: site default %s binds local rank %u to CPUs %s of the step's %s (srun --gpubind=none opts out)\n",
                 plan::to_string(b.request.policy), rb.local_rank, rb.cpus.to_list().c_str(), step.to_list().c_str());
  std::string line = binding_line(sp, rb, t, b.applied ? b.applied->memory : bind::MemoryApplied::unchanged);
  if (!held_back.empty())
    line += "; CPUs " + held_back.to_list() + " held back: not among the step's cores (Slurm's core specialization or other jobs')";
  if (std::string note = b.applied ? bind::pools_note(*b.applied) : ""; !note.empty()) line += "; " + note;
  if (g_opt.verbose) std::fprintf(stderr, "gpubind: %s\n", line.c_str());
  slurm_debug("gpubind: %s", line.c_str());
}

// The task's binding; an Error says why it could not be made or applied. `site_default`: the
// mode comes from plugstack.conf, not from the user's --gpubind, so it must never fight what the
// user or Slurm chose:
//   - the user's explicit --cpu-bind wins: the task is left as Slurm binds it (task/affinity's
//     automatic binding does not: the site default replaces it);
//   - Slurm's per-task GPU binding (--gpus-per-task, --gpu-bind) is followed: the task is bound
//     near the GPU Slurm gave it, never moved to another;
//   - a step with one task on this node is left to that task (it is usually a launcher,
//     torchrun or `gpubind launch`, that binds the workers it starts within the allocation);
//   - any narrowing below the step's CPUs is said on stderr.
Status bind_task(spank_t sp, bool site_default, const bind::Config& cfg) {
  std::map<std::string, std::string> env = task_env(sp);
  auto lr = topo::detect_local_rank(env);
  if (!lr) return lr.error();
  if (!*lr) return Error{"task", "no SLURM_LOCALID in the task's environment"};
  if (site_default && site_default_stands_back(sp, env, **lr)) return Ok{};
  if (!site_default && users_cpu_bind_wins(sp)) return Ok{};
  auto topo = task_topology(cfg, env);
  if (!topo) return topo.error();
  std::optional<CpuSet> step = step_cpus(sp, *topo);
  auto r = task_request(cfg, env, **lr, *topo, step);
  if (!r) return r.error();
  SpankBinder binder(sp, sys::real_binder(), g_args.dry_run);
  auto bound = bind::bind_rank(*topo, *r, binder);
  if (!bound) return bound.error();
  if (!bound->applied) return bound->applied.error();
  report(sp, *bound, *topo, site_default, step ? topo->allowed_cpus - *step : CpuSet());
  return Ok{};
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  try {
    auto args = bind::parse_plugstack_args(std::vector<std::string>(av, av + ac));
    if (!args) {
      slurm_error("gpubind: %s (%s)", args.error().what.c_str(), args.error().why.c_str());
      return -1;
    }
    g_args = *args;
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR) return spank_option_register(sp, &g_option);
    return 0;
  } catch (const std::exception& e) {
    slurm_error("gpubind: %s", e.what());
    return -1;
  } catch (...) {
    return -1;
  }
}

// The step's environment as srun sent it: slurmstepd calls this once per step, before it forks
// the tasks and adds each one's binding and GPU variables.
extern "C" int slurm_spank_user_init(spank_t sp, int, char**) {
  try {
    g_step.clear();
    for (const std::string& n : bind::slurm_step_env_names())
      if (auto v = spank_task_value(sp, n)) g_step[n] = *v;
    g_step_seen = true;
    return 0;
  } catch (...) {
    g_step_seen = false;  // the task's own variables decide, as before
    return 0;
  }
}

// The end of the step: its option is forgotten (one slurmstepd serves one step, and a plugin
// loaded again in the same process, as the tests' host does, starts clean).
extern "C" int slurm_spank_exit(spank_t, int, char**) {
  g_opt = bind::GpubindOption{};
  g_requested = false;
  g_mode.clear();
  g_step.clear();
  g_step_seen = false;
  return 0;
}

// The batch script (sbatch) and salloc's interactive step are one process standing for the whole
// job: their SLURM_LOCALID is 0 and the job's SLURM_TASKS_PER_NODE counts the tasks of later
// steps, so binding them as local rank 0 confined the script, and all it runs directly (torchrun,
// mpirun, `gpubind launch`), to GPU 0's share of the node, with rank 0's GPUBIND_*. They keep
// what Slurm gave them; their steps' tasks are bound.
bool job_wide_step(spank_t sp) {
  uint32_t step = 0;
  return spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS && (step == SLURM_BATCH_SCRIPT || step == SLURM_INTERACTIVE_STEP);
}

extern "C" int slurm_spank_task_init(spank_t sp, int, char**) {
  try {
    if (job_wide_step(sp)) {
      if (g_opt.verbose) std::fprintf(stderr, "gpubind: the batch script keeps the job's CPUs (the tasks of its steps are bound)\n");
      return 0;
    }
    bool site_default = !g_requested;
    std::string mode = site_default ? g_args.site_default : g_opt.mode;
    if (!site_default && mode == "none") mark_users_binding(sp, "none");  // srun --gpubind=none
    if (mode.empty() || mode == "none") return 0;
    auto cfg = bind::read_config(g_args.config, g_args.config_set);
    if (!cfg) {
      std::fprintf(stderr, "gpubind: %s: %s\n", g_args.strict ? "error" : "warning (task runs unbound)", cfg.error().message().c_str());
      return g_args.strict ? -1 : 0;
    }
    if (!cfg->binding) {
      if (g_opt.verbose) std::fprintf(stderr, "gpubind: binding = off in %s: task left unbound\n", cfg->path.c_str());
      return 0;
    }
    if (g_opt.defaulted && !site_default && cfg->policy) mode = *cfg->policy;
    g_mode = mode;
    Status s = bind_task(sp, site_default, *cfg);
    if (s) return 0;
    std::fprintf(stderr, "gpubind: %s: %s\n", g_args.strict ? "error" : "warning (task runs unbound)", s.error().message().c_str());
    return g_args.strict ? -1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpubind: warning (task runs unbound): internal error: %s\n", e.what());
    return g_args.strict ? -1 : 0;
  } catch (...) {
    return g_args.strict ? -1 : 0;
  }
}
