#pragma once
// The planning flags shared by `plan`, `compare`, `exec` and `launch`: declared once,
// turned into a plan::Request once.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "bind/config.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::cli {

struct PlanOptions {
  std::string topology;
  std::optional<unsigned> ranks;
  std::optional<unsigned> gpus_per_rank;
  std::string policy = "closest";
  bool no_smt = false;
  std::string reserve;
  std::string allowed;
  std::string allowed_mems;
  std::string mem = "preferred";
  std::optional<unsigned> mem_node;
  bool nic_env = false;
  bool isolate_gpus = false;
  bool omp = false;
  bool balanced = false;
  bool require_gpu = false;
  bool quiet = false;  // no warnings on stderr
};

// gpubind.conf for exec and launch: $GPUBIND_CONFIG (which must exist) or /etc/gpubind.conf
// (which may be missing: the defaults).
Result<bind::Config> load_config();

// Fills what the user did not give on the command line (--policy, --mem, --reserve) from the
// configuration file.
void apply_config(const CLI::App& app, const bind::Config& cfg, PlanOptions& o);

// Declares the flags on `app`; `with_policy` false for compare (it runs every policy).
void add_plan_options(CLI::App& app, PlanOptions& o, bool with_policy = true);

// Where the allowed CPUs come from when --allowed is not given.
enum class AllowedFrom {
  topology,  // a file topology: all its allowed PUs
  affinity,  // this process's affinity (taskset, a cgroup): plan, compare, launch, exec under torchrun
  cgroup,    // the topology's allowed set, which live is the cgroup cpuset: exec under a launcher that
             // may already have pinned each rank to a core or two (srun --cpu-bind, mpirun
             // --bind-to core), so the node's ranks plan over the same set
};

// Builds the Request: flags, the GPU-selection environment of this process, and the allowed
// CPUs. Errors are usage errors.
Result<plan::Request> make_request(const PlanOptions& o, const topo::Topology& t, AllowedFrom from);

}  // namespace gpubind::cli
