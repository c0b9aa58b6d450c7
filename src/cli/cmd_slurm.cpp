// gpubind slurm: helpers for Slurm sites. `gres-conf` writes gres.conf lines for the GPUs.
#include <cctype>
#include <cstdio>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "discover/source.hpp"
#include "render/gres_conf.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

int cmd_slurm(const std::vector<std::string>& args) {
  Args app("Slurm helpers. Usage: gpubind slurm gres-conf [--topology SRC] [--node-name NAME]", "gpubind slurm");
  app.require_subcommand();
  Args& gres = app.subcommand("gres-conf", "Write gres.conf lines (Name=gpu Type= File= Cores= Links=) for the GPUs");
  std::string topology, node_name;
  bool quiet = false;
  add_topology_option(gres, topology);
  add_quiet_option(gres, quiet);
  gres.option("--node-name", node_name, "Prefix every line with NodeName=NAME");
  gres.footer(R"(Examples:
  gpubind slurm gres-conf > /etc/slurm/gres.conf         this node (its last line: the slurm.conf Gres=)
  gpubind slurm gres-conf --topology node.xml --node-name 'gpu[01-64]')");
  if (int rc = app.parse(args); rc >= 0) return rc;
  // A Slurm host list ("gpu[01-64]"): nothing that could end a gres.conf line or start a key.
  for (char c : node_name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("-_.[],").find(c) == std::string_view::npos)
      return fail(Error{"--node-name", "'" + one_line(node_name) + "' is not a Slurm host list (letters, digits, - _ . [ ] ,)",
                        ErrorKind::usage});
  auto topo = acquire_topology({.use = TopologyUse::describe, .flag = topology});
  if (!topo) return fail(topo.error());
  print_warnings(topo->warnings, quiet);
  std::string out = render::gres_conf(*topo, node_name);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gpubind::cli
