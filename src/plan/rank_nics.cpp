#include <algorithm>
#include <map>
#include <tuple>

#include "plan/steps.hpp"
#include "util/strings.hpp"

namespace gpubind::plan::steps {

using topo::Gpu;
using topo::Nic;
using topo::PathClass;
using topo::Topology;

namespace {

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
}  // namespace

void assign_nics(Ctx& c, const GpusOfRanks& gpus_of) {
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

namespace {

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
  for (const char* pool : kPoolSizeEnv) rb.env.push_back({pool, std::to_string(std::max(1u, c.cores.count(rb.cpus)))});
  if (std::optional<unsigned> top = rb.cpus.last(); c.req.nccl_proxy_cpus && top) {
    // The rank's last core: the one holding its highest CPU (bind::judge_launcher_binding picks
    // the same in a launcher's CPUs it keeps).
    int slot = *top < c.cores.slot_of_pu.size() ? c.cores.slot_of_pu[*top] : -1;
    CpuSet last = slot < 0 ? CpuSet::of({*top}) : c.cores.slots[size_t(slot)].pus & rb.cpus;
    rb.env.push_back({kNcclProxyCpusetEnv, join_numbers(last.ids())});
  }
  if (c.req.omp) {
    rb.env.push_back({"OMP_PLACES", "cores"});
    rb.env.push_back({"OMP_PROC_BIND", "close"});
  }
  if (c.req.isolate_gpus && !gpus.empty()) {
    auto env = visibility_env(c, gpus);
    rb.env.insert(rb.env.end(), env.begin(), env.end());
  } else if (!c.spread.empty()) {
    auto env = visibility_env(c, c.spread);
    rb.env.insert(rb.env.end(), env.begin(), env.end());
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

}  // namespace

std::vector<std::pair<std::string, std::string>> visibility_env(const Ctx& c, const std::vector<const Gpu*>& gpus) {
  std::vector<unsigned> idx;
  for (const Gpu* g : gpus) idx.push_back(g->index);
  switch (gpus[0]->vendor) {
    case topo::Vendor::amd: return {{"ROCR_VISIBLE_DEVICES", join_numbers(idx)}};
    case topo::Vendor::intel: {
      auto h = ze_hierarchy(c.req.env);  // a bad value stopped visible_gpus already
      return {{"ZE_AFFINITY_MASK", ze_affinity_mask(c.t, gpus, h ? *h : ZeHierarchy::flat)}};
    }
    default: return {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", join_numbers(idx)}};
  }
}

void assign_environment(Ctx& c, const GpusOfRanks& gpus_of) {
  const Request& req = c.req;
  unsigned ranks = unsigned(c.plan.ranks.size());
  std::vector<std::pair<std::string, std::string>> nic_env;
  if (req.nic_env && req.policy != Policy::none) nic_env = node_nic_env(c.t, c.plan.ranks);
  if (!c.spread.empty() && !req.isolate_gpus && req.policy != Policy::none) c.plan.visible_env = visibility_env(c, c.spread);
  for (unsigned r = 0; r < ranks; ++r) {
    assign_env(c, c.plan.ranks[r], gpus_of[r]);
    if (!c.plan.ranks[r].nics.empty())
      c.plan.ranks[r].env.insert(c.plan.ranks[r].env.end(), nic_env.begin(), nic_env.end());
    for (const std::string& w : c.plan.ranks[r].warnings) c.plan.warnings.push_back("rank " + std::to_string(r) + ": " + w);
  }
}

}  // namespace gpubind::plan::steps
