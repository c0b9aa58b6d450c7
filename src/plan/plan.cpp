#include "plan/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "plan/cpu_split.hpp"
#include "plan/crowded.hpp"
#include "plan/socket_split.hpp"
#include "topo/binding_env.hpp"
#include "util/strings.hpp"

namespace gpubind::plan {

using topo::Gpu;
using topo::Nic;
using topo::PathClass;
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

namespace {

// The cores touching `cpus`, whole: --reserve 48 reserves 48 and its SMT sibling 176, so a
// system daemon on 48 never shares its core with a rank.
CpuSet whole_cores(const Topology& t, const CpuSet& cpus) {
  CpuSet out = cpus;
  for (const topo::Core& core : t.cores)
    if (core.pus.intersects(cpus)) out |= core.pus;
  return out;
}

// Everything the steps below share.
struct Ctx {
  const Topology& t;
  const Request& req;
  CpuSet allowed;                   // usable PUs: caller's allowed set minus --reserve
  CoreTable cores;
  Plan plan;
};

// NUMA nodes whose CPUs the set touches.
std::vector<unsigned> nodes_covering(const Topology& t, const CpuSet& cpus) {
  std::vector<unsigned> out;
  for (const topo::NumaNode& n : t.numa_nodes)
    if (n.cpus.intersects(cpus)) out.push_back(n.os_index);
  return out;
}

bool locality_known(const std::vector<const Gpu*>& gpus) {
  return !gpus.empty() && std::all_of(gpus.begin(), gpus.end(), [](const Gpu* g) { return g->numa.has_value(); });
}

std::string cpus_text(const CpuSet& s) { return s.empty() ? "(none)" : s.to_list(); }


// --- GPUs per rank -------------------------------------------------------------------------

// K GPUs per rank: each rank takes the first free GPU and the K-1 free GPUs closest to it
// (most NVLink/xGMI lanes, then the best PCIe path class, then visible order).
std::vector<std::vector<const Gpu*>> group_gpus(const Topology& t, const std::vector<const Gpu*>& visible, unsigned ranks,
                                                unsigned k) {
  std::vector<std::vector<const Gpu*>> out(ranks);
  std::vector<bool> used(visible.size(), false);
  for (unsigned r = 0; r < ranks; ++r) {
    size_t first = 0;
    while (used[first]) ++first;
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

// --- CPU domains ---------------------------------------------------------------------------

// The CPUs near one GPU under a policy: the GPU's own locality (closest, l3: an L3 domain on
// Frontier-type nodes, a NUMA node or package elsewhere), its NUMA node(s) (numa), or the
// package(s) holding them (socket).
CpuSet gpu_locality(const Topology& t, const Gpu& g, Policy policy) {
  CpuSet node = topo::cpus_of_nodes(t, *g.numa);
  if (policy == Policy::numa) return node;
  if (policy == Policy::socket) {
    CpuSet pkg;
    for (const topo::Package& p : t.packages)
      if (p.cpus.intersects(node) || (g.cpus && p.cpus.intersects(*g.cpus))) pkg |= p.cpus;
    return pkg.empty() ? node : pkg;
  }
  return g.cpus && !g.cpus->empty() ? *g.cpus : node;
}

// The CPUs a rank should run on before splitting: its GPU's locality, or a documented fallback.
CpuSet target_domain(Ctx& c, unsigned rank, const std::vector<const Gpu*>& gpus, RankBinding& rb) {
  const Topology& t = c.t;
  CpuSet domain;
  if (!locality_known(gpus)) {
    // Unknown locality (VM, numa_node -1): spread ranks over packages in GPU order.
    std::vector<CpuSet> places;
    for (const topo::Package& p : t.packages)
      if (p.cpus.intersects(c.allowed)) places.push_back(p.cpus & c.allowed);
    if (places.empty())
      for (const topo::NumaNode& n : t.numa_nodes)
        if (n.cpus.intersects(c.allowed)) places.push_back(n.cpus & c.allowed);
    if (places.empty()) places.push_back(c.allowed);
    unsigned ranks = unsigned(c.plan.ranks.size());
    size_t p = size_t(rank) * places.size() / std::max(1u, ranks);
    c.plan.explain.push_back("rank " + std::to_string(rank) + ": GPU locality unknown; package slot " + std::to_string(p) +
                             " of " + std::to_string(places.size()) + " in GPU order: " + cpus_text(places[p]));
    return places[p];
  }
  for (const Gpu* g : gpus) domain |= gpu_locality(t, *g, c.req.policy) & c.allowed;
  if (!domain.empty()) return domain;

  // The GPU's node has no allowed cores (a cgroup on the other socket, reserved cores): the
  // nearest node with allowed cores, same package first, then by NUMA distance.
  const Gpu* g = gpus[0];
  unsigned home = g->numa->empty() ? 0 : (*g->numa)[0];
  std::optional<unsigned> home_pkg;
  if (const topo::NumaNode* n = topo::find_numa(t, home)) home_pkg = n->package;
  const topo::NumaNode* best = nullptr;
  auto key = [&](const topo::NumaNode& n) {
    bool same_pkg = home_pkg && n.package == home_pkg;
    unsigned dist = topo::numa_distance(t, home, n.os_index).value_or(n.os_index == home ? 10 : 255);
    return std::make_tuple(!same_pkg, dist, n.os_index);
  };
  for (const topo::NumaNode& n : t.numa_nodes)
    if (n.cpus.intersects(c.allowed) && (!best || key(n) < key(*best))) best = &n;
  if (!best) return c.allowed;
  std::string w = "GPU " + std::to_string(g->index) + " (" + g->pci + ") is on NUMA node " + join_numbers(*g->numa) +
                  ", which has no allowed CPUs; rank " + std::to_string(rank) + " uses node " + std::to_string(best->os_index) +
                  (home_pkg && best->package == home_pkg ? " (same package)" : " (nearest by NUMA distance)");
  rb.warnings.push_back(w);
  return best->cpus & c.allowed;
}

// Ranks whose target domains overlap form one pool; pools in the order of their first rank,
// members in rank order. Ranks with the same target are one pool whatever else, so the pairwise
// overlap test runs over the distinct targets (a few per GPU node), not over ranks: planning
// stays near-linear in the rank count.
std::vector<std::vector<size_t>> pool_ranks(const std::vector<CpuSet>& targets) {
  std::map<CpuSet, size_t> id_of;
  std::vector<const CpuSet*> distinct;
  std::vector<size_t> target_id(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    auto [it, fresh] = id_of.emplace(targets[i], distinct.size());
    if (fresh) distinct.push_back(&it->first);
    target_id[i] = it->second;
  }
  std::vector<size_t> parent(distinct.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (size_t a = 0; a < distinct.size(); ++a)
    for (size_t b = a + 1; b < distinct.size(); ++b)
      if (distinct[a]->intersects(*distinct[b])) parent[find(b)] = find(a);
  std::map<size_t, size_t> pool_of_root;
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < targets.size(); ++i) {
    auto [it, fresh] = pool_of_root.emplace(find(target_id[i]), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(i);
  }
  return out;
}

// Splits one pool among its ranks: whole L3 domains (policy l3), whole cores, or single PUs when
// the pool was settled on SMT siblings.
void split_pool(Ctx& c, const CrowdedPool& pool) {
  const auto& members = pool.members;
  const CpuSet& domain = pool.domain;
  std::string who = ranks_text(members);
  if (c.req.policy == Policy::l3) {
    // One L3 domain per rank, in order; ranks beyond the L3 count share.
    std::vector<CpuSet> l3s;
    for (const topo::L3Domain& l : c.t.l3_domains)
      if ((l.cpus & domain).intersects(c.allowed)) l3s.push_back(l.cpus & domain);
    if (!l3s.empty()) {
      for (size_t q = 0; q < members.size(); ++q) c.plan.ranks[members[q]].cpus = l3s[q % l3s.size()];
      if (members.size() > l3s.size())
        c.plan.warnings.push_back(who + ": " + std::to_string(members.size()) + " ranks on " + std::to_string(l3s.size()) +
                                  " L3 domains: some ranks share an L3 domain");
      c.plan.explain.push_back(who + ": one L3 domain each within " + cpus_text(domain));
      return;
    }
    c.plan.warnings.push_back("the topology has no L3 information: policy l3 falls back to closest");
  }
  std::vector<const CoreSlot*> slots = c.cores.within(domain);
  std::vector<CoreSlot> singles;  // SMT siblings to different ranks: one slot per PU
  if (pool.by_pu) {
    singles = pu_slots(slots, domain);
    slots.clear();
    for (const CoreSlot& s : singles) slots.push_back(&s);
  }
  Split s = split_domain(slots, domain, unsigned(members.size()), c.req.balanced);
  for (size_t q = 0; q < members.size(); ++q) c.plan.ranks[members[q]].cpus = s.blocks[q];
  c.plan.explain.push_back(who + " split " + cpus_text(domain) + " (" + std::to_string(slots.size()) + (pool.by_pu ? " PUs" : " cores") +
                           "): " + s.how);
  if (s.shared) c.plan.warnings.push_back(who + ": more ranks than CPUs in " + cpus_text(domain) + "; ranks share cores");
}

// Ranks whose GPUs sit near each other share a pool of cores. A crowded pool (fewer cores than
// ranks) is handled by rules, each tried only when the one before cannot give every rank a CPU of
// its own, so ranks stay on their GPU's node whenever sharing cannot be avoided anyway:
//   1. widen to the GPU's NUMA node(s) (a GPU whose locality is one L3 domain);
//   2. SMT siblings: when the pool has at least as many PUs as ranks, each rank gets its own PUs
//      (whole cores for as many ranks as possible);
//   3. spill the minimum: only the ranks beyond the pool's PUs move, to the nearest free cores
//      (same package first, then by NUMA distance), and only when that removes sharing;
//   4. otherwise the ranks share their own node's cores.
void assign_cpus(Ctx& c, std::vector<CpuSet> targets) {
  bool share = c.req.policy == Policy::socket || c.req.policy == Policy::numa || c.req.policy == Policy::none;
  if (share) {
    for (const auto& members : pool_ranks(targets)) {
      CpuSet domain;
      for (size_t i : members) domain |= targets[i];
      for (size_t i : members) c.plan.ranks[i].cpus = domain;
      c.plan.explain.push_back(ranks_text(members) + ": share " + cpus_text(domain) + " (policy " + to_string(c.req.policy) + ")");
    }
    return;
  }
  // 1. A crowded pool widens to its NUMA node(s), still local to the GPU.
  for (const auto& members : pool_ranks(targets)) {
    CpuSet domain;
    for (size_t i : members) domain |= targets[i];
    if (c.cores.count(domain) >= members.size()) continue;
    for (size_t i : members) targets[i] |= topo::cpus_of_nodes(c.t, nodes_covering(c.t, targets[i])) & c.allowed;
    c.plan.explain.push_back(ranks_text(members) + ": fewer cores than ranks near their GPU; widened to their NUMA node");
  }
  std::vector<CrowdedPool> pools;
  for (const auto& members : pool_ranks(targets)) {
    CpuSet domain;
    for (size_t i : members) domain |= targets[i];
    pools.push_back({members, domain, false});
  }
  // 2-4. Settle the crowded pools: SMT siblings, the minimal spill, or sharing.
  settle_crowded_pools(c.t, c.cores, c.allowed, pools, c.plan.explain, c.plan.warnings);
  for (const CrowdedPool& pool : pools) split_pool(c, pool);
}

// --- memory, NIC, environment --------------------------------------------------------------

void assign_memory(Ctx& c, RankBinding& rb, const std::vector<const Gpu*>& gpus) {
  if (c.req.policy == Policy::none || c.req.mem == MemPolicy::none) {
    rb.mem_policy = MemPolicy::none;
    return;
  }
  rb.mem_policy = c.req.mem;
  if (c.req.mem_node) {
    rb.mem_nodes = {*c.req.mem_node};
    return;
  }
  std::set<unsigned> nodes;
  if (c.req.policy != Policy::cpu_only && locality_known(gpus))
    for (const Gpu* g : gpus)
      for (unsigned n : topo::nodes_with_cpus(c.t, *g->numa)) nodes.insert(n);
  if (nodes.empty() || c.req.mem == MemPolicy::interleave)
    for (unsigned n : nodes_covering(c.t, rb.cpus)) nodes.insert(n);
  // Never a node the cgroup forbids (cpuset.mems): set_mempolicy would fail, or the kernel would
  // silently allocate elsewhere. The nearest allowed node with CPUs takes its place.
  if (const auto& allowed = c.req.allowed_mems) {
    std::set<unsigned> kept;
    for (unsigned n : nodes)
      if (allowed->test(n)) kept.insert(n);
    if (kept.empty()) {
      unsigned home = nodes.empty() ? 0 : *nodes.begin();
      const topo::NumaNode* best = nullptr;
      auto key = [&](const topo::NumaNode& n) {
        return std::make_tuple(n.cpus.empty(), topo::numa_distance(c.t, home, n.os_index).value_or(255), n.os_index);
      };
      for (const topo::NumaNode& n : c.t.numa_nodes)
        if (allowed->test(n.os_index) && (!best || key(n) < key(*best))) best = &n;
      if (best) {
        kept.insert(best->os_index);
        std::vector<unsigned> wanted(nodes.begin(), nodes.end());
        rb.warnings.push_back("memory node " + join_numbers(wanted) + " is outside the allowed memory nodes " + allowed->to_list() +
                              " (cpuset.mems); memory goes to node " + std::to_string(best->os_index) + ", the nearest allowed");
      }
    }
    nodes = kept;
  }
  rb.mem_nodes.assign(nodes.begin(), nodes.end());
}

bool has_rdma(const Nic& n) { return std::any_of(n.os_names.begin(), n.os_names.end(), topo::is_rdma_device_name); }

// What a NIC is for a training job, best first: 0 a high-speed fabric (an RDMA device of
// InfiniBand, RoCE, EFA or Slingshot; an IPoIB "ib*" or Slingshot "hsn*"/"hsi*" netdev; PCI
// class InfiniBand), 1 plain Ethernet. Ranks only get NICs of the best kind present, so a 1 GbE
// management port is never paired with a GPU when a fabric NIC exists.
int nic_kind(const Nic& n) {
  if (has_rdma(n) || topo::is_infiniband_class(n.class_id)) return 0;
  for (const std::string& o : n.os_names)
    if (o.starts_with("ib") || o.starts_with("hsn") || o.starts_with("hsi")) return 0;
  return 1;
}

// Each rank gets, for each of its GPUs, the NIC with the shortest PCIe path to that GPU,
// balancing ranks over NICs of equal distance; a multi-GPU rank lists each distinct NIC once, its
// first GPU's NIC first.
void assign_nics(Ctx& c, const std::vector<std::vector<const Gpu*>>& gpus_of) {
  int best_kind = 2;
  for (const Nic& n : c.t.nics) best_kind = std::min(best_kind, nic_kind(n));
  std::vector<const Nic*> candidates;
  for (const Nic& n : c.t.nics)
    if (nic_kind(n) == best_kind) candidates.push_back(&n);
  if (candidates.empty()) return;
  std::map<const Nic*, unsigned> load;
  for (size_t r = 0; r < c.plan.ranks.size(); ++r) {
    RankBinding& rb = c.plan.ranks[r];
    auto klass = [&](const Gpu* g, const Nic* n) -> PathClass {
      if (g) return topo::path_class(*g, *n);
      // No GPU: a NIC on one of the rank's memory nodes counts as NODE, anything else SYS.
      if (n->numa)
        for (unsigned node : *n->numa)
          if (std::find(rb.mem_nodes.begin(), rb.mem_nodes.end(), node) != rb.mem_nodes.end()) return PathClass::NODE;
      return PathClass::SYS;
    };
    std::vector<const Gpu*> gpus = gpus_of[r];
    if (gpus.empty()) gpus.push_back(nullptr);
    std::vector<const Nic*> chosen;
    for (const Gpu* g : gpus) {
      const Nic* best = nullptr;
      for (const Nic* n : candidates)
        if (!best || std::make_tuple(int(klass(g, n)), load[n]) < std::make_tuple(int(klass(g, best)), load[best])) best = n;
      if (std::find(chosen.begin(), chosen.end(), best) != chosen.end()) continue;
      ++load[best];
      chosen.push_back(best);
      // The path class is to the rank's first GPU, whichever GPU chose the NIC.
      rb.nics.push_back({best->pci, join(best->os_names, ","), klass(gpus[0], best)});
    }
  }
}

// The NIC variables. NCCL must see the same HCA list on every rank of a job (it picks each
// rank's NIC itself from its own topology detection, and fails or hangs when ranks disagree:
// NVIDIA/nccl#1478), so NCCL_IB_HCA / NCCL_SOCKET_IFNAME name the node's set: every NIC the
// plan pairs with some rank, in topology order. UCX and libfabric take a per-process device, so
// UCX_NET_DEVICES is the rank's own.
struct NicNames {
  std::string rdma, netdev;  // first RDMA device name and first netdev name of one NIC
};

NicNames nic_names(const Nic& n) {
  NicNames out;
  for (const std::string& o : n.os_names) {
    std::string& slot = topo::is_rdma_device_name(o) ? out.rdma : out.netdev;
    if (slot.empty()) slot = o;
  }
  return out;
}

bool is_nic(const Nic& n, const NicRef& ref) { return n.pci == ref.pci && join(n.os_names, ",") == ref.name; }

std::vector<std::pair<std::string, std::string>> node_nic_env(const Topology& t, const std::vector<RankBinding>& ranks) {
  std::vector<std::string> rdma, netdev;
  for (const Nic& n : t.nics) {
    bool used = false;
    for (const RankBinding& rb : ranks)
      for (const NicRef& ref : rb.nics) used = used || is_nic(n, ref);
    if (!used) continue;
    NicNames names = nic_names(n);
    if (!names.rdma.empty()) rdma.push_back(names.rdma);
    else if (!names.netdev.empty()) netdev.push_back(names.netdev);
  }
  // A leading '=' makes NCCL match names exactly (mlx5_1 must not select mlx5_10).
  if (!rdma.empty()) return {{"NCCL_IB_HCA", "=" + join(rdma, ",")}};
  if (!netdev.empty()) return {{"NCCL_SOCKET_IFNAME", "=" + join(netdev, ",")}};
  return {};
}

void assign_env(Ctx& c, RankBinding& rb, const std::vector<const Gpu*>& gpus) {
  if (c.req.policy == Policy::none) return;
  rb.env.push_back({"OMP_NUM_THREADS", std::to_string(std::max(1u, c.cores.count(rb.cpus)))});
  if (c.req.omp) {
    rb.env.push_back({"OMP_PLACES", "cores"});
    rb.env.push_back({"OMP_PROC_BIND", "close"});
  }
  if (c.req.isolate_gpus && !gpus.empty()) {
    std::vector<unsigned> idx;
    for (const Gpu* g : gpus) idx.push_back(g->index);
    switch (gpus[0]->vendor) {
      case topo::Vendor::amd: rb.env.push_back({"ROCR_VISIBLE_DEVICES", join_numbers(idx)}); break;
      case topo::Vendor::intel: rb.env.push_back({"ZE_AFFINITY_MASK", join_numbers(idx)}); break;
      default:
        rb.env.push_back({"CUDA_DEVICE_ORDER", "PCI_BUS_ID"});
        rb.env.push_back({"CUDA_VISIBLE_DEVICES", join_numbers(idx)});
    }
  }
  if (c.req.nic_env && !rb.nics.empty()) {
    // UCX takes a list: a rank with several GPUs (and so several NICs) uses them all.
    std::vector<std::string> ucx;
    for (const NicRef& ref : rb.nics)
      for (const Nic& n : c.t.nics)
        if (is_nic(n, ref))
          if (NicNames own = nic_names(n); !own.rdma.empty()) ucx.push_back(own.rdma + ":1");
    if (!ucx.empty()) rb.env.push_back({"UCX_NET_DEVICES", join(ucx, ",")});
  }
}

Status check_request(const Topology& t, const Request& req) {
  if (req.ranks && *req.ranks == 0) return Error{"-n", "the number of ranks must be at least 1"};
  if (req.ranks && *req.ranks > 65536) return Error{"-n", "more than 65536 ranks on one node"};
  if (req.gpus_per_rank == 0) return Error{"--gpus-per-rank", "must be at least 1"};
  if (!req.reserve.is_subset_of(t.cpus))
    return Error{"--reserve " + req.reserve.to_list(), "CPUs " + (req.reserve - t.cpus).to_list() + " are not in this machine (" + t.cpus.to_list() + ")"};
  if (req.allowed && !req.allowed->is_subset_of(t.cpus))
    return Error{"--allowed " + req.allowed->to_list(), "CPUs " + (*req.allowed - t.cpus).to_list() + " are not in this machine (" + t.cpus.to_list() + ")"};
  if (req.allowed && req.allowed->empty()) return Error{"--allowed", "the allowed CPU set is empty"};
  if (req.mem_node && !topo::find_numa(t, *req.mem_node))
    return Error{"--mem-node " + std::to_string(*req.mem_node), "no such NUMA node"};
  if (req.allowed_mems) {
    CpuSet known;
    for (const topo::NumaNode& n : t.numa_nodes) known.set(n.os_index);
    if ((*req.allowed_mems & known).empty())
      return Error{"allowed memory nodes " + req.allowed_mems->to_list(), "none of them is a NUMA node of this machine (" +
                                                                          known.to_list() + ")"};
    if (req.mem_node && !req.allowed_mems->test(*req.mem_node))
      return Error{"--mem-node " + std::to_string(*req.mem_node),
                   "outside the allowed memory nodes " + req.allowed_mems->to_list() + " (cgroup cpuset.mems)"};
  }
  return Ok{};
}

}  // namespace

Result<Plan> make_plan(const Topology& t, const Request& req) {
  if (Status s = check_request(t, req); !s) return s.error();
  Ctx c{t, req, usable_cpus(t, req), {}, {}};
  c.plan.policy = req.policy;
  c.plan.mem = req.policy == Policy::none ? MemPolicy::none : req.mem;
  c.plan.topology_origin = t.origin;
  if (c.allowed.empty())
    return Error{"--reserve " + req.reserve.to_list(), "every allowed CPU (" + (req.allowed ? *req.allowed : t.allowed_cpus).to_list() + ") is reserved"};
  c.cores = make_core_table(t, c.allowed, req.smt);
  if (CpuSet reserve = whole_cores(t, req.reserve); reserve != req.reserve)
    c.plan.explain.push_back("--reserve " + req.reserve.to_list() + " reserves whole cores: " + reserve.to_list());
  c.plan.explain.push_back("allowed CPUs: " + c.allowed.to_list() + " (" + std::to_string(c.cores.slots.size()) + " cores" +
                           (req.smt ? "" : ", one PU per core") + ")");

  // 1. GPU identity: the GPUs the workers will see, in their order.
  auto vis = visible_gpus(t, req, c.plan.explain, c.plan.warnings);
  if (!vis) return vis.error();
  std::vector<const Gpu*> visible = *vis;
  unsigned k = req.gpus_per_rank.value_or(1);

  // 2. Rank count and each rank's GPUs.
  if (visible.empty()) {
    if (req.require_gpu)
      return Error{"--require-gpu", t.gpus.empty() ? "the topology has no GPUs" : "no GPU is visible", ErrorKind::not_found};
    c.plan.warnings.push_back(t.gpus.empty() ? "the topology has no GPUs: CPU-only plan"
                                             : "the environment hides every GPU: CPU-only plan");
    if (k > 1) return Error{"--gpus-per-rank " + std::to_string(k), "no GPU is visible"};
  }
  unsigned ranks;
  if (req.ranks) {
    ranks = *req.ranks;
  } else if (!visible.empty()) {
    ranks = unsigned(visible.size()) / k;
    if (ranks == 0)
      return Error{"--gpus-per-rank " + std::to_string(k), "needs " + std::to_string(k) + " GPUs per rank but " +
                                                           std::to_string(visible.size()) + " are visible"};
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
                                                         " are visible"};
  std::vector<std::vector<const Gpu*>> gpus_of(ranks);
  if (!visible.empty()) {
    if (k > 1) {
      gpus_of = group_gpus(t, visible, ranks, k);
    } else if (ranks <= visible.size()) {
      for (unsigned r = 0; r < ranks; ++r) gpus_of[r] = {visible[r]};
    } else {
      // More ranks than GPUs: consecutive ranks share a GPU (rank r -> GPU r*G/R).
      for (unsigned r = 0; r < ranks; ++r) gpus_of[r] = {visible[size_t(r) * visible.size() / ranks]};
      c.plan.warnings.push_back(std::to_string(ranks) + " ranks on " + std::to_string(visible.size()) +
                                " GPUs: consecutive ranks share a GPU; CPUs are still split");
    }
  }
  c.plan.ranks.resize(ranks);
  for (unsigned r = 0; r < ranks; ++r) {
    c.plan.ranks[r].local_rank = r;
    for (const Gpu* g : gpus_of[r]) c.plan.ranks[r].gpus.push_back({g->index, g->pci, g->vendor});
  }
  if (!visible.empty() && !locality_known(visible))
    c.plan.warnings.push_back("GPU locality is unknown (the source gives no NUMA node for the GPUs, as in most VMs): "
                              "ranks are spread over packages in GPU order, which may not match the hardware");

  // 3. CPUs.
  std::vector<CpuSet> targets(ranks);
  for (unsigned r = 0; r < ranks; ++r) {
    RankBinding& rb = c.plan.ranks[r];
    if (req.policy == Policy::none || req.policy == Policy::cpu_only || gpus_of[r].empty()) targets[r] = c.allowed;
    else targets[r] = target_domain(c, r, gpus_of[r], rb);
  }
  if (req.policy == Policy::cpu_only || visible.empty()) {
    // GPU-unaware: contiguous blocks from CPU 0, like DeepSpeed's --bind_cores_to_rank
    // (cpu-only), or, without GPUs, the whole machine split evenly.
    std::vector<CoreSlot> in_order = c.cores.slots;
    std::stable_sort(in_order.begin(), in_order.end(),
                     [](const CoreSlot& a, const CoreSlot& b) { return *a.pus.first() < *b.pus.first(); });
    // More ranks than cores but not than PUs: SMT siblings go to different ranks before ranks
    // share a core (as for crowded pools).
    size_t pus = 0;
    for (const CoreSlot& s : in_order) pus += s.pus.count();
    bool by_pu = in_order.size() < ranks && pus >= ranks;
    if (by_pu) {
      std::vector<const CoreSlot*> cores;
      for (const CoreSlot& s : in_order) cores.push_back(&s);
      in_order = pu_slots(cores, c.allowed);
      c.plan.warnings.push_back(std::to_string(ranks) + " ranks on " + std::to_string(c.cores.slots.size()) +
                                " allowed cores: SMT siblings of some cores go to different ranks");
    }
    std::vector<const CoreSlot*> slots;
    for (CoreSlot& s : in_order) {
      if (req.policy == Policy::cpu_only) s.l3 = -1;
      slots.push_back(&s);
    }
    Split s = split_domain(slots, c.allowed, ranks, req.balanced);
    for (unsigned r = 0; r < ranks; ++r) c.plan.ranks[r].cpus = req.policy == Policy::none ? c.allowed : s.blocks[r];
    c.plan.explain.push_back(std::string(req.policy == Policy::cpu_only ? "GPU-unaware: " : "no GPU: ") + s.how + " over " +
                             c.allowed.to_list());
    if (s.shared) c.plan.warnings.push_back("more ranks than allowed cores: ranks share cores");
  } else if (req.policy == Policy::socket_split) {
    std::vector<unsigned> home;
    for (const CpuSet& target : targets) {
      std::vector<unsigned> nodes = nodes_covering(t, target);
      home.push_back(nodes.empty() ? 0 : nodes[0]);
    }
    auto blocks = split_sockets(t, c.cores, home, req.balanced, c.plan.explain);
    if (blocks) {
      for (unsigned r = 0; r < ranks; ++r) c.plan.ranks[r].cpus = (*blocks)[r];
    } else {
      c.plan.warnings.push_back("socket-split: a package has fewer allowed cores than ranks; split as closest does");
      assign_cpus(c, targets);
    }
  } else {
    assign_cpus(c, targets);
  }

  // 4. Memory, NIC, environment.
  for (unsigned r = 0; r < ranks; ++r) assign_memory(c, c.plan.ranks[r], gpus_of[r]);
  assign_nics(c, gpus_of);
  std::vector<std::pair<std::string, std::string>> nic_env;
  if (req.nic_env && req.policy != Policy::none) nic_env = node_nic_env(t, c.plan.ranks);
  for (unsigned r = 0; r < ranks; ++r) {
    assign_env(c, c.plan.ranks[r], gpus_of[r]);
    if (!c.plan.ranks[r].nics.empty())
      c.plan.ranks[r].env.insert(c.plan.ranks[r].env.end(), nic_env.begin(), nic_env.end());
    for (const std::string& w : c.plan.ranks[r].warnings) c.plan.warnings.push_back("rank " + std::to_string(r) + ": " + w);
  }
  c.plan.score = score_plan(t, c.plan.ranks, c.allowed);
  if (!t.cores_known && ranks > 1 && req.policy != Policy::none)
    c.plan.warnings.push_back("the topology gives no cores (an NCCL/RCCL file): the ranks' CPUs are disjoint, but some may be "
                              "SMT siblings of one core");
  return c.plan;
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

CpuSet usable_cpus(const Topology& t, const Request& req) {
  return (req.allowed ? *req.allowed & t.cpus : t.allowed_cpus) - whole_cores(t, req.reserve);
}

Score score_plan(const Topology& t, const std::vector<RankBinding>& ranks, const CpuSet& usable) {
  Score s;
  s.cores_known = t.cores_known;
  CpuSet given;
  for (const RankBinding& rb : ranks) given |= rb.cpus;
  s.idle_cpus = unsigned((usable - given).count());
  double local = 0, total = 0, mem_ok = 0;
  unsigned judged = 0;
  size_t top = t.cpus.last().value_or(0) + 1;
  std::vector<unsigned> uses(top, 0);
  std::vector<int> core_of_pu(top, -1);
  for (size_t i = 0; i < t.cores.size(); ++i)
    for (unsigned pu : t.cores[i].pus.ids())
      if (pu < top) core_of_pu[pu] = int(i);
  std::vector<size_t> core_seen_by(t.cores.size(), SIZE_MAX);  // last rank that counted the core
  bool first = true;
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    const RankBinding& rb = ranks[ri];
    unsigned cores = 0;
    for (unsigned pu : rb.cpus.ids()) {
      if (pu >= top) continue;
      ++uses[pu];
      int core = core_of_pu[pu];
      if (core >= 0 && core_seen_by[size_t(core)] != ri) {
        core_seen_by[size_t(core)] = ri;
        ++cores;
      }
    }
    s.min_cores = first ? cores : std::min(s.min_cores, cores);
    s.max_cores = first ? cores : std::max(s.max_cores, cores);
    first = false;
    s.nic_path.push_back(rb.nics.empty() ? std::nullopt : std::optional<PathClass>(rb.nics[0].path));

    std::vector<unsigned> gpu_nodes;
    bool known = !rb.gpus.empty();
    for (const GpuRef& g : rb.gpus) {
      const Gpu* gpu = topo::find_gpu(t, g.pci);
      if (!gpu || !gpu->numa) {
        known = false;
        break;
      }
      for (unsigned n : topo::nodes_with_cpus(t, *gpu->numa)) gpu_nodes.push_back(n);
    }
    if (!known || rb.cpus.empty()) continue;
    CpuSet near = topo::cpus_of_nodes(t, gpu_nodes);
    double share = double((rb.cpus & near).count()) / double(rb.cpus.count());
    local += double((rb.cpus & near).count());
    total += double(rb.cpus.count());
    ++judged;
    if (rb.mem_policy == MemPolicy::none) {
      mem_ok += share;  // first touch lands on the node of whichever CPU the thread runs on
    } else {
      bool all_local = !rb.mem_nodes.empty() && std::all_of(rb.mem_nodes.begin(), rb.mem_nodes.end(), [&](unsigned n) {
        return std::find(gpu_nodes.begin(), gpu_nodes.end(), n) != gpu_nodes.end();
      });
      mem_ok += all_local ? 1.0 : 0.0;
    }
  }
  for (unsigned n : uses) s.overlap_cpus += n > 1;
  if (judged) {
    s.cpu_locality = total > 0 ? local / total : 0.0;
    s.mem_locality = mem_ok / judged;
  }
  return s;
}

}  // namespace gpubind::plan
