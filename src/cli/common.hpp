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

// This machine's topology through topology_cache() (its notes printed unless `quiet`).
Result<topo::Topology> this_machine(bool quiet);

// check's and watch's machine: --topology (or $GPUBIND_TOPOLOGY), else this one from the
// topology cache (its notes printed unless `quiet`). A captured tree (--root `root`) needs --topology: a usage
// error otherwise, naming the root.
Result<topo::Topology> topology_of_processes(const std::string& topology_flag, const std::string& root, const std::string& what, bool quiet);

// The machine whose processes rebind and watch --enforce move: this one (cached), or a topology
// file (--topology, else $GPUBIND_TOPOLOGY: an admin's corrected copy) when it describes this
// machine, as exec binds with it; one that describes another machine is an error saying what
// differs.
Result<topo::Topology> topology_for_moving(const std::string& topology_flag, bool quiet);

// The named variables of this process's environment, for the pure layers that take a map.
std::map<std::string, std::string> environment_of(const std::vector<std::string>& names);

// The node name records and metrics carry: the flag, else Slurm's name for the node (NodeName may
// differ from the host's), else $NODE_NAME (Kubernetes' downward API: a pod's hostname is the
// pod's name), else the topology's hostname (a captured machine's), else this host's name.
std::string node_name(const std::string& flag, const std::string& slurm_node, const topo::Topology& t);

}  // namespace gpubind::cli
