#pragma once
// What the SPANK plugin is told, parsed without Slurm so it can be tested and fuzzed: its
// plugstack.conf arguments (an admin's) and the user's `srun --gpubind[=MODE]` option.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bind/config.hpp"
#include "bind/request.hpp"
#include "plan/plan.hpp"
#include "util/result.hpp"

namespace gpubind::bind {

struct PlugstackArgs {
  std::string site_default;  // default=MODE: bind every step without --gpubind ("" = no)
  plan::MemPolicy mem = plan::MemPolicy::preferred;
  bool mem_set = false;
  std::string config = kDefaultConfigPath;
  bool config_set = false;
  bool strict = false;
  bool require_mem_policy = false;  // a refused memory policy fails the task (with strict) or leaves it unbound
  bool dry_run = false;
  std::string topology;
  // The planning options `gpubind exec` takes as flags, named as the flags without "--": no-smt,
  // nic-env, isolate-gpus, omp, balanced, mem-on-gpu, require-gpu, gpus-per-rank=N, mem-node=N. The policy
  // (the mode), mem and reserve are set by the plugin from the mode, mem= and gpubind.conf.
  PlanOptions plan;
};

// default=closest|socket-split|socket|numa|none, mem=..., strict, require-mem-policy, dryrun, config=PATH,
// topology=PATH, and the planning options above. The Error's `what` is the argument, `why` what
// is accepted.
Result<PlugstackArgs> parse_plugstack_args(const std::vector<std::string>& args);

struct GpubindOption {
  std::string mode;        // closest, socket-split, socket, numa or none
  bool defaulted = false;  // no mode named (bare --gpubind, =verbose...): gpubind.conf's policy may choose
  bool verbose = false;    // verbose or report: one line per task on the job's stderr
  std::optional<plan::MemPolicy> mem;  // mem=...: the user's memory policy, over plugstack.conf's
  bool nic_env = false;                // nic-env: export the rank's NIC variables
};

// The value of --gpubind: a comma-separated list of at most one mode (closest, socket-split,
// socket, numa, none) and the words verbose, report, mem=POLICY and nic-env, in any order
// ("numa,verbose", "mem=interleave,report"). `optarg` may be null or Slurm's literal "(null)" for
// a bare option.
Result<GpubindOption> parse_gpubind_option(const char* optarg);

// The Slurm release a built plugin is for, as text in the file (symbol gpubind_slurm_release):
// this prefix, then "MAJOR.MINOR.MICRO" and a NUL. Slurm loads a SPANK plugin only into the
// release series it was built for (plugin.c compares plugin_version's major and minor), so
// `gpubind doctor` reads it from the file without loading it.
inline constexpr std::string_view kSpankBuiltFor = "gpubind SPANK plugin built for Slurm ";
// The release text after the prefix in a plugin file's bytes ("22.05.8"); nullopt without one.
std::optional<std::string> spank_built_for(std::string_view file);

}  // namespace gpubind::bind
