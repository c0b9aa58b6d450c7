// gpubind compare: the same job under several binding strategies, side by side.
#include <cstdio>
#include <map>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "plan/peers.hpp"
#include "discover/source.hpp"
#include "render/plan_render.hpp"
#include "render/table.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

namespace {

struct Strategy {
  const char* name;
  const char* what;
  plan::Policy policy;
};

const Strategy kStrategies[] = {
    {"kernel-default", "no binding: the scheduler may run any rank anywhere", plan::Policy::none},
    {"cpu-only", "GPU-unaware contiguous blocks from CPU 0 (DeepSpeed-style)", plan::Policy::cpu_only},
    {"numa", "the GPU's whole NUMA node, shared by its ranks", plan::Policy::numa},
    {"socket", "the GPU's whole package, shared by its ranks", plan::Policy::socket},
    {"closest", "gpubind: disjoint L3-aligned cores on the GPU's node, memory and NIC nearest", plan::Policy::closest},
    {"socket-split", "gpubind: every core of the GPU's package, disjoint, the GPU's node first", plan::Policy::socket_split},
};

struct Peer {
  plan::Peer peer;
  const char* what;
};

const Peer kPeers[] = {
    {plan::Peer::torchrun_exclusive, "torchrun --numa-binding=exclusive: the node's cores split among its GPUs"},
    {plan::Peer::torchrun_core_complex, "torchrun --numa-binding=core-complex: one L3 group per GPU, shared when fewer"},
    {plan::Peer::gpu_affinity_socket, "NVIDIA gpu_affinity socket_unique_contiguous: the socket split evenly"},
    {plan::Peer::slurm_block, "srun -m block:block --cpu-bind=cores --gpu-bind=single:1: cores in order, GPU follows"},
    {plan::Peer::slurm_cyclic, "srun -m block:cyclic (default) --cpu-bind=cores --gpu-bind=single:1: sockets in turn"},
};

std::string nic_summary(const plan::Score& s) {
  std::map<std::string, unsigned> count;
  for (const auto& c : s.nic_path) count[c ? topo::to_string(*c) : "none"]++;
  std::string out;
  for (const char* k : {"PIX", "PXB", "PHB", "NODE", "SYS", "none"})
    if (count.count(k)) out += (out.empty() ? "" : " ") + std::to_string(count[k]) + "x" + k;
  return out.empty() ? "-" : out;
}

}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  CLI::App app("Score the same job under the kernel default, GPU-unaware pinning, NUMA and socket binding, and gpubind's "
               "closest policy.",
               "gpubind compare");
  PlanOptions o;
  bool json = false;
  add_topology_option(app, o.topology);
  add_plan_options(app, o, false);
  app.add_flag("--json", json, "JSON output");
  app.footer(R"(Examples:
  gpubind compare                               this machine, one rank per GPU
  gpubind compare --topology example:dgx-a100-nps4 --json)");
  if (int rc = parse(app, args); rc >= 0) return rc;

  std::string source = topology_source(o.topology);
  auto topo = discover::load_topology(source);
  if (!topo) return fail(topo.error(), kExitFailure);
  auto req = make_request(o, *topo, source.empty() ? AllowedFrom::affinity : AllowedFrom::topology);
  if (!req) return fail(req.error(), kExitUsage);

  nlohmann::ordered_json j;
  j["schema_version"] = render::kPlanSchemaVersion;
  j["topology"] = topo->origin;
  j["strategies"] = nlohmann::ordered_json::array();
  render::TextTable t({"STRATEGY", "CPU LOCALITY", "MEM LOCALITY", "OVERLAP", "IDLE", "CORES/RANK", "NIC PATH"});
  std::vector<std::string> warnings;
  size_t ranks = 0;
  auto add_row = [&](const std::string& name, const std::string& what, const plan::Plan& p, bool has_nics) {
    const plan::Score& sc = p.score;
    t.add({name, render::format_share(sc.cpu_locality), render::format_share(sc.mem_locality),
           std::to_string(sc.overlap_cpus) + (sc.cores_known ? " CPUs" : " CPUs?"), std::to_string(sc.idle_cpus) + " CPUs",
           std::to_string(sc.min_cores) + "-" + std::to_string(sc.max_cores), has_nics ? nic_summary(sc) : "-"});
    nlohmann::ordered_json e;
    e["strategy"] = name;
    e["description"] = what;
    e["score"] = render::plan_json(p, false)["score"];
    j["strategies"].push_back(e);
  };
  for (const Strategy& s : kStrategies) {
    plan::Request r = *req;
    r.policy = s.policy;
    auto p = plan::make_plan(*topo, r);
    if (!p) return fail(p.error(), kExitUsage);
    ranks = p->ranks.size();
    if (warnings.empty()) warnings = p->warnings;
    add_row(s.name, s.what, *p, true);
  }
  // The peers' own rules on the same machine; a peer that cannot plan it says why, as it would fail.
  std::vector<std::string> peer_notes;
  for (const Peer& peer : kPeers) {
    auto b = plan::peer_bindings(*topo, *req, peer.peer);
    if (!b) {
      t.add({plan::to_string(peer.peer), "n/a", "n/a", "-", "-", "-", "-"});
      peer_notes.push_back(std::string(plan::to_string(peer.peer)) + ": cannot plan this: " + b.error().why);
      nlohmann::ordered_json e;
      e["strategy"] = plan::to_string(peer.peer);
      e["description"] = peer.what;
      e["score"] = nullptr;
      e["error"] = b.error().why;
      j["strategies"].push_back(e);
      continue;
    }
    plan::Plan p;
    p.policy = plan::Policy::none;
    p.mem = plan::MemPolicy::none;
    p.ranks = *b;
    p.score = plan::score_plan(*topo, p.ranks, plan::usable_cpus(*topo, *req));
    add_row(plan::to_string(peer.peer), peer.what, p, false);
  }
  j["warnings"] = warnings;
  print_warnings(warnings, o.quiet);
  if (json) {
    std::fputs(json_text(j).c_str(), stdout);
    return kExitOk;
  }
  std::printf("Compare: %zu rank(s) on %s\n\n%s", ranks, topo->origin.c_str(), t.str().c_str());
  std::printf("\n");
  for (const Strategy& s : kStrategies) std::printf("  %-21s %s\n", s.name, s.what);
  for (const Peer& p : kPeers) std::printf("  %-21s %s\n", plan::to_string(p.peer), p.what);
  for (const std::string& n : peer_notes) std::printf("  %s\n", n.c_str());
  std::printf("\n  cpu locality: share of the ranks' CPUs on their GPU's NUMA node; memory locality: share of\n"
              "  memory placed there; overlap: CPUs given to more than one rank; idle: allowed CPUs no rank got.\n");
  return kExitOk;
}

}  // namespace gpubind::cli
