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

// The PCI address a device name holds written with dashes ("0000-af-00-0", Intel's GPU names),
// as the topology writes it; "" when none.
std::string dashed_pci(const std::string& name) {
  for (size_t i = 0; i + 12 <= name.size(); ++i) {  // dddd-bb-dd-f
    std::string s = to_lower(name.substr(i, 12));
    if (s[4] == '-' && s[7] == '-' && s[10] == '-')
      return s.substr(0, 4) + ":" + s.substr(5, 2) + ":" + s.substr(8, 2) + "." + s.substr(11, 1);
  }
  return "";
}

// The topology's GPU a DRA driver's device is. Drivers name devices in their own pool: a PCI
// address written with dashes, or "gpu-N" for GPU index N of the driver's vendor (NVIDIA's and
// AMD's, "gpu-N-mig-..." for a MIG device of GPU N); a CDI id ("k8s.gpu.nvidia.com/device=gpu-0")
// names the same after its '='. The device's PCI address in the ResourceSlices, where read, decides.
const topo::Gpu* find_dra_gpu(const topo::Topology& t, const std::string& driver, const std::string& id, const SliceDevice* slice) {
  if (auto pci = slice ? pci_of(*slice) : std::nullopt)
    if (const topo::Gpu* g = topo::find_gpu(t, pci_address(*pci))) return g;
  std::string name = to_lower(id.substr(id.find('=') == std::string::npos ? 0 : id.find('=') + 1));
  if (const topo::Gpu* g = topo::find_gpu(t, dashed_pci(name))) return g;
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

// The NIC a DRA driver's device is: its PCI address in the slices (pci_of), else a PCI address in
// its name, else the interface it is named after.
const topo::Nic* find_dra_nic(const topo::Topology& t, const std::string& id, const SliceDevice* slice) {
  if (auto pci = slice ? pci_of(*slice) : std::nullopt)
    if (const topo::Nic* n = find_nic(t, *pci)) return n;
  std::string pci = dashed_pci(id);
  if (const topo::Nic* n = find_nic(t, pci.empty() ? id : pci)) return n;
  for (const auto& n : t.nics)  // DraNet names a device after its interface ("ib0")
    if (std::find(n.os_names.begin(), n.os_names.end(), id) != n.os_names.end()) return &n;
  return nullptr;
}

DeviceView view_of(const topo::Topology& t, const NodeState& s, const DeviceAssignment& a, const Device& d) {
  DeviceView v{a.resource, d.id, "", std::nullopt, {}, "", d.numa, a.claim};
  const SliceDevice* slice = a.claim.empty() ? nullptr : find_slice_device(s.slices, a.resource, a.pool, d.id);
  const topo::Gpu* gpu = a.claim.empty() ? find_gpu(t, a.resource, d.id) : find_dra_gpu(t, a.resource, d.id, slice);
  const topo::Nic* nic = gpu ? nullptr : a.claim.empty() ? find_nic(t, d.id) : find_dra_nic(t, d.id, slice);
  v.nic = nic != nullptr;
  auto place = [&](const topo::PciDevice& dev) {
    v.pci = dev.pci;
    if (dev.numa && !dev.numa->empty()) {
      v.numa = topo::nodes_with_cpus(t, *dev.numa);
      v.numa_source = "topology";
    }
  };
  if (gpu) {
    place(*gpu);
    v.index = gpu->index;
  } else if (nic) {
    place(*nic);
  }
  if (v.numa.empty() && d.numa && *d.numa >= 0) {
    v.numa = {unsigned(*d.numa)};
    v.numa_source = "device plugin";
  }
  if (v.numa.empty() && slice)
    for (const char* attribute : {kNumaNodeAttribute, "dra.net/numaNode"})
      if (auto n = slice->number(attribute); v.numa.empty() && n && *n >= 0) {
        v.numa = {unsigned(*n)};
        v.numa_source = "ResourceSlice";
      }
  return v;
}

// A dra.cpu device of a claim: its group's CPUs and the claim's CPUs, from the driver's CDI spec
// (by the claim's UID), else for an individual CPU the slices' dra.cpu/cpuID.
CpuClaimView cpu_claim_view(const topo::Topology& t, const NodeState& s, const DeviceAssignment& a, const Device& d) {
  CpuClaimView v{a.claim, a.claim_uid, d.id, cpu_device_group(d.id), {}, std::nullopt, ""};
  if (v.group) {
    using Kind = CpuDeviceGroup::Kind;
    if (v.group->kind == Kind::machine) v.group_cpus = t.cpus;
    if (v.group->kind == Kind::numa)
      if (const topo::NumaNode* n = topo::find_numa(t, *v.group->id)) v.group_cpus = n->cpus;
    if (v.group->kind == Kind::socket)
      for (const auto& p : t.packages)
        if (p.os_index == *v.group->id) v.group_cpus = p.cpus;
  }
  if (auto c = s.cpu_claims.find(a.claim_uid); !a.claim_uid.empty() && c != s.cpu_claims.end()) {
    v.cpus = c->second;
    v.cpus_source = "CDI spec";
  } else if (const SliceDevice* slice = find_slice_device(s.slices, a.resource, a.pool, d.id)) {
    if (auto cpu = slice->number("dra.cpu/cpuID"); cpu && *cpu >= 0 && *cpu < (1 << 20)) {
      v.cpus = CpuSet();
      v.cpus->set(unsigned(*cpu));
      v.cpus_source = "ResourceSlice";
    }
  }
  if (v.group && v.group->kind == CpuDeviceGroup::Kind::cpu && v.cpus) v.group_cpus = *v.cpus;
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

// Why a container's dra.cpu claim left its CPUs off its GPUs' nodes, and what places them: the
// driver takes a claim's CPUs anywhere in the group the scheduler picked, and a group wider than a
// NUMA node (a socket's, the machine's) matches any root or socket of its nodes.
std::string cpu_claim_hint(const ContainerReport& c, const topo::Topology& t) {
  std::set<unsigned> gpu_nodes(c.gpu_nodes.begin(), c.gpu_nodes.end());
  auto near = [&](const CpuSet& cpus) {
    std::vector<unsigned> nodes = topo::nodes_covering(t, cpus);
    return std::all_of(nodes.begin(), nodes.end(), [&](unsigned n) { return gpu_nodes.count(n) > 0; });
  };
  if (std::all_of(c.cpu_claims.begin(), c.cpu_claims.end(), [&](const CpuClaimView& k) { return k.cpus && near(*k.cpus); })) return "";
  for (const CpuClaimView& k : c.cpu_claims) {
    if (!k.group || (k.cpus && near(*k.cpus))) continue;
    using Kind = CpuDeviceGroup::Kind;
    std::vector<unsigned> nodes = topo::nodes_covering(t, k.group_cpus);
    if ((k.group->kind == Kind::socket || k.group->kind == Kind::machine) && nodes.size() > 1)
      return "claim " + k.claim + " took its CPUs from the driver's group " + k.device + " (NUMA " + node_list(nodes) +
             "), which a match on resource.kubernetes.io/pcieRoot or socket picks for any root of those nodes, and the driver chose "
             "CPUs anywhere in it; constrain the claim with matchAttribute: resource.kubernetes.io/numaNode over its GPU and CPU "
             "requests, or run the driver with groupBy: numanode";
    if (k.group->kind == Kind::numa)
      return "claim " + k.claim + " took its CPUs from the driver's group " + k.device + " (NUMA node " + std::to_string(*k.group->id) +
             "): nothing tied it to its GPUs' node; one ResourceClaim with the GPU and CPU requests and matchAttribute: "
             "resource.kubernetes.io/numaNode places them together";
  }
  if (c.cpu_claims.empty()) return "";
  return "claim " + c.cpu_claims.front().claim +
         "'s CPUs were not constrained to its GPUs' node: one ResourceClaim with the GPU and CPU requests and matchAttribute: "
         "resource.kubernetes.io/numaNode (or pcieRoot, in individual mode) places them together";
}

// For a CPU-manager container whose GPUs and CPUs span NUMA nodes farther apart than the nearest
// pair: the Topology Manager option that keeps such a container on the nearest nodes.
std::string closest_nodes_hint(const ContainerReport& c, const topo::Topology& t, const NodeState& s) {
  if (s.config.topology_manager_policy_options.count("prefer-closest-numa-nodes")) return "";
  std::set<unsigned> nodes(c.cpu_nodes.begin(), c.cpu_nodes.end());
  nodes.insert(c.gpu_nodes.begin(), c.gpu_nodes.end());
  std::optional<unsigned> nearest, widest;
  for (const auto& a : t.numa_nodes)
    for (const auto& b : t.numa_nodes) {
      auto d = a.os_index == b.os_index || a.cpus.empty() || b.cpus.empty() ? std::nullopt : topo::numa_distance(t, a.os_index, b.os_index);
      if (!d) continue;
      if (!nearest || *d < *nearest) nearest = d;
      if (nodes.count(a.os_index) && nodes.count(b.os_index) && (!widest || *d > *widest)) widest = d;
    }
  if (!nearest || !widest || *widest <= *nearest) return "";
  return "its nodes are " + std::to_string(*widest) + " apart where the nearest are " + std::to_string(*nearest) +
         "; topologyManagerPolicyOptions prefer-closest-numa-nodes: \"true\" keeps a container that must span nodes on the nearest ones";
}

// NICs given with its GPUs on none of their nodes: GPUDirect RDMA and NCCL's proxy cross the
// inter-socket link.
void judge_nics(ContainerReport& c) {
  std::set<unsigned> gpu_nodes(c.gpu_nodes.begin(), c.gpu_nodes.end());
  if (gpu_nodes.empty()) return;
  for (const DeviceView& n : c.other_devices) {
    if (!n.nic || n.numa.empty() || std::any_of(n.numa.begin(), n.numa.end(), [&](unsigned x) { return gpu_nodes.count(x) > 0; })) continue;
    std::string fix = n.claim.empty() ? "the Topology Manager places device-plugin NICs with GPUs under topologyManagerPolicy "
                                        "single-numa-node (scope pod across containers)"
                                      : "one ResourceClaim with the GPU and NIC requests and matchAttribute: "
                                        "resource.kubernetes.io/pcieRoot (or numaNode) places them together";
    c.findings.push_back({Verdict::remote_nic, "NIC " + device_name(n) + " is on NUMA " + node_list(n.numa) + ", its GPUs on " +
                                                   node_list(c.gpu_nodes) + ": " + fix});
  }
}

// Its cgroup allowing CPUs beyond the exclusive ones it was given: whoever should have narrowed it
// did not, and it runs on shared CPUs.
void judge_cgroup(ContainerReport& c) {
  if (!c.given_cpus) return;
  CpuSet extra = c.cpus - *c.given_cpus;
  if (extra.empty()) return;
  bool claim = c.cpus_source == "cgroup" && !c.cpu_claims.empty();
  c.findings.push_back(
      {Verdict::shared_cpus,
       "its cgroup allows " + cpu_list(extra) + " beyond the " + cpu_list(*c.given_cpus) +
           (claim ? " of its dra.cpu claim: the driver's NRI plugin has not pinned it (is NRI enabled in the container runtime?)"
                  : " the CPU manager gave it: the kubelet has not applied its assignment")});
}

// CPUs spread over more L3 caches (uncore caches: an AMD CCD, an Intel SNC domain's share) than
// they fit in, node by node: threads of one worker then share no cache.
void judge_uncore(ContainerReport& c, const topo::Topology& t, const NodeState& s) {
  if (t.l3_domains.empty()) return;
  unsigned touched = 0, needed = 0;
  std::vector<std::string> parts;
  for (unsigned node : c.cpu_nodes) {
    const topo::NumaNode* n = topo::find_numa(t, node);
    if (!n) continue;
    CpuSet mine = c.cpus & n->cpus;
    std::vector<unsigned> sizes;
    for (const topo::L3Domain& l3 : t.l3_domains) {
      CpuSet here = l3.cpus & n->cpus;
      if (here.empty()) continue;
      sizes.push_back(unsigned(here.count()));
      if (here.intersects(mine)) {
        ++touched;
        parts.push_back((here & mine).to_list());
      }
    }
    std::sort(sizes.rbegin(), sizes.rend());
    size_t held = 0;
    for (unsigned size : sizes) {
      if (held >= mine.count()) break;
      held += size;
      ++needed;
    }
  }
  if (touched <= needed) return;
  std::string fix;
  if (!c.cpu_claims.empty())
    fix =
        "the CPU DRA driver prefers whole L3s but takes what is free; in individual mode matchAttribute: dra.cpu/cacheL3ID keeps a "
        "claim's CPUs in one";
  else if (s.config.cpu_manager_policy_options.count("prefer-align-cpus-by-uncorecache"))
    fix = "the kubelet prefers whole L3s already (prefer-align-cpus-by-uncorecache) and took what was free";
  else fix = "cpuManagerPolicyOptions prefer-align-cpus-by-uncorecache: \"true\" makes the kubelet take whole L3s first";
  c.findings.push_back({Verdict::split_l3, std::to_string(c.cpus.count()) + " CPUs spread over " + std::to_string(touched) +
                                               " L3 caches (" + join(parts, " | ") + ") where " + std::to_string(needed) +
                                               " would hold them: " + fix});
}

void judge_alignment(ContainerReport& c, const topo::Topology& t, const NodeState& s) {
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
  std::string hint = c.given_cpus           ? "its cgroup allows more CPUs than it was given (SHARED_CPUS below)"
                     : c.cpu_claims.empty() ? closest_nodes_hint(c, t, s)
                                            : cpu_claim_hint(c, t);
  if (!found.empty() && !hint.empty()) found.front() += ": " + hint;
  for (auto& f : found) c.findings.push_back({Verdict::cross_numa, std::move(f)});
}

void judge_sharing(ContainerReport& c, const std::vector<ContainerReport>& all, const topo::Topology& t, const NodeState& s) {
  std::vector<std::string> found;
  const CpuSet given = c.given_cpus.value_or(c.cpus);  // what it was given: a wider cgroup is judged apart
  for (const ContainerReport& o : all) {
    if (same(o, c) || !o.exclusive) continue;
    CpuSet both = o.cpus & given;
    if (!both.empty()) found.push_back(cpu_list(both) + (both.count() == 1 ? " is" : " are") + " also given to " + who(o));
  }
  if (s.config.reserved_system_cpus) {
    CpuSet both = *s.config.reserved_system_cpus & given;
    if (!both.empty()) found.push_back(cpu_list(both) + (both.count() == 1 ? " is" : " are") + " also reserved for the system (reservedSystemCPUs)");
  }
  if (t.cores_known) {
    // Siblings of its CPUs that are not its own: whose they are (another container's or the pool's).
    std::map<std::string, std::pair<CpuSet, CpuSet>> by_owner;  // owner -> (its CPUs, their CPUs)
    for (const auto& core : t.cores) {
      if (!core.pus.intersects(given) || core.pus.is_subset_of(given)) continue;
      CpuSet siblings = core.pus - given;
      for (unsigned pu : siblings.ids()) {
        std::string owner = "the shared pool";
        for (const ContainerReport& o : all)
          if (!same(o, c) && o.exclusive && o.cpus.test(pu)) owner = who(o);
        auto& [mine, theirs] = by_owner[owner];
        mine |= core.pus & given;
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

// A DRA claim's UID: the checkpoint's, else the one in a dra.cpu CDI id.
std::string claim_uid_of(const Claim& c, const ClaimDevice& d) {
  if (!c.uid.empty()) return c.uid;
  for (const std::string& id : d.cdi)
    if (std::string uid = cpu_claim_uid_of_cdi(id); !uid.empty()) return uid;
  return "";
}

// Every device assignment: the device plugins' (or the API's), and the DRA checkpoint's claims as
// their pods' "(claim NS/NAME)" rows, judged against the CPUs of the pod's containers (the
// checkpoint names pods, not containers; the API's answer, when there is one, names them).
std::vector<DeviceAssignment> assignments_of(const NodeState& s) {
  std::vector<DeviceAssignment> out = s.devices ? s.devices->assignments : std::vector<DeviceAssignment>{};
  if (s.dra && s.assignments_from != "the pod-resources API")
    for (const DraCheckpoint::Entry& e : s.dra->entries)
      for (const std::string& uid : e.pod_uids)
        for (const ClaimDevice& d : e.claim.devices)
          out.push_back({uid,
                         std::string(kPodClaim) + claim_id(e.claim) + ")",
                         d.driver,
                         {dra_device(d)},
                         claim_id(e.claim),
                         d.pool,
                         claim_uid_of(e.claim, d)});
  return out;
}

// The cgroup read for a container; for a pod's claim (the DRA checkpoint's row), the pod's one
// container whose cgroup was read, when it has one only. nullptr: none.
const NodeState::CgroupCpus* cgroup_of(const ContainerReport& c, const NodeState& s) {
  if (!c.container.starts_with(kPodClaim)) {
    auto cg = s.container_cpus.find({c.pod_uid, c.container});
    return cg == s.container_cpus.end() ? nullptr : &cg->second;
  }
  const NodeState::CgroupCpus* found = nullptr;
  for (auto cg = s.container_cpus.lower_bound({c.pod_uid, ""}); cg != s.container_cpus.end() && cg->first.first == c.pod_uid; ++cg) {
    if (found) return nullptr;
    found = &cg->second;
  }
  return found;
}

// The CPUs a container runs on: its cgroup's where read, else the exclusive CPUs the CPU manager or
// its (pod's) dra.cpu claims gave it, else the shared pool; and the nodes of its CPUs, GPUs, memory.
void assign_cpus(ContainerReport& c, const std::vector<ContainerReport>& rows, const NodeState& s, const topo::Topology& t) {
  std::optional<CpuSet> given;
  std::string source;
  if (s.cpu)
    if (auto pod = s.cpu->exclusive.find(c.pod_uid); pod != s.cpu->exclusive.end()) {
      if (auto e = pod->second.find(c.container); e != pod->second.end()) given = e->second;
      else if (c.container.starts_with(kPodClaim))
        for (const auto& [name, cpus] : pod->second) given = given.value_or(CpuSet()) | cpus;  // a pod's claim: its containers' CPUs
      if (given) source = "CPU manager";
    }
  std::vector<CpuClaimView> claims;
  for (const ContainerReport& o : rows)
    if (same(o, c))
      for (const CpuClaimView& k : o.cpu_claims)
        if (std::none_of(claims.begin(), claims.end(), [&](const CpuClaimView& x) { return x.claim == k.claim && x.device == k.device; }))
          claims.push_back(k);
  c.cpu_claims = claims;
  for (const CpuClaimView& k : claims)
    if (k.cpus) {
      given = given.value_or(CpuSet()) | *k.cpus;
      source = "dra.cpu claim";
    }
  c.exclusive = given && !given->empty();
  CpuSet pool = s.cpu && !s.cpu->default_cpus.empty() ? s.cpu->default_cpus : t.cpus;
  c.cpus = c.exclusive ? *given : pool;
  c.cpus_source = c.exclusive ? source : "shared pool";
  if (const NodeState::CgroupCpus* cg = cgroup_of(c, s)) {
    if (c.exclusive && cg->cpus != c.cpus) c.given_cpus = c.cpus;
    c.exclusive = c.exclusive || !claims.empty();  // the driver's NRI plugin pinned the cgroup to the claim's CPUs
    c.cpus = cg->cpus;
    c.cpus_source = "cgroup";
  }
  c.cpu_nodes = topo::nodes_covering(t, c.cpus);
  std::set<unsigned> g;
  for (const DeviceView& d : c.gpus) g.insert(d.numa.begin(), d.numa.end());
  c.gpu_nodes.assign(g.begin(), g.end());
  if (s.memory)
    if (auto pod = s.memory->memory_nodes.find(c.pod_uid); pod != s.memory->memory_nodes.end())
      if (auto m = pod->second.find(c.container); m != pod->second.end() && !m->second.empty()) c.memory_nodes = m->second;
}

void judge_container(ContainerReport& c, const std::vector<ContainerReport>& holders, const NodeState& s, const topo::Topology& t) {
  std::string policy = effective_cpu_policy(s);
  if (!c.exclusive && !c.cpu_claims.empty()) {
    c.findings.push_back({Verdict::locality_unknown, "the CPUs of its dra.cpu claim " + c.cpu_claims.front().claim +
                                                         " are unknown: no CDI spec of the driver names them and its cgroup was not read"});
  } else if (!c.exclusive && !s.cpu_driver.empty()) {
    c.findings.push_back({Verdict::no_exclusive_cpus, "no dra.cpu claim: the CPU DRA driver keeps it on its shared pool, " +
                                                          cpu_list(c.cpus) + " on NUMA " + node_list(c.cpu_nodes) +
                                                          "; a CPU request in its GPU's ResourceClaim with matchAttribute: "
                                                          "resource.kubernetes.io/numaNode gives it CPUs of its own beside the GPU"});
  } else if (!c.exclusive) {
    c.findings.push_back({Verdict::no_exclusive_cpus,
                          policy == "none"
                              ? "the CPU manager policy is none: it shares " + cpu_list(c.cpus) + " with every container on the node"
                              : "no CPUs of its own (only a Guaranteed pod asking for whole CPUs gets them): it runs on the shared pool, " +
                                    cpu_list(c.cpus) + " on NUMA " + node_list(c.cpu_nodes)});
  } else {
    judge_alignment(c, t, s);
  }
  judge_nics(c);
  if (c.exclusive) {
    judge_cgroup(c);
    judge_sharing(c, holders, t, s);
    judge_uncore(c, t, s);
  }
  for (const DeviceView& g : c.gpus)
    if (g.numa.empty())
      c.findings.push_back({Verdict::locality_unknown,
                            "GPU " + device_name(g) + ": no NUMA node known (neither the topology nor the device plugin gives one)"});
}

void node_findings(Report& r, const topo::Topology& t) {
  const NodeState& s = r.state;
  std::string policy = effective_cpu_policy(s);
  auto advise = [&](std::string text) { r.findings.push_back({false, std::move(text)}); };
  auto problem = [&](std::string text) { r.findings.push_back({true, std::move(text)}); };
  if (s.cpu && s.config.found && s.cpu->policy != s.config.cpu_manager_policy)
    problem("cpu_manager_state was written under the CPU manager policy \"" + s.cpu->policy + "\", config.yaml asks for \"" +
            s.config.cpu_manager_policy + "\": the kubelet will not start until the node is drained and the file removed");
  bool gpu_pods = !r.containers.empty();
  if (auto refused = topology_manager_refusal(s.config, t)) problem(*refused);
  if (!s.cpu_driver.empty() && policy == "static")
    problem("the CPU DRA driver (dra.cpu) runs here (" + s.cpu_driver +
            ") beside cpuManagerPolicy static: both set containers' CPUs and undo each other's; the driver needs cpuManagerPolicy: none");
  if (policy == "none" && gpu_pods && s.cpu_driver.empty())
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
  std::vector<std::string> claims;  // DRA GPUs' claims in containers whose CPUs no dra.cpu claim gave
  for (const ContainerReport& c : r.containers)
    for (const DeviceView& g : c.gpus)
      if (!g.claim.empty() && c.cpu_claims.empty() && std::find(claims.begin(), claims.end(), g.claim) == claims.end())
        claims.push_back(g.claim);
  if (!claims.empty())
    advise("GPUs allocated through Dynamic Resource Allocation (claim" + std::string(claims.size() > 1 ? "s " : " ") + join(claims, ", ") +
           "): the kubelet's Topology Manager does not align DRA devices with the CPUs it gives (it takes hints from device "
           "plugins only), so CPUs on another NUMA node are likely; they are judged here like device-plugin GPUs" +
           (s.cpu_driver.empty()
                ? ""
                : " (a dra.cpu request in the GPU's claim with matchAttribute: resource.kubernetes.io/numaNode aligns them)"));
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
          s.devices->assignments.push_back({key, c.name, d.driver, {dra_device(d)}, claim_id(claim), d.pool, claim_uid_of(claim, d)});
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
    case Verdict::remote_nic: return "REMOTE_NIC";
    case Verdict::split_l3: return "SPLIT_L3";
    case Verdict::shared_cpus: return "SHARED_CPUS";
    case Verdict::no_exclusive_cpus: return "NO_EXCLUSIVE_CPUS";
    case Verdict::locality_unknown: return "LOCALITY_UNKNOWN";
  }
  return "?";
}

Report judge(NodeState state, const topo::Topology& t) {
  Report r;
  r.topology_origin = t.origin;
  // Containers given devices, with every device they were given.
  std::map<std::pair<std::string, std::string>, ContainerReport> by_container;
  for (const DeviceAssignment& a : assignments_of(state)) {
    ContainerReport& c = by_container[{a.pod_uid, a.container}];
    c.pod_uid = a.pod_uid;
    c.container = a.container;
    for (const Device& d : a.devices) {
      if (!a.claim.empty() && is_cpu_driver(a.resource)) c.cpu_claims.push_back(cpu_claim_view(t, state, a, d));
      else if (a.claim.empty() ? is_gpu_resource(a.resource) : is_gpu_driver(a.resource)) c.gpus.push_back(view_of(t, state, a, d));
      else c.other_devices.push_back(view_of(t, state, a, d));
    }
  }
  std::vector<ContainerReport> rows;
  for (auto& [key, c] : by_container) rows.push_back(c);
  for (ContainerReport& c : rows) {
    name_pod(c, state);
    assign_cpus(c, rows, state, t);
  }
  // Every container with CPUs of its own (judged or not), for who holds what; then those given GPUs.
  std::vector<ContainerReport> holders;  // each with the CPUs it was given
  for (const ContainerReport& c : rows)
    if (c.exclusive) {
      holders.push_back(c);
      holders.back().cpus = c.given_cpus.value_or(c.cpus);
    }
  if (state.cpu)
    for (const auto& [uid, containers] : state.cpu->exclusive)
      for (const auto& [name, cpus] : containers) {
        if (auto j = by_container.find({uid, name}); j != by_container.end()) continue;
        ContainerReport h;
        h.pod_uid = uid;
        h.container = name;
        name_pod(h, state);
        h.exclusive = true;
        h.cpus = cpus;
        holders.push_back(h);
      }
  for (ContainerReport& c : rows)
    if (!c.gpus.empty()) r.containers.push_back(std::move(c));
  std::sort(r.containers.begin(), r.containers.end(), [](const ContainerReport& a, const ContainerReport& b) {
    return std::tie(a.namespace_name, a.pod, a.pod_uid, a.container) < std::tie(b.namespace_name, b.pod, b.pod_uid, b.container);
  });
  for (ContainerReport& c : r.containers) judge_container(c, holders, state, t);
  r.state = std::move(state);
  node_findings(r, t);
  return r;
}

std::optional<std::string> topology_manager_refusal(const KubeletConfig& c, const topo::Topology& t) {
  if (c.topology_manager_policy == "none") return std::nullopt;
  size_t most = 8;
  if (auto o = c.topology_manager_policy_options.find("max-allowable-numa-nodes"); o != c.topology_manager_policy_options.end())
    if (auto n = parse_uint(o->second)) most = size_t(*n);
  if (t.numa_nodes.size() <= most) return std::nullopt;
  return "topologyManagerPolicy " + c.topology_manager_policy + " on " + std::to_string(t.numa_nodes.size()) +
         " NUMA nodes, more than the " + std::to_string(most) +
         " the Topology Manager allows: the kubelet does not start; topologyManagerPolicyOptions max-allowable-numa-nodes: \"" +
         std::to_string(t.numa_nodes.size()) + "\" lets it (its hint computation grows with the nodes)";
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
