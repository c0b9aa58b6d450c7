#include "check/nccl_check.hpp"

#include <algorithm>
#include <map>

#include "util/strings.hpp"

namespace gpubind::check {

namespace {

std::string cpus_said(const CpuSet& s) { return std::to_string(s.count()) + " CPU(s) " + (s.empty() ? "(none)" : s.to_list()); }

std::string gpu_said(const NcclRankReport& r) {
  return "GPU " + (r.gpu ? std::to_string(*r.gpu) + " (" + r.bus_id + ")" : r.bus_id.empty() ? std::string("?") : r.bus_id);
}

void add(NcclRankReport& r, Verdict v, std::string why) { r.findings.push_back({v, std::move(why)}); }

// Whether the process's NCCL prints an affinity line for an empty set (2.28+): its version says
// so, or (no version line) its affinity line has the range form.
bool says_empty_sets(const NcclProcess& p) {
  if (auto v = nccl_version(p.version)) return !p.rccl && (v->first > 2 || (v->first == 2 && v->second >= 28));
  return p.affinity && p.affinity->range_form;
}

// Whether a process's missing affinity line means an empty set: its NCCL prints none for one
// (through 2.27, RCCL), as its version says, or, with no version line, as the other processes'
// hex lines in the same log show (a log cut before the version line proves nothing by silence).
bool silence_means_empty(const NcclProcess& p, bool hex_lines_in_log) {
  if (nccl_version(p.version)) return !says_empty_sets(p);
  return hex_lines_in_log;
}

// The rank's CPUs as the rules judge them: at NCCL's init where the log says, else the set NCCL
// pinned its threads to (its CPUs within the GPU's: a lower bound), unless NCCL ignored them.
std::optional<CpuSet> judged_cpus(const NcclRankReport& r) {
  if (r.cpus_at_init) return r.cpus_at_init;
  if (r.nccl_cpus && !r.nccl_cpus->empty() && !r.ignore_cpu_affinity) return r.nccl_cpus;
  return std::nullopt;
}

const topo::Nic* nic_named(const topo::Topology& t, const std::string& name) {
  for (std::string_view part : split(name, '+'))  // NCCL_IB_MERGE_NICS' "mlx5_0+mlx5_1"
    for (const topo::Nic& n : t.nics)
      if (std::find(n.os_names.begin(), n.os_names.end(), part) != n.os_names.end()) return &n;
  return nullptr;
}

// The host's ranks in local-rank order (NCCL's localRank; else their ranks), each with its GPU's
// position among the topology's GPUs as the plan sees them; those whose GPU the topology lacks
// are left out (noted).
struct HostPlan {
  std::vector<size_t> members;  // indexes into the report's ranks, in plan order
  std::optional<plan::Plan> plan;
};

HostPlan plan_host(const topo::Topology& t, std::vector<NcclRankReport>& ranks, const std::vector<size_t>& on_host,
                   const plan::Request& base, std::vector<std::string>& notes) {
  HostPlan h;
  plan::Request req = base;
  std::vector<std::string> explain, warnings;
  auto visible = plan::visible_gpus(t, req, explain, warnings);
  if (!visible) {
    notes.push_back("no plan to compare with: " + visible.error().message());
    return h;
  }
  std::map<size_t, unsigned> position;  // each member's GPU among the visible ones
  for (size_t i : on_host) {
    NcclRankReport& r = ranks[i];
    auto at = std::find_if(visible->gpus.begin(), visible->gpus.end(), [&](const topo::Gpu* g) { return g->pci == r.bus_id; });
    if (r.bus_id.empty() || at == visible->gpus.end()) {
      r.notes.push_back(r.bus_id.empty() ? "no init line names its GPU: not compared with a plan"
                                         : "its GPU " + r.bus_id +
                                               " is not in the topology (another machine's log? --topology): not compared with a plan");
      continue;
    }
    r.gpu = (*at)->index;
    r.gpu_cpus = (*at)->cpus;
    h.members.push_back(i);
    position[i] = unsigned(at - visible->gpus.begin());
  }
  std::stable_sort(h.members.begin(), h.members.end(), [&](size_t a, size_t b) {
    return std::make_pair(ranks[a].local_rank.value_or(~0u), ranks[a].rank.value_or(~0u)) <
           std::make_pair(ranks[b].local_rank.value_or(~0u), ranks[b].rank.value_or(~0u));
  });
  if (h.members.empty()) return h;
  // Only some of the host's ranks logged (one rank's NCCL_DEBUG_FILE given): the plan splits the
  // GPUs' CPUs among those, so a rank bound to a smaller share is still within it.
  unsigned local_ranks = 0;
  for (size_t i : h.members) local_ranks = std::max(local_ranks, ranks[i].local_ranks.value_or(0));
  if (local_ranks > h.members.size())
    notes.push_back(
        "host " + ranks[h.members[0]].host + ": " + std::to_string(h.members.size()) + " of its " + std::to_string(local_ranks) +
        " local ranks are in the log: the plan shares the CPUs among those only (give every rank's log for the node's whole plan)");
  req.ranks = unsigned(h.members.size());
  req.rank_gpus.clear();
  for (size_t i : h.members) req.rank_gpus.push_back({position[i]});
  auto p = plan::make_plan(t, req);
  if (!p) {
    notes.push_back("host " + ranks[h.members[0]].host + ": no plan to compare with: " + p.error().message());
    return h;
  }
  h.plan = std::move(*p);
  return h;
}

NcclRankReport report_of(const NcclProcess& p) {
  NcclRankReport r;
  r.host = p.host;
  r.pid = p.pid;
  r.file = p.file;
  r.version = p.version;
  r.rccl = p.rccl;
  if (const NcclComm* w = p.world()) {
    r.rank = w->rank;
    r.nranks = w->nranks;
    r.local_rank = w->local_rank;
    r.local_ranks = w->local_ranks;
  }
  r.bus_id = p.bus_id;
  r.ignore_cpu_affinity = p.ignore_cpu_affinity;
  if (p.affinity) {
    r.nccl_cpus = p.affinity->set;
    r.cpus_at_init = p.affinity->cpu_affinity;
  }
  for (const auto& [net, used] : p.net_used) {
    const std::vector<std::string>* names = p.devices(net);
    for (const auto& [dev, use] : used) {
      if (use.channels == 0) continue;
      std::string name = names && dev < names->size() && !(*names)[dev].empty() ? (*names)[dev] : net + "/" + std::to_string(dev);
      if (std::find(r.nics.begin(), r.nics.end(), name) == r.nics.end()) r.nics.push_back(name);
      r.gdr = r.gdr.value_or(false) || use.gdr_channels > 0;
    }
  }
  return r;
}

}  // namespace

namespace nccl_rules {

void affinity(NcclRankReport& r, const NcclProcess& p, bool silence_means_empty) {
  const std::optional<NcclAffinity>& a = p.affinity;
  if (!a) {
    if (p.comms.empty()) return;  // no INIT lines: nothing to expect
    if (!silence_means_empty || !r.gpu_cpus || r.gpu_cpus->empty()) {
      r.notes.push_back("NCCL logged no CPU affinity for its init" +
                        std::string(silence_means_empty ? " (the GPU's CPUs are unknown here, as they may have been to NCCL)"
                                    : p.version.empty() ? " (no version line: a cut log proves nothing by silence)"
                                                        : ""));
      return;
    }
    add(r, Verdict::misplaced,
        "NCCL logged no CPU affinity: through 2.27 it prints none when none of the rank's CPUs are " + gpu_said(r) + "'s (" +
            r.gpu_cpus->to_list() +
            "), so it left its threads where the rank was, off the GPU's CPUs (or NCCL did not know the GPU's CPUs: "
            "a VM, numa_node -1)");
    return;
  }
  bool nccl_knows_gpu = !a->gpu_affinity || !a->gpu_affinity->empty();
  if (!nccl_knows_gpu)
    r.notes.push_back("NCCL does not know " + gpu_said(r) +
                      "'s CPUs (\"GPU affinity =  \": a VM, or numa_node -1 in sysfs): it left the rank's CPUs as they were");
  if (!r.gpu_cpus && a->gpu_affinity && !a->gpu_affinity->empty()) r.gpu_cpus = a->gpu_affinity;
  if (a->set.empty() && nccl_knows_gpu && !r.ignore_cpu_affinity) {
    add(r, Verdict::misplaced,
        "none of the rank's CPUs at NCCL's init (" + (r.cpus_at_init ? r.cpus_at_init->to_list() : std::string("?")) + ") are " +
            gpu_said(r) + "'s (" + (a->gpu_affinity ? a->gpu_affinity->to_list() : std::string("?")) +
            "): NCCL said \"empty, ignoring\" and left its threads off the GPU's CPUs");
    return;
  }
  std::optional<CpuSet> cpus = judged_cpus(r);
  if (!cpus || !r.gpu_cpus || r.gpu_cpus->empty() || cpus->is_subset_of(*r.gpu_cpus)) return;
  CpuSet off = *cpus - *r.gpu_cpus;
  bool wider_than_plan = r.planned && r.planned->is_subset_of(*cpus) && !(*cpus == *r.planned);  // UNBOUND says it
  if (!cpus->intersects(*r.gpu_cpus))
    add(r, Verdict::misplaced,
        "the rank's " + cpus_said(*cpus) + " at NCCL's init are all off " + gpu_said(r) + "'s " + r.gpu_cpus->to_list());
  else if (!wider_than_plan)
    add(r, Verdict::misplaced,
        std::to_string(off.count()) + " of the rank's CPUs at NCCL's init (" + off.to_list() + ") are off " + gpu_said(r) + "'s " +
            r.gpu_cpus->to_list());
}

void unbound(NcclRankReport& r) {
  std::optional<CpuSet> cpus = judged_cpus(r);
  bool lower_bound = !r.cpus_at_init;
  if (!cpus || !r.planned || *cpus == *r.planned || !r.planned->is_subset_of(*cpus)) return;
  if (lower_bound)
    add(r, Verdict::unbound,
        "NCCL pinned its threads to " + cpus_said(*cpus) + ", the rank's CPUs among " + gpu_said(r) + "'s, more than the plan's " +
            cpus_said(*r.planned) + ": the rank was allowed at least those, and NCCL narrows only the threads it starts during init");
  else
    add(r, Verdict::unbound,
        "the rank had " + cpus_said(*cpus) + " at NCCL's init, the plan gives it " + cpus_said(*r.planned) +
            ": NCCL narrows only the threads it starts during init (to " + (r.nccl_cpus ? r.nccl_cpus->to_list() : std::string("?")) +
            "); the rank's own threads keep every CPU it had");
}

void overlap(std::vector<NcclRankReport*>& host_ranks) {
  // The CPUs a rank's threads ran on: its own at init, else NCCL's set (the GPU's whole set
  // under NCCL_IGNORE_CPU_AFFINITY=1, which is how NCCL's threads come to run on other ranks' CPUs).
  auto set_of = [](const NcclRankReport& r) -> std::optional<CpuSet> {
    if (r.nccl_cpus && !r.nccl_cpus->empty() && (r.ignore_cpu_affinity || !r.cpus_at_init)) return r.nccl_cpus;
    return r.cpus_at_init;
  };
  for (NcclRankReport* a : host_ranks) {
    auto sa = set_of(*a);
    if (!sa) continue;
    std::vector<std::string> with;
    for (NcclRankReport* b : host_ranks) {
      auto sb = b == a ? std::nullopt : set_of(*b);
      if (!sb || !sa->intersects(*sb)) continue;
      with.push_back("rank " + (b->rank ? std::to_string(*b->rank) : std::string("?")) + " (PID " + std::to_string(b->pid) + ") on " +
                     (*sa & *sb).to_list());
    }
    if (!with.empty())
      add(*a, Verdict::overlap,
          std::string(a->ignore_cpu_affinity ? "NCCL's threads (NCCL_IGNORE_CPU_AFFINITY=1) share" : "shares") + " CPUs with " +
              join(with, ", "));
  }
}

void remote_nic(NcclRankReport& r, const topo::Topology& t) {
  if (!r.gpu || !r.planned_nic_path || r.nics.empty()) return;
  const topo::Gpu* g = nullptr;
  for (const topo::Gpu& x : t.gpus)
    if (x.pci == r.bus_id) g = &x;
  if (!g) return;
  std::vector<std::string> farther, unknown;
  for (const std::string& name : r.nics) {
    const topo::Nic* n = nic_named(t, name);
    if (!n) {
      unknown.push_back(name);
      continue;
    }
    topo::PathClass c = topo::path_class(*g, *n);
    if (int(c) > int(*r.planned_nic_path)) farther.push_back(name + " (" + topo::to_string(c) + ")");
  }
  if (!unknown.empty()) r.notes.push_back("NIC(s) " + join(unknown, ", ") + " are not in the topology: not judged");
  if (!farther.empty())
    add(r, Verdict::remote_nic,
        "its channels went through " + join(farther, ", ") + " from " + gpu_said(r) + ", the plan's " +
            (r.planned_nics.empty() ? std::string("?") : r.planned_nics[0]) + " is " + topo::to_string(*r.planned_nic_path) +
            " (NCCL_IB_HCA, NCCL_NETDEVS_POLICY, or a NIC down?)");
}

void no_gdr(NcclRankReport& r, const NcclProcess& p) {
  if (!r.gdr || *r.gdr || !r.planned_nic_path || int(*r.planned_nic_path) > int(topo::PathClass::PXB)) return;
  // Sockets never use GPU Direct RDMA: only a fabric transport is expected to.
  bool socket = true;
  for (const auto& [net, used] : p.net_used)
    for (const auto& [dev, use] : used)
      if (use.channels > 0 && net != "Socket") socket = false;
  if (socket) return;
  std::string why;
  for (const std::string& n : r.nics)
    if (auto it = p.gdr_support.find(n); it != p.gdr_support.end() && !it->second)
      why = "; NCCL: GPU Direct RDMA Disabled for HCA '" + n + "'";
  if (why.empty() && !p.gdr_said.empty()) why = "; NCCL: " + p.gdr_said;
  add(r, Verdict::no_gdr,
      "none of its channels through " + join(r.nics, ", ") + " used GPU Direct RDMA, though the plan's NIC is " +
          topo::to_string(*r.planned_nic_path) + " from " + gpu_said(r) +
          ": is nvidia-peermem loaded (or dma-buf usable), NCCL_NET_GDR_LEVEL or NCCL_NET_GDR_READ set?" + why);
}

}  // namespace nccl_rules

bool NcclReport::has_findings() const {
  return std::any_of(ranks.begin(), ranks.end(), [](const NcclRankReport& r) { return !r.findings.empty(); });
}

std::string verdicts_of(const NcclRankReport& r) {
  std::vector<std::string> v;
  for (const Finding& f : r.findings)
    if (std::find(v.begin(), v.end(), to_string(f.verdict)) == v.end()) v.push_back(to_string(f.verdict));
  return v.empty() ? "OK" : join(v, ",");
}

NcclReport judge_nccl_log(const topo::Topology& t, const NcclLog& log, const plan::Request& base) {
  NcclReport rep;
  std::map<std::string, std::vector<size_t>> hosts;
  bool hex_lines =
      std::any_of(log.processes.begin(), log.processes.end(), [](const NcclProcess& p) { return p.affinity && !p.affinity->range_form; });
  for (const NcclProcess& p : log.processes) {
    hosts[p.host].push_back(rep.ranks.size());
    rep.ranks.push_back(report_of(p));
  }
  for (const auto& [host, on_host] : hosts) {
    HostPlan h = plan_host(t, rep.ranks, on_host, base, rep.notes);
    for (size_t k = 0; h.plan && k < h.members.size(); ++k) {
      NcclRankReport& r = rep.ranks[h.members[k]];
      const plan::RankBinding& rb = h.plan->ranks[k];
      r.planned = rb.cpus;
      for (const plan::NicRef& n : rb.nics) r.planned_nics.push_back(n.name);
      if (!rb.nics.empty()) r.planned_nic_path = rb.nics[0].path;
    }
    std::vector<NcclRankReport*> members;
    for (size_t i : on_host) {
      NcclRankReport& r = rep.ranks[i];
      const NcclProcess& p = log.processes[i];
      nccl_rules::affinity(r, p, silence_means_empty(p, hex_lines));
      nccl_rules::unbound(r);
      nccl_rules::remote_nic(r, t);
      nccl_rules::no_gdr(r, p);
      if (p.ignore_cpu_affinity)
        r.notes.push_back("NCCL_IGNORE_CPU_AFFINITY=1: NCCL pinned its threads to " + gpu_said(r) + "'s CPUs, not the rank's");
      for (unsigned core : p.proxy_cores)
        if (r.planned && !r.planned->test(core))
          r.notes.push_back("NCCL's proxy thread ran on CPU " + std::to_string(core) + ", outside the plan's " + r.planned->to_list() +
                            (p.proxy_cpuset.empty() ? "" : " (NCCL_PROXY_CPUSET=" + p.proxy_cpuset + ")"));
      members.push_back(&r);
    }
    nccl_rules::overlap(members);
  }
  if (log.unattributed)
    rep.notes.push_back(std::to_string(log.unattributed) + " NCCL INFO line(s) without HOST:PID:TID were not given to any rank");
  return rep;
}

}  // namespace gpubind::check
