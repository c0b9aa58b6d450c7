// gpubind compare: the same job under several binding strategies, side by side.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/source.hpp"
#include "plan/compare.hpp"
#include "render/compare_render.hpp"
#include "render/json_text.hpp"
#include "render/node_svg.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

int cmd_compare(const std::vector<std::string>& args) {
  Args app("Score the same job under the kernel default, GPU-unaware pinning, NUMA and socket binding, and gpubind's "
           "closest policy.",
           "gpubind compare");
  PlanOptions o;
  bool json = false;
  std::string format = "table";
  add_topology_option(app, o.topology);
  add_plan_options(app, o, false);
  app.flag("--json", json, "JSON output (same as --format json)");
  app.same_as("--json", "--format", "json");
  app.option("--format", format, "table, json, svg (each strategy's plan drawn small, side by side)").one_of({"table", "json", "svg"});
  app.footer(R"(Examples:
  gpubind compare                               this machine, one rank per GPU
  gpubind compare --topology example:dgx-a100-nps4 --json)");
  if (int rc = app.parse(args); rc >= 0) return rc;

  std::string source = topology_source(o.topology);
  auto topo = acquire_topology({.use = TopologyUse::describe, .flag = o.topology});
  if (!topo) return fail(topo.error());
  auto req = make_request(o, *topo, source.empty() ? AllowedFrom::affinity : AllowedFrom::topology);
  if (!req) return fail(req.error());

  auto comparison = plan::compare_strategies(*topo, *req);
  if (!comparison) return fail(comparison.error());
  print_warnings(comparison->warnings, o.quiet);
  if (json) format = "json";
  std::string out = format == "json"  ? render::json_text(render::compare_json(*comparison))
                    : format == "svg" ? render::compare_svg(*topo, *comparison)
                                      : render::compare_text(*comparison);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gpubind::cli
