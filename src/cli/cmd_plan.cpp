// gpubind plan: which GPU, CPUs, memory nodes and NIC each local rank gets.
#include <cstdio>

#include "bind/hostlist.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "render/json_text.hpp"
#include "cli/plan_options.hpp"
#include "discover/source.hpp"
#include "render/node_svg.hpp"
#include "render/plan_render.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

int cmd_plan(const std::vector<std::string>& args) {
  Args app("Plan the binding of every local rank: GPU(s), CPU set, memory node(s), NIC and environment.",
           "gpubind plan");
  PlanOptions o;
  std::string format = "table";
  bool json = false, explain = false, gpu_runtime = false;
  std::optional<unsigned> rank;
  add_topology_option(app, o.topology);
  add_plan_options(app, o);
  std::string hosts;
  app.option("--format", format,
             "table, json, env (shell exports for --rank), slurm (srun flags), rankfile (Open MPI 4, physical CPUs), "
             "rankfile-logical (Open MPI 5), numactl, svg (the node drawn with each rank in its colour)")
      .one_of({"table", "json", "env", "slurm", "rankfile", "rankfile-logical", "numactl", "svg"});
  app.option("--hosts", hosts, "Rankfile hosts, a Slurm host list (node[01-04]): the node's plan on each (default: this host)");
  app.flag("--json", json, "Same as --format json");
  app.flag("--gpu-runtime", gpu_runtime,
           "The --topology file describes this machine: where CUDA_VISIBLE_DEVICES (NVIDIA_, ROCR_, HIP_VISIBLE_DEVICES) names GPUs by "
           "UUID and the file has none, take them from this machine's NVML / ROCm SMI (automatic for this machine)");
  app.option("--rank", rank, "Local rank for --format env");
  app.flag("--explain", explain, "Show every step of the GPU resolution and the CPU choice");
  app.footer(R"(Examples:
  gpubind plan                                  one rank per visible GPU on this machine
  gpubind plan --topology node.xml -n 16 --explain
  gpubind plan --format slurm                   srun --cpu-bind/--gpu-bind/--mem-bind flags
  gpubind plan --format rankfile --hosts 'gpu[01-04]'   an Open MPI 4 rankfile for four nodes
  gpubind plan --format env --rank 3 --nic-env  shell exports for local rank 3)");
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (json) format = "json";
  if (format == "env" && !rank) return fail(Error{"--format env", "needs --rank R (which local rank to print)", ErrorKind::usage});

  std::string source = topology_source(o.topology);
  auto topo = discover::load_topology(source);
  if (!topo) return fail(topo.error());
  if (source.empty() || gpu_runtime) add_runtime_identity(*topo, o.quiet, true);  // this machine's GPUs by UUID
  auto req = make_request(o, *topo, source.empty() ? AllowedFrom::affinity : AllowedFrom::topology);
  if (!req) return fail(req.error());
  auto plan = plan::make_plan(*topo, *req);
  // A request the machine cannot satisfy is a usage error; no GPU where one is required is not.
  if (!plan) return fail(plan.error());
  if (rank && *rank >= plan->ranks.size())
    return fail(Error{"--rank " + std::to_string(*rank), "the plan has ranks 0-" + std::to_string(plan->ranks.size() - 1), ErrorKind::usage});

  print_warnings(plan->warnings, o.quiet);
  std::string out;
  if (format == "table") out = render::plan_table(*plan, explain);
  else if (format == "json") out = render::json_text(render::plan_json(*plan, explain));
  else if (format == "env") out = render::plan_env(*plan, *rank);
  else if (format == "slurm") out = render::plan_slurm(*plan);
  else if (format == "svg") out = render::plan_svg(*topo, *plan);
  else if (format == "rankfile" || format == "rankfile-logical") {
    std::vector<std::string> host_list = {topo->hostname.empty() ? "localhost" : topo->hostname};
    if (!hosts.empty()) {
      auto h = bind::expand_hosts(hosts);
      if (!h) return fail(Error{"--hosts", h.error().message(), ErrorKind::usage});
      host_list = *h;
    }
    out = render::plan_rankfile(*plan, *topo, host_list, format == "rankfile-logical");
  }
  else out = render::plan_numactl(*plan);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (explain && format != "table" && format != "json")
    for (const std::string& e : plan->explain) std::fprintf(stderr, "explain: %s\n", e.c_str());
  return kExitOk;
}

}  // namespace gpubind::cli
