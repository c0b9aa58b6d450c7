#include "k8s/judge.hpp"

#include <algorithm>
#include <set>

#include "util/strings.hpp"

namespace gpubind::k8s {

namespace {

std::string node_list(const std::vector<unsigned>& nodes) {
  CpuSet s;
  for (unsigned n : nodes) s.set(n);
  return (nodes.size() == 1 ? "node " : "nodes ") + s.to_list();
}

std::string cpu_list(const CpuSet& cpus) { return (cpus.count() == 1 ? "CPU " : "CPUs ") + cpus.to_list(); }

// The device plugin's vendor for an index-named device ("nvidia.com/gpu" -> NVIDIA).
std::optional<topo::Vendor> resource_vendor(const std::string& resource) {
  if (resource.rfind("nvidia.com/", 0) == 0) return topo::Vendor::nvidia;
  if (resource.rfind("amd.com/", 0) == 0) return topo::Vendor::amd;
  if (resource.rfind("gpu.intel.com/", 0) == 0) return topo::Vendor::intel;
  return std::nullopt;
}

// "c1:00.0" and "0000:C1:00.0" as the topology writes PCI addresses.
std::string pci_address(const std::string& id) {
  std::string s = to_lower(id);
  if (std::count(s.begin(), s.end(), ':') == 1 && s.find('.') != std::string::npos) s = "0000:" + s;
  return s;
}

// The topology's GPU a plugin's id names: a PCI address, a GPU or MIG UUID, or the vendor's index.
const topo::Gpu* find_gpu(const topo::Topology& t, const std::string& resource, const std::string& id) {
  if (const topo::Gpu* g = topo::find_gpu(t, pci_address(id))) return g;
  std::string l = to_lower(id);
  if (l.starts_with("gpu-") || l.starts_with("mig-")) return topo::find_gpu_by_uuid(t, id);
  auto index = parse_uint(id);
  auto vendor = resource_vendor(resource);
  if (index && vendor)
    for (const auto& g : t.gpus)
      if (g.vendor == *vendor && g.index == *index) return &g;
  return nullptr;
}

// The NIC (an RDMA or SR-IOV device plugin's) at the PCI address the id is.
const topo::Nic* find_nic(const topo::Topology& t, const std::string& id) {
  std::string pci = pci_address(id);
  for (const auto& n : t.nics)
    if (n.pci == pci) return &n;
  return nullptr;
}

// The topology's GPU a DRA driver's device is. Drivers name devices in their own pool: a PCI
// address written with dashes ("0000-af-00-0", Intel's), or "gpu-N" for GPU index N of the
// driver's vendor (NVIDIA's and AMD's, "gpu-N-mig-..." for a MIG device of GPU N); a CDI id
// ("k8s.gpu.nvidia.com/device=gpu-0") names the same after its '='.
const topo::Gpu* find_dra_gpu(const topo::Topology& t, const std::string& driver, const std::string& id) {
  std::string name = to_lower(id.substr(id.find('=') == std::string::npos ? 0 : id.find('=') + 1));
  for (size_t i = 0; i + 12 <= name.size(); ++i) {  // dddd-bb-dd-f
    std::string s = name.substr(i, 12);
    if (s[4] == '-' && s[7] == '-' && s[10] == '-')
      if (const topo::Gpu* g = topo::find_gpu(t, s.substr(0, 4) + ":" + s.substr(5, 2) + ":" + s.substr(8, 2) + "." + s.substr(11, 1)))
        return g;
  }
  std::optional<topo::Vendor> vendor = driver == "gpu.nvidia.com" ? std::optional(topo::Vendor::nvidia)
                                       : driver == "gpu.amd.com"   ? std::optional(topo::Vendor::amd)
                                       : driver == "gpu.intel.com" ? std::optional(topo::Vendor::intel)
                                                                   : std::nullopt;
  if (vendor && name.starts_with("gpu-")) {
    std::string digits = name.substr(4, name.find('-', 4) == std::string::npos ? std::string::npos : name.find('-', 4) - 4);
    if (auto index = parse_uint(digits))
      for (const auto& g : t.gpus)
        if (g.vendor == *vendor && g.index == *index) return &g;
  }
  return find_gpu(t, "", id);  // a PCI address or UUID as it is
}

DeviceView view_of(const topo::Topology& t, const std::string& resource, const Device& d, const std::string& claim = "") {
  DeviceView v{resource, d.id, "", std::nullopt, {}, "", d.numa, claim};
  const topo::Gpu* gpu = claim.empty() ? find_gpu(t, resource, d.id) : find_dra_gpu(t, resource, d.id);
  const topo::PciDevice* dev = gpu ? static_cast<const topo::PciDevice*>(gpu) : find_nic(t, d.id);
  if (dev) {
    v.pci = dev->pci;
    if (gpu) v.index = gpu->index;
    if (dev->numa && !dev->numa->empty()) {
      v.numa = topo::nodes_with_cpus(t, *dev->numa);
      v.numa_source = "topology";
    }
  }
  if (v.numa.empty() && d.numa && *d.numa >= 0) {
    v.numa = {unsigned(*d.numa)};
    v.numa_source = "device plugin";
  }
  return v;
}

// A DRA claim's device as a Device (its name in the driver's pool, else its first CDI id), the
// claim as "NAMESPACE/NAME", and the row a claim gets when the checkpoint names only its pod.
Device dra_device(const ClaimDevice& d) { return {d.device.empty() && !d.cdi.empty() ? d.cdi[0] : d.device, std::nullopt}; }
std::string claim_id(const Claim& c) { return c.namespace_name + "/" + c.name; }
constexpr std::string_view kPodClaim = "(claim ";

std::string device_name(const DeviceView& d) { return d.pci.empty() || d.pci == d.id ? d.id : d.id + " (" + d.pci + ")"; }

std::string who(const ContainerReport& c) {
  std::string pod = c.pod.empty() ? "pod " + c.pod_uid : "pod " + c.namespace_name + "/" + c.pod;
  return pod + " container " + c.container;
}

// The pod's namespace and name, where /var/log/pods (or the pod-resources API) gives them.
void name_pod(ContainerReport& c, const NodeState& s) {
  if (auto p = s.pods.find(c.pod_uid); p != s.pods.end()) {
    c.namespace_name = p->second.namespace_name;
    c.pod = p->second.name;
  }
}

// One container, or a pod's DRA claim ("(claim NS/NAME)", whose containers the checkpoint does
// not name) and a container of that pod: its CPUs are theirs.
bool same(const ContainerReport& a, const ContainerReport& b) {
  return a.pod_uid == b.pod_uid &&
         (a.container == b.container || a.container.starts_with(kPodClaim) || b.container.starts_with(kPodClaim));
}

void judge_alignment(ContainerReport& c, const topo::Topology& t) {
  std::set<unsigned> cpu_nodes(c.cpu_nodes.begin(), c.cpu_nodes.end());
  std::set<unsigned> gpu_nodes(c.gpu_nodes.begin(), c.gpu_nodes.end());
  std::vector<std::string> found;
  // GPUs none of whose nodes holds one of its CPUs, grouped by node.
  std::map<std::vector<unsigned>, std::vector<std::string>> far;
  bool any_near = false;
  for (const DeviceView& g : c.gpus) {
    if (g.numa.empty()) continue;
    bool near = std::any_of(g.numa.begin(), g.numa.end(), [&](unsigned n) { return cpu_nodes.count(n) > 0; });
    if (near) any_near = true;
    else far[g.numa].push_back(g.pci.empty() ? g.id : g.pci);
  }
  for (const auto& [nodes, names] : far) {
    std::string list = join(names, ", ");
    found.push_back((names.size() == 1 ? "GPU " + list + " is" : "GPUs " + list + " are") + " on NUMA " + node_list(nodes) +
                    " and its " + cpu_list(c.cpus) + " on " + node_list(c.cpu_nodes));
  }
  if (!gpu_nodes.empty() && any_near) {
    // Some GPU has CPUs near it: name the CPUs that are near none.
    CpuSet off;
    for (const auto& n : t.numa_nodes)
      if (!gpu_nodes.count(n.os_index)) off |= (n.cpus & c.cpus);
    if (!off.empty())
      found.push_back(cpu_list(off) + (off.count() == 1 ? " is" : " are") + " on NUMA " + node_list(topo::nodes_covering(t, off)) +
                      ", where none of its GPUs is (they are on " + node_list(c.gpu_nodes) + ")");
  }
  if (!gpu_nodes.empty() && c.memory_nodes) {
    bool remote = std::any_of(c.memory_nodes->begin(), c.memory_nodes->end(), [&](unsigned n) { return gpu_nodes.count(n) == 0; });
    if (remote)
      found.push_back("the memory manager put its memory on NUMA " + node_list(*c.memory_nodes) + ", its GPUs are on " +
                      node_list(c.gpu_nodes));
  }
  for (auto& f : found) c.findings.push_back({Verdict::cross_numa, std::move(f)});
}

void judge_sharing(ContainerReport& c, const std::vector<ContainerReport>& all, const topo::Topology& t, const NodeState& s) {
  std::vector<std::string> found;
  for (const ContainerReport& o : all) {
    if (same(o, c) || !o.exclusive) continue;
    CpuSet both = o.cpus & c.cpus;
    if (!both.empty()) found.push_back(cpu_list(both) + (both.count() == 1 ? " is" : " are") + " also given to " + who(o));
  }
  if (s.config.reserved_system_cpus) {
    CpuSet both = *s.config.reserved_system_cpus & c.cpus;
    if (!both.empty()) found.push_back(cpu_list(both) + (both.count() == 1 ? " is" : " are") + " also reserved for the system (reservedSystemCPUs)");
  }
  if (t.cores_known) {
    // Siblings of its CPUs that are not its own: whose they are (another container's or the pool's).
    std::map<std::string, std::pair<CpuSet, CpuSet>> by_owner;  // owner -> (its CPUs, their CPUs)
    for (const auto& core : t.cores) {
      if (!core.pus.intersects(c.cpus) || core.pus.is_subset_of(c.cpus)) continue;
      CpuSet siblings = core.pus - c.cpus;
      for (unsigned pu : siblings.ids()) {
        std::string owner = "the shared pool";
        for (const ContainerReport& o : all)
          if (!same(o, c) && o.exclusive && o.cpus.test(pu)) owner = who(o);
        auto& [mine, theirs] = by_owner[owner];
        mine |= core.pus & c.cpus;
        theirs.set(pu);
      }
    }
    for (const auto& [owner, sets] : by_owner)
      found.push_back(cpu_list(sets.first) + (sets.first.count() == 1 ? " shares a physical core" : " share physical cores") + " with " +
                      cpu_list(sets.second) + " of " + owner);
    if (!by_owner.empty() && s.config.cpu_manager_policy_options.count("full-pcpus-only") == 0)
      found.back() += " (cpuManagerPolicyOptions full-pcpus-only: \"true\" gives whole cores)";
  }
  for (auto& f : found) c.findings.push_back({Verdict::shared_cpus, std::move(f)});
}

std::string effective_cpu_policy(const NodeState& s) { return s.cpu ? s.cpu->policy : s.config.cpu_manager_policy; }

void node_findings(Report& r, const topo::Topology& t) {
  const NodeState& s = r.state;
  std::string policy = effective_cpu_policy(s);
  auto advise = [&](std::string text) { r.findings.push_back({false, std::move(text)}); };
  auto problem = [&](std::string text) { r.findings.push_back({true, std::move(text)}); };
  if (s.cpu && s.config.found && s.cpu->policy != s.config.cpu_manager_policy)
    problem("cpu_manager_state was written under the CPU manager policy \"" + s.cpu->policy + "\", config.yaml asks for \"" +
            s.config.cpu_manager_policy + "\": the kubelet will not start until the node is drained and the file removed");
  bool gpu_pods = !r.containers.empty();
  if (policy == "none" && gpu_pods)
    advise("cpuManagerPolicy is none: no container gets CPUs of its own, so GPU workers share every CPU and migrate; "
           "set cpuManagerPolicy: static (with reservedSystemCPUs) and run GPU pods as Guaranteed with whole CPUs");
  if (policy == "static" && (s.config.topology_manager_policy == "none" || s.config.topology_manager_policy == "best-effort"))
    advise("topologyManagerPolicy is " + s.config.topology_manager_policy +
           ": the kubelet admits pods whose CPUs and GPUs sit on different NUMA nodes; single-numa-node (or restricted) refuses them instead");
  bool smt = t.cores_known && std::any_of(t.cores.begin(), t.cores.end(), [](const topo::Core& c) { return c.pus.count() > 1; });
  if (policy == "static" && smt && s.config.cpu_manager_policy_options.count("full-pcpus-only") == 0)
    advise("SMT is on and cpuManagerPolicyOptions has no full-pcpus-only: \"true\": a container asking for an odd number of CPUs gets half a core, "
           "whose other half another container may get");
  if (s.config.reserved_system_cpus) {
    for (const auto& n : t.numa_nodes) {
      if (n.cpus.empty() || !n.cpus.is_subset_of(*s.config.reserved_system_cpus)) continue;
      std::vector<std::string> here = topo::gpus_on_node(t, n.os_index);
      if (here.empty()) continue;
      problem("reservedSystemCPUs " + s.config.reserved_system_cpus->to_list() + " hold every CPU of NUMA node " + std::to_string(n.os_index) +
              ", where GPU(s) " + join(here, ", ") + " are: no pod can get CPUs near them");
    }
  }
  std::vector<std::string> claims;
  for (const ContainerReport& c : r.containers)
    for (const DeviceView& g : c.gpus)
      if (!g.claim.empty() && std::find(claims.begin(), claims.end(), g.claim) == claims.end()) claims.push_back(g.claim);
  if (!claims.empty())
    advise("GPUs allocated through Dynamic Resource Allocation (claim" + std::string(claims.size() > 1 ? "s " : " ") + join(claims, ", ") +
           "): the kubelet's Topology Manager does not align DRA devices with the CPUs it gives (it takes hints from device "
           "plugins only), so CPUs on another NUMA node are likely; they are judged here like device-plugin GPUs");
  std::vector<std::string> unmatched;
  for (const ContainerReport& c : r.containers)
    for (const DeviceView& g : c.gpus)
      if (g.pci.empty()) unmatched.push_back(g.id);
  if (!unmatched.empty())
    advise(std::to_string(unmatched.size()) + " GPU id(s) of the device plugin match no GPU of the topology (" + unmatched.front() +
           (unmatched.size() > 1 ? ", ..." : "") +
           "): judged by the NUMA node the plugin reports; UUIDs come from NVML / ROCm SMI (this node's, or --gpu-runtime with a file)");
  std::set<std::string> said;
  for (const ContainerReport& c : r.containers)
    for (const DeviceView& g : c.gpus)
      if (g.plugin_numa && *g.plugin_numa >= 0 && g.numa_source == "topology" &&
          std::find(g.numa.begin(), g.numa.end(), unsigned(*g.plugin_numa)) == g.numa.end() && said.insert(g.id).second)
        problem("the device plugin reports " + device_name(g) + " on NUMA node " + std::to_string(*g.plugin_numa) +
                ", the topology on " + node_list(g.numa) + ": the Topology Manager aligns pods by the plugin's view");
}

}  // namespace

void apply_pod_resources(NodeState& s, const PodResources& api) {
  std::map<std::pair<std::string, std::string>, std::string> uid_of;  // (namespace, name) -> UID
  for (const auto& [uid, pod] : s.pods) uid_of[{pod.namespace_name, pod.name}] = uid;
  if (!s.cpu) s.cpu = CpuManagerState{s.config.cpu_manager_policy, {}, {}};
  s.cpu->exclusive.clear();
  std::map<std::string, std::vector<std::string>> registered = s.devices ? s.devices->registered : decltype(registered){};
  s.devices = DeviceCheckpoint{{}, registered};
  if (s.memory) s.memory->memory_nodes.clear();
  for (const PodResources::Pod& p : api.pods) {
    // The API names pods; the UID (for the checkpoints' and logs' sake) where /var/log/pods knows it.
    std::string key = p.namespace_name + "/" + p.name;
    if (auto u = uid_of.find({p.namespace_name, p.name}); u != uid_of.end()) key = u->second;
    s.pods[key] = {key, p.namespace_name, p.name};
    for (const PodResources::Container& c : p.containers) {
      if (!c.cpus.empty()) s.cpu->exclusive[key][c.name] = c.cpus;
      for (const Claim& claim : c.claims)
        for (const ClaimDevice& d : claim.devices)
          s.devices->assignments.push_back({key, c.name, d.driver, {dra_device(d)}, claim_id(claim)});
      for (const PodResources::Devices& d : c.devices) {
        DeviceAssignment a{key, c.name, d.resource, {}, ""};
        std::optional<int> node = d.numa.empty() ? std::nullopt : std::optional<int>(int(d.numa.front()));
        for (const std::string& id : d.ids) a.devices.push_back({id, node});
        s.devices->assignments.push_back(std::move(a));
      }
      if (!c.memory_numa.empty()) {
        if (!s.memory) s.memory = MemoryManagerState{s.config.memory_manager_policy, {}};
        std::vector<unsigned> nodes = c.memory_numa;
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
        s.memory->memory_nodes[key][c.name] = nodes;
      }
    }
  }
  s.assignments_from = "the pod-resources API";
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::aligned: return "ALIGNED";
    case Verdict::cross_numa: return "CROSS_NUMA";
    case Verdict::shared_cpus: return "SHARED_CPUS";
    case Verdict::no_exclusive_cpus: return "NO_EXCLUSIVE_CPUS";
    case Verdict::locality_unknown: return "LOCALITY_UNKNOWN";
  }
  return "?";
}

Report judge(NodeState state, const topo::Topology& t) {
  Report r;
  r.topology_origin = t.origin;
  // Containers given GPUs, with every device they were given.
  std::map<std::pair<std::string, std::string>, ContainerReport> by_container;
  std::vector<DeviceAssignment> assignments = state.devices ? state.devices->assignments : std::vector<DeviceAssignment>{};
  // The DRA checkpoint names pods, not containers: its claims are the pod's ("(claim NS/NAME)"),
  // judged against the CPUs of the pod's containers. The API's answer, when there is one, has them.
  if (state.dra && state.assignments_from != "the pod-resources API")
    for (const DraCheckpoint::Entry& e : state.dra->entries)
      for (const std::string& uid : e.pod_uids)
        for (const ClaimDevice& d : e.claim.devices)
          assignments.push_back({uid, std::string(kPodClaim) + claim_id(e.claim) + ")", d.driver, {dra_device(d)}, claim_id(e.claim)});
  for (const DeviceAssignment& a : assignments) {
    ContainerReport& c = by_container[{a.pod_uid, a.container}];
    c.pod_uid = a.pod_uid;
    c.container = a.container;
    bool gpu = a.claim.empty() ? is_gpu_resource(a.resource) : is_gpu_driver(a.resource);
    for (const Device& d : a.devices) (gpu ? c.gpus : c.other_devices).push_back(view_of(t, a.resource, d, a.claim));
  }
  std::string policy = effective_cpu_policy(state);
  CpuSet pool = state.cpu && !state.cpu->default_cpus.empty() ? state.cpu->default_cpus : t.cpus;
  for (auto& [key, c] : by_container) {
    if (c.gpus.empty()) continue;
    name_pod(c, state);
    if (state.cpu) {
      if (auto pod = state.cpu->exclusive.find(c.pod_uid); pod != state.cpu->exclusive.end()) {
        if (auto e = pod->second.find(c.container); e != pod->second.end()) {
          c.exclusive = true;
          c.cpus = e->second;
        } else if (c.container.starts_with(kPodClaim)) {
          for (const auto& [name, cpus] : pod->second) c.cpus |= cpus;  // a pod's claim: its containers' CPUs
          c.exclusive = !c.cpus.empty();
        }
      }
    }
    if (!c.exclusive) c.cpus = pool;
    c.cpu_nodes = topo::nodes_covering(t, c.cpus);
    std::set<unsigned> g;
    for (const DeviceView& d : c.gpus) g.insert(d.numa.begin(), d.numa.end());
    c.gpu_nodes.assign(g.begin(), g.end());
    if (state.memory)
      if (auto pod = state.memory->memory_nodes.find(c.pod_uid); pod != state.memory->memory_nodes.end())
        if (auto m = pod->second.find(c.container); m != pod->second.end() && !m->second.empty()) c.memory_nodes = m->second;
    r.containers.push_back(c);
  }
  std::sort(r.containers.begin(), r.containers.end(), [](const ContainerReport& a, const ContainerReport& b) {
    return std::tie(a.namespace_name, a.pod, a.pod_uid, a.container) < std::tie(b.namespace_name, b.pod, b.pod_uid, b.container);
  });
  // Every container with exclusive CPUs (those judged, then the others), for who holds what.
  std::vector<ContainerReport> holders = r.containers;
  if (state.cpu)
    for (const auto& [uid, containers] : state.cpu->exclusive)
      for (const auto& [name, cpus] : containers) {
        if (auto j = by_container.find({uid, name}); j != by_container.end() && !j->second.gpus.empty()) continue;
        ContainerReport h;
        h.pod_uid = uid;
        h.container = name;
        name_pod(h, state);
        h.exclusive = true;
        h.cpus = cpus;
        holders.push_back(h);
      }
  for (size_t i = 0; i < r.containers.size(); ++i) {
    ContainerReport& c = r.containers[i];
    if (!c.exclusive) {
      c.findings.push_back({Verdict::no_exclusive_cpus, policy == "none"
                              ? "the CPU manager policy is none: it shares " + cpu_list(c.cpus) + " with every container on the node"
                              : "no CPUs of its own (only a Guaranteed pod asking for whole CPUs gets them): it runs on the shared pool, " +
                                    cpu_list(c.cpus) + " on NUMA " + node_list(c.cpu_nodes)});
    } else {
      judge_alignment(c, t);
      judge_sharing(c, holders, t, state);
    }
    for (const DeviceView& g : c.gpus)
      if (g.numa.empty())
        c.findings.push_back({Verdict::locality_unknown,
                              "GPU " + device_name(g) + ": no NUMA node known (neither the topology nor the device plugin gives one)"});
  }
  r.state = std::move(state);
  node_findings(r, t);
  return r;
}

std::vector<Verdict> ContainerReport::verdicts() const {
  std::vector<Verdict> v;
  for (const Finding& f : findings)
    if (std::find(v.begin(), v.end(), f.verdict) == v.end()) v.push_back(f.verdict);
  if (v.empty()) v.push_back(Verdict::aligned);
  return v;
}

bool has_problems(const Report& r) {
  for (const ContainerReport& c : r.containers)
    if (!c.findings.empty()) return true;
  return std::any_of(r.findings.begin(), r.findings.end(), [](const NodeFinding& f) { return f.problem; });
}

}  // namespace gpubind::k8s
