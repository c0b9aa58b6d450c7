#pragma once
// What every subcommand shares: the error line format, --topology resolution, the common flags.
#include <map>
#include <optional>
#include <string>

#include "topo/topology.hpp"
#include <utility>
#include <vector>

#include "bind/config.hpp"
#include "cli/args.hpp"
#include "plan/plan.hpp"
#include "probe/select.hpp"
#include "util/result.hpp"

namespace gpubind::cli {

// The one exit-status policy (docs/cli.md, "Exit codes"): an Error's kind decides, never the
// call site. ErrorKind::usage (a flag, argument or request that cannot be satisfied as given) is
// 2; every other kind (an unreadable input, a failed syscall, no GPU where one is required) 1.
int exit_status_of(const Error& e);
// Prints "gpubind: error: what: why" to stderr and returns exit_status_of(e).
int fail(const Error& e);
// `exec`: gpubind failed before the command started, whatever the kind: 125, as env(1).
int fail_exec(const Error& e);
// The same line with a status the caller owns: a command's own usage status (exec's is 125) and
// its internal-error status.
int fail_with(const Error& e, int code);

// --topology wins; else GPUBIND_TOPOLOGY; else "" (this machine).
std::string topology_source(const std::string& flag);

// Adds --topology to a subcommand.
void add_topology_option(Args& app, std::string& target);

// Adds --quiet (no warnings on stderr) to a subcommand.
void add_quiet_option(Args& app, bool& target);

// Every warning goes to stderr, one line each ("gpubind: warning: ..."), in every format and
// command, unless --quiet. Control characters (a newline in a device name) are escaped so one
// warning stays one line.
void print_warnings(const std::vector<std::string>& warnings, bool quiet);
// --explain of exec and launch: the plan's steps on stderr, one line each ("gpubind: explain: ...").
void print_explain(const std::vector<std::string>& steps);

// What this host's slurmd says it is (`slurmd -V`: "slurm 25.11.4"), and which slurmd said it (in
// PATH, else /usr/sbin or /usr/local/sbin); nullopt when none runs here.
struct InstalledSlurm {
  std::string version;  // its output, trimmed
  std::string from;     // "slurmd -V", "/usr/sbin/slurmd -V"
};
std::optional<InstalledSlurm> installed_slurm();
// On this machine: when CUDA_VISIBLE_DEVICES (or ROCR_/HIP_VISIBLE_DEVICES) names GPUs by UUID
// and the topology has none, fills them in from NVML / ROCm SMI (discover::add_runtime_identity),
// printing its notes.
// `container_variable`: NVIDIA_VISIBLE_DEVICES counts too (discover::add_runtime_identity).
void add_runtime_identity(topo::Topology& t, bool quiet, bool container_variable = false);

// check's and watch's process selection: --pid (repeatable), --self, --all-gpu-procs,
// --children-of, --match.
struct SelectionFlags {
  std::vector<std::string> pids;
  std::string children_of, match;
  bool self = false, all_gpu = false;
  bool any() const { return !pids.empty() || self || all_gpu || !children_of.empty() || !match.empty(); }  // a selector given
};
// Declares them; `verb` ("check", "watch") words their help. `all_gpu_default`: no selector
// selects every GPU process (check, watch); rebind refuses to guess and needs one.
void add_selection_options(Args& app, SelectionFlags& f, const std::string& verb, bool all_gpu_default);
// The selection they ask for; `live`: this machine's /proc (gpubind itself is never found by a
// selector), else a recorded tree (--self is refused). Errors are usage errors.
Result<probe::Selection> make_selection(const SelectionFlags& f, bool live);

// The GPU libraries know which GPU each process has a context on (CUDA opens every visible GPU's
// device file): asked for this machine's processes only, `unknown` the note printed when no
// library answers. They count as GPU processes too: added to `sel`.
std::optional<std::vector<probe::GpuProcess>> gpu_contexts(const topo::Topology& t, probe::Selection& sel, const std::string& unknown,
                                                           bool quiet);

// The topology cache of every command that discovers this machine, one rule for all: its
// directory ($GPUBIND_CACHE_DIR, else gpubind.conf's cache_dir, "off" for none, else the default
// place: discover::default_cache_dir) and how many files it keeps (cache_max_files). From the
// configuration a command read for its binding (exec, launch), or read here, where one that
// cannot be read leaves the defaults with a note (doctor reports the file itself).
struct TopologyCache {
  std::string dir;  // "": discovered every time
  size_t max_files = 0;
  std::vector<std::string> notes;
};
TopologyCache topology_cache(const bind::Config& cfg);
TopologyCache topology_cache();

// Where a command's topology comes from: one rule for every command.
//   --topology SRC, else $GPUBIND_TOPOLOGY: that source, except where this machine's processes
//     are bound or moved (`binding`), where it must describe this machine (an admin's corrected
//     copy: the same PUs and NUMA nodes) unless previewed by a dry run;
//   else --root DIR, a captured tree: a usage error (the processes' machine is unknown), except
//     for k8s check (`root_is_machine`), which reads the tree's own sys/;
//   else this machine: discovered afresh to describe it (`describe`: topo, plan, compare, slurm),
//     else through the topology cache (topology_cache: gpubind.conf's cache_dir and
//     cache_max_files, from `config` where the command read gpubind.conf itself).
// The cache's notes are printed unless `quiet`.
enum class TopologyUse {
  describe,   // topo, plan, compare, slurm gres-conf: this machine as discovered now
  processes,  // check, watch, doctor, k8s check, bench, rebind --dry-run: this machine's processes, judged
  binding,    // exec, launch, rebind, watch --enforce: this machine's processes, bound or moved
};
struct TopologyFrom {
  TopologyUse use = TopologyUse::processes;
  std::string flag;                      // --topology as given ("": $GPUBIND_TOPOLOGY, else this machine)
  std::string root;                      // --root, a captured tree ("": this machine's /proc)
  std::string recorded = "captured";     // what the usage error calls the tree's processes
  bool root_is_machine = false;          // k8s check: the tree's sys/ is the node
  bool preview = false;                  // a dry run: a binding's file may describe another machine
  bool no_cache = false;                 // --no-cache: this machine discovered afresh
  const bind::Config* config = nullptr;  // gpubind.conf as the command read it; nullptr: read here
  bool quiet = false;
};
Result<topo::Topology> acquire_topology(const TopologyFrom& from);

// The named variables of this process's environment, for the pure layers that take a map.
// The libraries' own CPU pinning a rank's environment asks for (topo/pinning_env.hpp), one note
// per knob on (bind::pinning_notes), and, when `check_start` (no launcher is known to have pinned
// this process), a warning when its CPUs are fewer than its cgroup's (bind::narrowed_before).
void print_pinning(const topo::Topology& t, const plan::Plan& p, const std::vector<const plan::RankBinding*>& ranks, const CpuSet& affinity,
                   bool check_start, bool quiet);
std::map<std::string, std::string> environment_of(const std::vector<std::string>& names);

// The node name records and metrics carry: the flag, else Slurm's name for the node (NodeName may
// differ from the host's), else $NODE_NAME (Kubernetes' downward API: a pod's hostname is the
// pod's name), else the topology's hostname (a captured machine's), else this host's name.
std::string node_name(const std::string& flag, const std::string& slurm_node, const topo::Topology& t);

}  // namespace gpubind::cli
