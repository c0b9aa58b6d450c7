#include "cli/plan_options.hpp"

#include "cli/common.hpp"
#include "probe/probe.hpp"
#include "sys/environment.hpp"

namespace gpubind::cli {

void add_policy_option(Args& app, std::string& policy) {
  app.option("--policy", policy, "closest (default), socket-split, socket, numa, l3, cpu-only (GPU-unaware), none")
      .one_of({"closest", "socket-split", "socket", "numa", "l3", "cpu-only", "none"});
}

namespace {
void add_mem(Args& app, std::string& mem, const std::string& help) {
  app.option("--mem", mem, help).one_of({"preferred", "bind", "interleave", "none"});
}
}  // namespace

void add_policy_and_mem_options(Args& app, bind::PlanOptions& o, const std::string& mem_help) {
  add_policy_option(app, o.policy);
  add_mem(app, o.mem, mem_help);
}

void add_plan_options(Args& app, PlanOptions& o, bool with_policy) {
  app.option("-n,--ranks", o.ranks, "Local ranks (default: visible GPUs / --gpus-per-rank)");
  app.option("--gpus-per-rank", o.gpus_per_rank, "GPUs per rank, chosen close to each other (default 1; a single rank gets every visible GPU)");
  if (with_policy) add_policy_option(app, o.policy);
  app.flag("--no-smt,!--smt", o.no_smt, "One PU per core (default: all SMT siblings of a chosen core)");
  app.option("--reserve", o.reserve, "CPUs never to use (cpulist)");
  app.option("--allowed", o.allowed, "Allowed CPUs (cpulist; default: this process's affinity, or all for a file)");
  add_mem(app, o.mem, "Memory policy: preferred (default), bind, interleave, none");
  app.option("--allowed-mems", o.allowed_mems,
             "Allowed memory nodes (list; default: this process's cpuset.mems live, all nodes for a file)");
  app.option("--mem-node", o.mem_node, "Memory node to use instead of the GPU's (may be CPU-less: HBM, CXL)");
  app.flag("--mem-on-gpu", o.mem_on_gpu,
           "Each rank's memory on its GPU's own NUMA node, where the driver onlined GPU memory as one (GH200, POWER9 "
           "with NVLink; topo's GPU MEMORY column)");
  app.flag("--nic-env", o.nic_env, "Export NCCL_IB_HCA / UCX_NET_DEVICES for the rank's NIC");
  app.flag("--isolate-gpus", o.isolate_gpus, "Export CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES per rank");
  app.flag("--no-spread-gpus", o.no_spread_gpus,
           "Fewer ranks than GPUs: rank r on visible GPU r (default: GPUs spread over packages and NUMA nodes, exported "
           "as the workers' visible list, unless CUDA_VISIBLE_DEVICES or the like already fixed them)");
  app.flag("--omp", o.omp, "Export OMP_PLACES=cores and OMP_PROC_BIND=close");
  app.flag("--nccl-proxy-cpus", o.nccl_proxy_cpus,
           "Export NCCL_PROXY_CPUSET (NCCL 2.28+): the rank's last core, for NCCL's proxy thread (a user's value is kept)");
  app.flag("--balanced", o.balanced, "Give every rank the same core count, leaving leftover cores idle");
  app.flag("--require-gpu", o.require_gpu, "Fail when no GPU is visible instead of planning CPU-only");
  add_quiet_option(app, o.quiet);
}

Result<bind::Config> load_config() {
  std::string named = sys::env_value("GPUBIND_CONFIG").value_or("");
  return bind::read_config(named.empty() ? bind::kDefaultConfigPath : named, !named.empty());
}

std::vector<std::string> apply_config(const Args& app, const bind::Config& cfg, PlanOptions& o) {
  bind::GivenExplicitly given{app.count("--policy") > 0, app.count("--mem") > 0, app.count("--reserve") > 0};
  bind::apply_config(cfg, o, given);
  std::vector<std::string> taken;
  if (cfg.policy && !given.policy) taken.push_back("policy = " + *cfg.policy);
  if (cfg.mem && !given.mem) taken.push_back("mem = " + *cfg.mem);
  if (cfg.reserve && !given.reserve) taken.push_back("reserve = " + *cfg.reserve);
  return taken;
}

Result<plan::Request> make_request(const PlanOptions& o, const topo::Topology& t, AllowedFrom from) {
  auto env = environment_of(plan::gpu_env_names());
  probe::ProcessAllowance live;
  if (from != AllowedFrom::topology) {
    auto a = probe::this_process_allowance(t, env);
    if (!a) return a.error();
    live = std::move(*a);
  }
  return bind::make_request(o, t, from, std::move(env), live);
}

}  // namespace gpubind::cli
