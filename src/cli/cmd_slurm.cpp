// gpubind slurm: helpers for Slurm sites. `gres-conf` writes gres.conf lines for the GPUs.
#include <cctype>
#include <cstdio>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "discover/source.hpp"
#include "plan/slurm_node.hpp"
#include "render/gres_conf.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

struct TargetSlurm {
  plan::SlurmVersion version;
  std::string from;  // how it was learnt, for the file's first line
};

// The release the lines are for: --slurm-version, else what this host's slurmd says it is, else
// the newest known (a host without slurmd writes for a cluster it cannot ask).
Result<TargetSlurm> target_slurm(const std::string& flag) {
  if (!flag.empty()) {
    auto v = plan::parse_slurm_version(flag);
    if (!v) return v.error();
    return TargetSlurm{*v, "--slurm-version"};
  }
  if (auto installed = installed_slurm())
    if (auto v = plan::parse_slurm_version(installed->version)) return TargetSlurm{*v, installed->from};
  return TargetSlurm{plan::newest_slurm(), "the newest gpubind knows: no slurmd here, --slurm-version names another"};
}

}  // namespace

int cmd_slurm(const std::vector<std::string>& args) {
  Args app("Slurm helpers. Usage: gpubind slurm gres-conf [--topology SRC] [--node-name NAME] [--slurm-version X.Y]", "gpubind slurm");
  app.require_subcommand();
  Args& gres = app.subcommand("gres-conf", "Write gres.conf lines (Name=gpu Type= File= Cores= Links=) for the GPUs");
  std::string topology, node_name, slurm_version;
  bool quiet = false;
  add_topology_option(gres, topology);
  add_quiet_option(gres, quiet);
  gres.option("--node-name", node_name, "Prefix every line with NodeName=NAME");
  gres.option("--slurm-version", slurm_version,
              "The Slurm release the lines are for (24.11, 25.11.4; default: this host's slurmd -V, else the newest known). From "
              "24.11 a GPU's Cores= must be whole sockets: the node's socket definition is chosen to make them so");
  gres.footer(R"(Examples:
  gpubind slurm gres-conf > /etc/slurm/gres.conf         this node (its last lines: the slurm.conf node definition)
  gpubind slurm gres-conf --topology node.xml --node-name 'gpu[01-64]' --slurm-version 25.11)");
  if (int rc = app.parse(args); rc >= 0) return rc;
  // A Slurm host list ("gpu[01-64]"): nothing that could end a gres.conf line or start a key.
  for (char c : node_name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("-_.[],").find(c) == std::string_view::npos)
      return fail(Error{"--node-name", "'" + one_line(node_name) + "' is not a Slurm host list (letters, digits, - _ . [ ] ,)",
                        ErrorKind::usage});
  auto target = target_slurm(slurm_version);
  if (!target) return fail(target.error());
  auto topo = acquire_topology({.use = TopologyUse::describe, .flag = topology});
  if (!topo) return fail(topo.error());
  plan::SlurmNodePlan plan = plan::plan_slurm_node(*topo, target->version);
  std::vector<std::string> warnings = topo->warnings;
  if (!plan.no_cores.empty())
    warnings.push_back("slurm gres-conf: no GPU gets Cores= for Slurm " + plan.version.text() + ": " + plan.no_cores);
  if (unsigned n = plan.widened_cores())
    warnings.push_back("slurm gres-conf: Slurm " + plan.version.text() + " takes no GPU's own cores as they are: " + std::to_string(n) +
                       " more cores named in Cores= (the file says which)");
  print_warnings(warnings, quiet);
  std::string out = render::gres_conf(*topo, node_name, plan, target->from);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gpubind::cli
