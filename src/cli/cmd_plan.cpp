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
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

struct PlanFlags {
  PlanOptions o;
  std::string format = "table", hosts;
  bool json = false, explain = false, gpu_runtime = false, no_config = false;
  std::optional<unsigned> rank;
};

void add_plan_flags(Args& app, PlanFlags& f) {
  add_topology_option(app, f.o.topology);
  add_plan_options(app, f.o);
  app.option("--format", f.format,
             "table, json, env (shell exports for --rank), slurm (srun flags), rankfile (Open MPI 4, physical CPUs), "
             "rankfile-logical (Open MPI 5), numactl, svg (the node drawn with each rank in its colour)")
      .one_of({"table", "json", "env", "slurm", "rankfile", "rankfile-logical", "numactl", "svg"});
  app.option("--hosts", f.hosts, "Rankfile hosts, a Slurm host list (node[01-04]): the node's plan on each (default: this host)");
  app.flag("--json", f.json, "Same as --format json");
  app.same_as("--json", "--format", "json");
  app.flag("--gpu-runtime", f.gpu_runtime,
           "The --topology file describes this machine: where CUDA_VISIBLE_DEVICES (NVIDIA_, ROCR_, HIP_VISIBLE_DEVICES) names GPUs by "
           "UUID and the file has none, take them from this machine's NVML / ROCm SMI (automatic for this machine)");
  app.option("--rank", f.rank, "Local rank for --format env");
  app.flag("--no-config", f.no_config,
           "Ignore gpubind.conf ($GPUBIND_CONFIG, else /etc/gpubind.conf), whose policy, mem and reserve exec, launch and "
           "the SPANK plugin apply (default: plan applies them too, and says so)");
  app.flag("--explain", f.explain, "Show every step of the GPU resolution and the CPU choice");
  app.footer(R"(Examples:
  gpubind plan                                  one rank per visible GPU on this machine
  gpubind plan --topology node.xml -n 16 --explain
  gpubind plan --format slurm                   srun --cpu-bind/--gpu-bind/--mem-bind flags
  gpubind plan --format rankfile --hosts 'gpu[01-04]'   an Open MPI 4 rankfile for four nodes
  gpubind plan --format env --rank 3 --nic-env  shell exports for local rank 3)");
}

Result<std::string> render_plan(const plan::Plan& plan, const topo::Topology& t, const PlanFlags& f) {
  const std::string& format = f.format;
  if (format == "table") return render::plan_table(plan, f.explain);
  if (format == "json") return render::json_text(render::plan_json(plan, f.explain));
  if (format == "env") return render::plan_env(plan, *f.rank);
  if (format == "slurm") return render::plan_slurm(plan);
  if (format == "svg") return render::plan_svg(t, plan);
  if (format == "numactl") return render::plan_numactl(plan);
  std::vector<std::string> host_list = {t.hostname.empty() ? "localhost" : t.hostname};
  if (!f.hosts.empty()) {
    auto h = bind::expand_hosts(f.hosts);
    if (!h) return Error{"--hosts", h.error().message(), ErrorKind::usage};
    host_list = *h;
  }
  return render::plan_rankfile(plan, t, host_list, format == "rankfile-logical");
}

// The site's gpubind.conf, as exec, launch and the plugin apply it: plan previews what they bind.
Status site_config(const Args& app, PlanFlags& f) {
  if (f.no_config) return Ok{};
  auto cfg = load_config();
  if (!cfg) return cfg.error();
  std::vector<std::string> taken = apply_config(app, *cfg, f.o);
  std::vector<std::string> notes;
  if (!taken.empty()) notes.push_back("from " + cfg->path + ": " + join(taken, ", ") + " (as exec, launch and the plugin apply it; --no-config ignores it)");
  if (!cfg->binding) notes.push_back("binding = off in " + cfg->path + ": exec, launch and the plugin bind nothing; this is the plan they would apply with it on");
  if (!f.o.quiet)
    for (const std::string& n : notes) std::fprintf(stderr, "gpubind: note: %s\n", n.c_str());
  return Ok{};
}

// What a format cannot carry as planned: srun's prefer takes one memory node, and formats without
// an environment cannot tell the ranks which GPUs gpubind chose for them.
void format_warnings(const plan::Plan& plan, const PlanFlags& f) {
  if (f.format == "slurm") print_warnings(render::plan_slurm_notes(plan), f.o.quiet);
  if (plan.visible_env.empty() || f.format == "table" || f.format == "json" || f.format == "env" || f.format == "svg" ||
      f.format == "slurm")  // --gpu-bind=map_gpu gives each task its GPU
    return;
  print_warnings({"fewer ranks than GPUs: the ranks take GPUs spread over the node; give every rank " +
                  render::env_words(plan.visible_env) + " (mpirun -x, srun --export=ALL,...), or plan with --no-spread-gpus"},
                 f.o.quiet);
}

}  // namespace

int cmd_plan(const std::vector<std::string>& args) {
  Args app("Plan the binding of every local rank: GPU(s), CPU set, memory node(s), NIC and environment.",
           "gpubind plan");
  PlanFlags f;
  add_plan_flags(app, f);
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (f.json) f.format = "json";
  if (Status s = site_config(app, f); !s) return fail(s.error());
  if (f.format == "env" && !f.rank) return fail(Error{"--format env", "needs --rank R (which local rank to print)", ErrorKind::usage});
  std::string source = topology_source(f.o.topology);
  auto topo = acquire_topology({.use = TopologyUse::describe, .flag = f.o.topology});
  if (!topo) return fail(topo.error());
  if (source.empty() || f.gpu_runtime) add_runtime_identity(*topo, f.o.quiet, true);  // this machine's GPUs by UUID
  auto req = make_request(f.o, *topo, source.empty() ? AllowedFrom::affinity : AllowedFrom::topology);
  if (!req) return fail(req.error());
  auto plan = plan::make_plan(*topo, *req);
  if (!plan) return fail(plan.error());
  if (f.rank && *f.rank >= plan->ranks.size())
    return fail(Error{"--rank " + std::to_string(*f.rank), "the plan has ranks 0-" + std::to_string(plan->ranks.size() - 1), ErrorKind::usage});
  print_warnings(plan->warnings, f.o.quiet);
  format_warnings(*plan, f);
  auto out = render_plan(*plan, *topo, f);
  if (!out) return fail(out.error());
  std::fwrite(out->data(), 1, out->size(), stdout);
  if (f.explain && f.format != "table" && f.format != "json")
    for (const std::string& e : plan->explain) std::fprintf(stderr, "explain: %s\n", e.c_str());
  return kExitOk;
}

}  // namespace gpubind::cli
