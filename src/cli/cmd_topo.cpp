// gpubind topo: discover a topology and print it.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "render/json_text.hpp"
#include "render/hwloc_xml.hpp"
#include "discover/source.hpp"
#include "render/topo_text.hpp"
#include "topo/json.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

int cmd_topo(const std::vector<std::string>& args) {
  Args app("Show the machine's sockets, NUMA nodes, L3 domains, cores, GPUs and NICs, their locality and "
           "the PCIe/NVLink path class between devices.",
           "gpubind topo");
  std::string topology;
  std::string format = "table";
  bool json = false, quiet = false;
  add_topology_option(app, topology);
  add_quiet_option(app, quiet);
  app.option("--format", format, "table (per NUMA node), matrix (like nvidia-smi topo -m), json, xml (hwloc 2 XML)")
      .one_of({"table", "matrix", "json", "xml"});
  app.flag("--json", json, "Same as --format json");
  app.footer(R"(Examples:
  gpubind topo                                  this machine: NUMA nodes, GPUs, NICs
  gpubind topo --format matrix                  GPU/NIC matrix like nvidia-smi topo -m
  gpubind topo --topology node.xml --json       a captured hwloc XML (lstopo --of xml), as JSON
  gpubind topo --topology example:dgx-h100      a machine built into gpubind)");
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (json) format = "json";

  auto topo = discover::load_topology(topology_source(topology));
  if (!topo) return fail(topo.error(), kExitFailure);
  print_warnings(topo->warnings, quiet);

  std::string out;
  if (format == "table") out = render::topo_table(*topo);
  else if (format == "matrix") out = render::topo_matrix(*topo);
  else if (format == "json") out = render::json_text(topo::to_json(*topo));
  else out = render::to_hwloc_xml(*topo);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gpubind::cli
