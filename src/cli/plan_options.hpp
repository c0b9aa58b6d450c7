#pragma once
// The planning flags shared by `plan`, `compare`, `exec` and `launch`: declared once,
// turned into a plan::Request once.
#include <optional>
#include <string>

#include "bind/config.hpp"
#include "bind/request.hpp"
#include "cli/args.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::cli {

// The shared planning options (bind/request.hpp) and the CLI's own: the topology source and
// --quiet.
struct PlanOptions : bind::PlanOptions {
  std::string topology;
  bool quiet = false;  // no warnings on stderr
};

using bind::AllowedFrom;

// gpubind.conf for exec and launch: $GPUBIND_CONFIG (which must exist) or /etc/gpubind.conf
// (which may be missing: the defaults).
Result<bind::Config> load_config();

// Fills what the user did not give on the command line (--policy, --mem, --reserve) from the
// configuration file. Returns the settings it took ("reserve = 56"), for plan to say.
std::vector<std::string> apply_config(const Args& app, const bind::Config& cfg, PlanOptions& o);

// --policy with its choices (check --nccl-log plans with it alone).
void add_policy_option(Args& app, std::string& policy);

// --policy and --mem with their choices, for the commands that plan with a few flags only
// (rebind); `mem_help` words what the memory policy does there.
void add_policy_and_mem_options(Args& app, bind::PlanOptions& o, const std::string& mem_help);

// Declares the flags on `app`; `with_policy` false for compare (it runs every policy).
void add_plan_options(Args& app, PlanOptions& o, bool with_policy = true);

// Builds the Request (bind::make_request) with this process's GPU-selection environment and,
// unless from == topology, what it may use (probe::this_process_allowance). Errors are usage
// errors, or the live reads'.
Result<plan::Request> make_request(const PlanOptions& o, const topo::Topology& t, AllowedFrom from);

}  // namespace gpubind::cli
