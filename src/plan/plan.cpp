#include "plan/plan.hpp"

#include <algorithm>
#include <tuple>

#include "plan/steps.hpp"
#include "topo/binding_env.hpp"
#include "util/strings.hpp"

namespace gpubind::plan {

using topo::Gpu;
using topo::Topology;

const char* to_string(Policy p) {
  switch (p) {
    case Policy::closest: return "closest";
    case Policy::socket_split: return "socket-split";
    case Policy::socket: return "socket";
    case Policy::numa: return "numa";
    case Policy::l3: return "l3";
    case Policy::cpu_only: return "cpu-only";
    case Policy::none: return "none";
  }
  return "?";
}

const char* to_string(MemPolicy m) {
  switch (m) {
    case MemPolicy::preferred: return "preferred";
    case MemPolicy::bind: return "bind";
    case MemPolicy::interleave: return "interleave";
    case MemPolicy::none: return "none";
  }
  return "?";
}

std::optional<Policy> policy_from_string(const std::string& s) {
  for (Policy p : {Policy::closest, Policy::socket_split, Policy::socket, Policy::numa, Policy::l3, Policy::cpu_only, Policy::none})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

std::optional<MemPolicy> mem_policy_from_string(const std::string& s) {
  for (MemPolicy m : {MemPolicy::preferred, MemPolicy::bind, MemPolicy::interleave, MemPolicy::none})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

namespace steps {

// The cores touching `cpus`, whole: --reserve 48 reserves 48 and its SMT sibling 176, so a
// system daemon on 48 never shares its core with a rank.
CpuSet whole_cores(const Topology& t, const CpuSet& cpus) {
  CpuSet out = cpus;
  for (const topo::Core& core : t.cores)
    if (core.pus.intersects(cpus)) out |= core.pus;
  return out;
}

bool locality_known(const std::vector<const Gpu*>& gpus) {
  return !gpus.empty() && std::all_of(gpus.begin(), gpus.end(), [](const Gpu* g) { return g->numa.has_value(); });
}

std::string cpus_text(const CpuSet& s) { return s.empty() ? "(none)" : s.to_list(); }

namespace {

// K GPUs per rank: each rank takes the first free GPU (`seeded`: GPU r, the first `ranks` being
// every rank's first, chosen by spread_gpus) and the K-1 free GPUs closest to it (most NVLink/xGMI
// lanes, then the best PCIe path class, then visible order).
std::vector<std::vector<const Gpu*>> group_gpus(const Topology& t, const std::vector<const Gpu*>& visible, unsigned ranks,
                                                unsigned k, bool seeded) {
  std::vector<std::vector<const Gpu*>> out(ranks);
  std::vector<bool> used(visible.size(), false);
  if (seeded) std::fill(used.begin(), used.begin() + ranks, true);
  for (unsigned r = 0; r < ranks; ++r) {
    size_t first = r;
    if (!seeded) {
      first = 0;
      while (used[first]) ++first;
    }
    used[first] = true;
    out[r].push_back(visible[first]);
    while (out[r].size() < k) {
      size_t best = visible.size();
      auto key = [&](size_t i) {
        const topo::GpuLink* l = topo::find_link(t, visible[first]->pci, visible[i]->pci);
        return std::make_tuple(-int(l ? std::max(1u, l->count) : 0), int(topo::path_class(*visible[first], *visible[i])), i);
      };
      for (size_t i = 0; i < visible.size(); ++i)
        if (!used[i] && (best == visible.size() || key(i) < key(best))) best = i;
      used[best] = true;
      out[r].push_back(visible[best]);
    }
  }
  return out;
}

// --- the request and the plan's steps ------------------------------------------------------

Status check_request(const Topology& t, const Request& req) {
  if (req.ranks && *req.ranks == 0) return Error{"-n", "the number of ranks must be at least 1", ErrorKind::usage};
  if (req.ranks && *req.ranks > 65536) return Error{"-n", "more than 65536 ranks on one node", ErrorKind::usage};
  if (req.gpus_per_rank == 0) return Error{"--gpus-per-rank", "must be at least 1", ErrorKind::usage};
  if (!req.reserve.is_subset_of(t.cpus))
    return Error{"--reserve " + req.reserve.to_list(), "CPUs " + (req.reserve - t.cpus).to_list() + " are not in this machine (" + t.cpus.to_list() + ")", ErrorKind::usage};
  if (req.allowed && !req.allowed->is_subset_of(t.cpus))
    return Error{"--allowed " + req.allowed->to_list(), "CPUs " + (*req.allowed - t.cpus).to_list() + " are not in this machine (" + t.cpus.to_list() + ")", ErrorKind::usage};
  if (req.allowed && req.allowed->empty()) return Error{"--allowed", "the allowed CPU set is empty", ErrorKind::usage};
  if (req.mem_node && !topo::find_numa(t, *req.mem_node))
    return Error{"--mem-node " + std::to_string(*req.mem_node), "no such NUMA node", ErrorKind::usage};
  if (req.mem_on_gpu && req.mem_node)
    return Error{"--mem-on-gpu", "and --mem-node " + std::to_string(*req.mem_node) + " name two memory targets: give one", ErrorKind::usage};
  if (req.mem_on_gpu && std::none_of(t.gpus.begin(), t.gpus.end(), [](const topo::Gpu& g) { return !g.memory_numa.empty(); }))
    return Error{"--mem-on-gpu", "no GPU of this topology has a NUMA node of its own memory (GH200, GB200 without CDMM, POWER9 "
                                 "with NVLink have one; topo's GPU MEMORY column)", ErrorKind::usage};
  if (req.allowed_mems) {
    CpuSet known;
    for (const topo::NumaNode& n : t.numa_nodes) known.set(n.os_index);
    if ((*req.allowed_mems & known).empty())
      return Error{"allowed memory nodes " + req.allowed_mems->to_list(), "none of them is a NUMA node of this machine (" +
                                                                          known.to_list() + ")", ErrorKind::usage};
    if (req.mem_node && !req.allowed_mems->test(*req.mem_node))
      return Error{"--mem-node " + std::to_string(*req.mem_node),
                   "outside the allowed memory nodes " + req.allowed_mems->to_list() + " (cgroup cpuset.mems)", ErrorKind::usage};
  }
  return Ok{};
}

// 0. The request's CPUs: the allowed set minus whole reserved cores, as a core table.
Status prepare(Ctx& c) {
  const Topology& t = c.t;
  const Request& req = c.req;
  c.plan.policy = req.policy;
  c.plan.mem = req.policy == Policy::none ? MemPolicy::none : req.mem;
  c.plan.topology_origin = t.origin;
  if (c.allowed.empty())
    return Error{"--reserve " + req.reserve.to_list(), "every allowed CPU (" + allowed_cpus(t, req).to_list() + ") is reserved", ErrorKind::usage};
  c.cores = make_core_table(t, c.allowed, req.smt);
  if (CpuSet reserve = whole_cores(t, req.reserve); reserve != req.reserve)
    c.plan.explain.push_back("--reserve " + req.reserve.to_list() + " reserves whole cores: " + reserve.to_list());
  c.plan.explain.push_back("allowed CPUs: " + c.allowed.to_list() + " (" + std::to_string(c.cores.slots.size()) + " cores" +
                           (req.smt ? "" : ", one PU per core") + ")");
  return Ok{};
}

void warn_unknown_locality(Ctx& c, const std::vector<const Gpu*>& visible) {
  if (!visible.empty() && !locality_known(visible))
    c.plan.warnings.push_back("GPU locality is unknown (the source gives no NUMA node for the GPUs, as in most VMs): " +
                              std::string(c.plan.ranks.size() == 1 ? "the one rank gets every allowed CPU"
                                                                   : "ranks are spread over packages in GPU order, which may not "
                                                                     "match the hardware"));
}

void name_ranks(Ctx& c, const GpusOfRanks& gpus_of) {
  c.plan.ranks.resize(gpus_of.size());
  for (unsigned r = 0; r < gpus_of.size(); ++r) {
    c.plan.ranks[r].local_rank = r;
    for (const Gpu* g : gpus_of[r]) c.plan.ranks[r].gpus.push_back({g->index, g->pci, g->vendor, g->stack});
  }
}

// 2a. Each rank's GPUs as the launcher chose them (Request::rank_gpus): taken as they are, shared
// or not; a rank given no GPU plans CPU-only.
Result<GpusOfRanks> given_gpus(Ctx& c, const std::vector<const Gpu*>& visible, unsigned ranks) {
  const Request& req = c.req;
  if (req.rank_gpus.size() != ranks)
    return Error{"the ranks' GPUs", std::to_string(req.rank_gpus.size()) + " ranks' GPUs given for " + std::to_string(ranks) + " ranks",
                 ErrorKind::usage};
  GpusOfRanks gpus_of(ranks);
  std::vector<std::string> said;
  for (unsigned r = 0; r < ranks; ++r) {
    for (unsigned pos : req.rank_gpus[r]) {
      if (pos >= visible.size())
        return Error{"rank " + std::to_string(r) + "'s GPUs", "position " + std::to_string(pos) + " of " + std::to_string(visible.size()) +
                                                              " visible GPUs", ErrorKind::usage};
      gpus_of[r].push_back(visible[pos]);
    }
    std::vector<unsigned> idx;
    for (const Gpu* g : gpus_of[r]) idx.push_back(g->index);
    said.push_back(std::to_string(r) + ":" + (idx.empty() ? std::string("-") : join_numbers(idx, "+")));
  }
  c.plan.explain.push_back("each rank's GPUs as the launcher bound them (rank:GPU): " + join(said, " "));
  name_ranks(c, gpus_of);
  warn_unknown_locality(c, visible);
  return gpus_of;
}

// 2. The rank count and each rank's GPUs, from the visible GPUs (in the workers' order).
Result<GpusOfRanks> assign_gpus(Ctx& c, const std::vector<const Gpu*>& visible) {
  const Topology& t = c.t;
  const Request& req = c.req;
  unsigned k = req.gpus_per_rank.value_or(1);
  if (visible.empty()) {
    if (req.require_gpu)
      return Error{"--require-gpu", t.gpus.empty() ? "the topology has no GPUs" : "no GPU is visible", ErrorKind::not_found};
    c.plan.warnings.push_back(!t.gpus.empty()     ? "the environment hides every GPU: CPU-only plan"
                              : t.devices_known ? "the topology has no GPUs: CPU-only plan"
                                                : "the capture holds no PCI devices (gathered without I/O): its GPUs are unknown, "
                                                  "so the plan is CPU-only; gather it with `hwloc-gather-topology --io NAME`");
    if (k > 1) return Error{"--gpus-per-rank " + std::to_string(k), "no GPU is visible", ErrorKind::usage};
  }
  if (!req.rank_gpus.empty()) return given_gpus(c, visible, req.ranks.value_or(unsigned(req.rank_gpus.size())));
  unsigned ranks;
  if (req.ranks) {
    ranks = *req.ranks;
  } else if (!visible.empty()) {
    ranks = unsigned(visible.size()) / k;
    if (ranks == 0)
      return Error{"--gpus-per-rank " + std::to_string(k), "needs " + std::to_string(k) + " GPUs per rank but " +
                                                           std::to_string(visible.size()) + " are visible", ErrorKind::usage};
  } else {
    ranks = std::max<unsigned>(1, unsigned(cpu_numa_nodes(t).size()));
  }
  if (!req.gpus_per_rank && ranks == 1 && visible.size() > 1) {
    k = unsigned(visible.size());
    c.plan.explain.push_back("one rank and " + std::to_string(k) + " visible GPUs: the rank owns every GPU (and so the "
                             "CPUs near all of them); --gpus-per-rank 1 binds it to the first GPU only");
  }
  if (k > 1 && size_t(ranks) * k > visible.size())
    return Error{"--gpus-per-rank " + std::to_string(k), std::to_string(ranks) + " ranks x " + std::to_string(k) + " GPUs need " +
                                                         std::to_string(ranks * k) + " GPUs but " + std::to_string(visible.size()) +
                                                         " are visible", ErrorKind::usage};
  GpusOfRanks gpus_of(ranks);
  if (!visible.empty()) {
    std::vector<const Gpu*> order = spread_gpus(c, visible, ranks, k);
    if (k > 1) {
      gpus_of = group_gpus(t, order, ranks, k, order != visible);
    } else if (ranks <= visible.size()) {
      for (unsigned r = 0; r < ranks; ++r) gpus_of[r] = {order[r]};
    } else {
      // More ranks than GPUs: consecutive ranks share a GPU (rank r -> GPU r*G/R).
      for (unsigned r = 0; r < ranks; ++r) gpus_of[r] = {visible[size_t(r) * visible.size() / ranks]};
      c.plan.warnings.push_back(std::to_string(ranks) + " ranks on " + std::to_string(visible.size()) +
                                " GPUs: consecutive ranks share a GPU; CPUs are still split");
    }
  }
  name_ranks(c, gpus_of);
  warn_unknown_locality(c, visible);

  return gpus_of;
}

// In a Kubernetes pod the allowed CPUs are the pod's cpuset, given by the kubelet's CPU manager
// and its GPUs by a device plugin: GPUs on a node none of those CPUs is on are the kubelet's
// misalignment, which no binding inside the pod can mend.
void pod_alignment(Ctx& c, const GpusOfRanks& gpus_of) {
  if (!c.req.env.count("KUBERNETES_SERVICE_HOST")) return;
  std::vector<std::string> far;
  std::vector<unsigned> far_nodes;
  for (const auto& gpus : gpus_of)
    for (const Gpu* g : gpus) {
      if (!g->numa) continue;
      std::vector<unsigned> nodes = topo::nodes_with_cpus(c.t, *g->numa);
      std::string name = std::to_string(g->index) + " (" + g->pci + ")";
      if (nodes.empty() || topo::cpus_of_nodes(c.t, nodes).intersects(c.allowed) ||
          std::find(far.begin(), far.end(), name) != far.end())
        continue;
      far.push_back(name);
      for (unsigned n : nodes)
        if (std::find(far_nodes.begin(), far_nodes.end(), n) == far_nodes.end()) far_nodes.push_back(n);
    }
  if (far.empty()) return;
  std::vector<unsigned> cpu_nodes = topo::nodes_covering(c.t, c.allowed);
  std::sort(far_nodes.begin(), far_nodes.end());
  c.plan.warnings.push_back("in a Kubernetes pod: its CPUs " + c.allowed.to_list() + " (the pod's cpuset) are on NUMA node(s) " +
                            join_numbers(cpu_nodes) + ", its GPU(s) " + join(far, ", ") + " on node(s) " + join_numbers(far_nodes) +
                            ": the kubelet did not align them (topologyManagerPolicy single-numa-node or restricted refuses such a "
                            "pod; 'gpubind k8s check' on the node says why)");
}

// The score, and what the whole plan must say.
void finish(Ctx& c) {
  c.plan.score = score_plan(c.t, c.plan.ranks, c.allowed);
  if (!c.t.cores_known && c.plan.ranks.size() > 1 && c.req.policy != Policy::none)
    c.plan.warnings.push_back("the topology gives no cores (an NCCL/RCCL file): the ranks' CPUs are disjoint, but some may be "
                              "SMT siblings of one core");
}

}  // namespace

}  // namespace steps

// The plan, step by step; each step is a function in plan.cpp or the file steps.hpp names.
Result<Plan> make_plan(const Topology& t, const Request& req) {
  using namespace steps;
  if (Status s = check_request(t, req); !s) return s.error();
  Ctx c{t, req, usable_cpus(t, req), {}, {}, {}};
  if (Status s = prepare(c); !s) return s.error();
  auto visible = visible_gpus(t, req, c.plan.explain, c.plan.warnings);  // 1. which GPUs the workers see
  if (!visible) return visible.error();
  auto gpus_of = assign_gpus(c, visible->gpus);  // 2. ranks and their GPUs (FLAT stacks live in visible->stacks)
  if (!gpus_of) return gpus_of.error();
  assign_cpus(c, *gpus_of, !visible->gpus.empty());  // 3. CPUs
  for (size_t r = 0; r < c.plan.ranks.size(); ++r) assign_memory(c, c.plan.ranks[r], (*gpus_of)[r]);  // 4. memory
  assign_nics(c, *gpus_of);         // 5. NICs
  assign_environment(c, *gpus_of);  // 6. environment
  pod_alignment(c, *gpus_of);
  finish(c);
  return c.plan;
}

bool is_pool_size_env(std::string_view name) {
  return std::any_of(std::begin(kPoolSizeEnv), std::end(kPoolSizeEnv), [&](const char* n) { return name == n; });
}

bool is_user_kept_env(std::string_view name) { return is_pool_size_env(name) || name == kNcclProxyCpusetEnv; }

std::vector<std::string> user_kept_env_names() {
  std::vector<std::string> names(std::begin(kPoolSizeEnv), std::end(kPoolSizeEnv));
  names.push_back(kNcclProxyCpusetEnv);
  return names;
}

std::vector<std::pair<std::string, std::string>> rank_environment(const Plan& p, const RankBinding& rb) {
  std::vector<std::string> gpus;
  for (const GpuRef& g : rb.gpus) gpus.push_back(g.pci);
  std::vector<std::pair<std::string, std::string>> env = {
      {topo::binding_env::kLocalRank, std::to_string(rb.local_rank)},
      {topo::binding_env::kGpu, join(gpus, ",")},
      {topo::binding_env::kCpus, rb.cpus.to_list()},
      {topo::binding_env::kMem, join_numbers(rb.mem_nodes)},
      {topo::binding_env::kMemPolicy, to_string(rb.mem_policy)},
      {topo::binding_env::kPolicy, to_string(p.policy)},
  };
  env.insert(env.end(), rb.env.begin(), rb.env.end());
  return env;
}

std::vector<std::string> warnings_for_rank(const Plan& p, unsigned rank) {
  std::vector<std::string> out;
  std::string own = "rank " + std::to_string(rank) + ": ";
  for (const std::string& w : p.warnings)
    if (!w.starts_with("rank ") || w.starts_with(own)) out.push_back(w);
  return out;
}

}  // namespace gpubind::plan
