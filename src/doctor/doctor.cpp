#include "doctor/doctor.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "k8s/judge.hpp"
#include "plan/slurm_node.hpp"
#include "util/strings.hpp"

namespace gpubind::doctor {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::ok: return "OK";
    case Severity::warn: return "WARN";
    case Severity::fail: return "FAIL";
  }
  return "?";
}

Severity Report::worst() const {
  Severity w = Severity::ok;
  for (const CheckResult& r : results) w = std::max(w, r.severity);
  return w;
}

namespace {

CheckResult ok(const std::string& check, const std::string& why) { return {check, Severity::ok, why, ""}; }

// The CPUs of the NUMA nodes of the topology's GPUs (their locality), and the GPUs named.
struct GpuCpus {
  CpuSet cpus;
  std::vector<std::string> gpus;
};
GpuCpus gpu_cpus(const topo::Topology& t) {
  GpuCpus g;
  for (const topo::Gpu& gpu : t.gpus)
    if (gpu.numa) {
      g.cpus |= topo::cpus_of_nodes(t, topo::nodes_with_cpus(t, *gpu.numa));
      g.gpus.push_back(gpu.pci);
    }
  return g;
}

// A GPU or NIC of the topology by PCI address: its kind ("GPU", "NIC") and locality.
struct Device {
  std::string kind;
  const topo::PciDevice* dev = nullptr;
};
Device device(const topo::Topology& t, const std::string& pci) {
  if (const topo::Gpu* g = topo::find_gpu(t, pci)) return {"GPU", g};
  for (const topo::Nic& n : t.nics)
    if (n.pci == pci) return {"NIC", &n};
  return {"device", nullptr};
}
// The CPUs of a device's NUMA node(s), nullopt when its locality is unknown.
std::optional<CpuSet> node_cpus(const topo::Topology& t, const topo::PciDevice* d) {
  if (!d || !d->numa) return std::nullopt;
  CpuSet c = topo::cpus_of_nodes(t, topo::nodes_with_cpus(t, *d->numa));
  if (c.empty()) return std::nullopt;
  return c;
}
std::string nodes_of(const topo::Topology& t, const CpuSet& cpus) {
  std::vector<unsigned> n = topo::nodes_covering(t, cpus);
  return n.empty() ? "?" : join_numbers(n);
}

std::string gpu_word(const topo::Topology& t) { return t.gpus.empty() ? "the ranks' CPUs" : "on the GPUs' nodes"; }

CheckResult numa_balancing(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "numa_balancing";
  if (topo::cpu_numa_nodes(t).size() < 2) return ok(id, "one NUMA node with CPUs: there is nothing to balance");
  if (!f.numa_balancing) return ok(id, "kernel.numa_balancing is not in this kernel (no /proc/sys/kernel/numa_balancing)");
  if (*f.numa_balancing == 0) return ok(id, "kernel.numa_balancing=0");
  return {id, Severity::warn,
          "kernel.numa_balancing=" + std::to_string(*f.numa_balancing) +
              ": the kernel unmaps the ranks' pages to sample where they are touched and migrates pages (and nudges tasks) "
              "toward the toucher: bound ranks take the page faults, and a rank's shared buffers move between nodes",
          "sysctl -w kernel.numa_balancing=0, and the same in /etc/sysctl.d/ (gpubind binds memory to the GPU's node itself)"};
}

CheckResult isolcpus(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "isolcpus";
  if (!f.isolated) return ok(id, "no isolated CPUs known (/sys/devices/system/cpu/isolated absent)");
  if (f.isolated->empty()) return ok(id, "no CPU is isolated from the scheduler's load balancing");
  GpuCpus g = gpu_cpus(t);
  CpuSet near = g.cpus.empty() ? t.cpus : g.cpus;
  CpuSet both = *f.isolated & near;
  if (both.empty())
    return ok(id, "CPUs " + f.isolated->to_list() + " are isolated (isolcpus), none on the GPUs' nodes: housekeeping stays off the ranks");
  return {id, Severity::warn,
          "CPUs " + both.to_list() + ", " + gpu_word(t) + ", are isolated (isolcpus): the scheduler does not balance threads "
              "across them, so a multi-threaded rank given several runs every thread it does not pin on the first",
          "pin each of the rank's threads (OMP_PROC_BIND=close with OMP_PLACES=cores, or per-thread affinity), or boot "
          "without isolcpus domain isolation on the ranks' CPUs (nohz_full alone keeps balancing)"};
}

CheckResult nohz_full(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "nohz_full";
  if (!f.nohz_full || f.nohz_full->empty()) return ok(id, "no adaptive-tick (nohz_full) CPUs");
  CpuSet housekeeping = t.cpus - *f.nohz_full;
  if (housekeeping.empty())
    return {id, Severity::fail, "every CPU is nohz_full: none is left for timers, RCU callbacks and kernel threads",
            "leave at least one core per package out of nohz_full= for housekeeping"};
  bool rcu = f.cmdline && (f.cmdline->find("rcu_nocbs=") != std::string::npos || f.cmdline->find("rcu_nocb_poll") != std::string::npos);
  if (!rcu && f.cmdline)
    return {id, Severity::warn,
            "CPUs " + f.nohz_full->to_list() + " are nohz_full without rcu_nocbs= on the command line: RCU callbacks still run on them",
            "add rcu_nocbs=" + f.nohz_full->to_list() + " to the kernel command line (Linux offloads them itself only with CONFIG_RCU_NOCB_CPU_DEFAULT_ALL)"};
  return ok(id, "CPUs " + f.nohz_full->to_list() + " are nohz_full; housekeeping on " + housekeeping.to_list());
}

// The release the node runs (slurmd -V, --slurm-version), else the newest, and whether it is known.
std::pair<plan::SlurmVersion, bool> slurm_release(const NodeFacts& f) {
  if (f.slurm_version)
    if (auto parsed = plan::parse_slurm_version(*f.slurm_version)) return {*parsed, true};
  return {plan::newest_slurm(), false};
}

// The node as slurmctld divides it: what slurmd counts under the node's socket definition, and
// the sockets of its NodeName= line (else that count) in Slurm's core numbering.
struct SlurmShape {
  plan::SlurmSockets counted, configured;
  unsigned threads = 1;
};
SlurmShape slurm_shape(const topo::Topology& t, const NodeFacts& f, const plan::SlurmVersion& v) {
  std::string params = f.slurmd_parameters + "," + (plan::slurm_node_parameters(v) ? f.slurm_node_parameters : std::string());
  plan::SlurmSocket def = params.find("l3cache_as_socket") != std::string::npos     ? plan::SlurmSocket::l3cache
                          : params.find("numa_node_as_socket") != std::string::npos ? plan::SlurmSocket::numa_node
                                                                                    : plan::SlurmSocket::package;
  SlurmShape s;
  s.counted = plan::slurm_sockets(t, def);
  unsigned sockets = f.slurm_sockets.value_or(unsigned(s.counted.sockets.size()));
  s.configured.cores_per_socket = f.slurm_cores_per_socket.value_or(s.counted.cores_per_socket);
  for (unsigned i = 0; i < sockets && s.configured.cores_per_socket; ++i)
    s.configured.sockets.push_back(CpuSet::range(i * s.configured.cores_per_socket, (i + 1) * s.configured.cores_per_socket - 1));
  s.threads = std::max(1u, f.slurm_threads_per_core.value_or(s.counted.threads_per_core));
  return s;
}

// This machine's CPUs of Slurm's core ids (hwloc's logical core order); ids beyond its cores in
// `beyond`.
CpuSet cpus_of_slurm_cores(const topo::Topology& t, const CpuSet& cores, std::vector<unsigned>& beyond) {
  CpuSet out;
  std::vector<unsigned> logical = topo::logical_core_ids(t);
  std::vector<const topo::Core*> by_logical(t.cores.size());
  for (size_t i = 0; i < t.cores.size(); ++i) by_logical[logical[i]] = &t.cores[i];
  for (unsigned id : cores.ids()) {
    if (id < by_logical.size()) out |= by_logical[id]->pus;
    else beyond.push_back(id);
  }
  return out;
}

// Slurm's CpuSpecList (abstract CPU ids, numbered core by core in Slurm's core order: the ids of
// one core's threads are consecutive) as this machine's CPUs; ids beyond the machine in `beyond`.
CpuSet slurm_spec_cpus(const topo::Topology& t, const std::string& list, std::vector<unsigned>& beyond) {
  auto ids = CpuSet::parse_list(list);
  if (!ids || t.cores.empty()) return {};
  unsigned threads = 1;
  for (const topo::Core& c : t.cores) threads = std::max(threads, unsigned(c.pus.count()));
  std::vector<unsigned> cores_beyond;
  CpuSet out = cpus_of_slurm_cores(t, plan::slurm_cpu_spec_cores(*ids, threads), cores_beyond);
  for (unsigned id : ids->ids())
    if (std::find(cores_beyond.begin(), cores_beyond.end(), id / threads) != cores_beyond.end()) beyond.push_back(id);
  return out;
}

CheckResult housekeeping(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "housekeeping";
  // The CPUs kept from jobs, by whom.
  CpuSet kept;
  std::vector<std::string> keepers;
  std::vector<unsigned> beyond;
  if (!f.slurm_cpu_spec_list.empty()) {
    CpuSet slurm = slurm_spec_cpus(t, f.slurm_cpu_spec_list, beyond);
    kept |= slurm;
    keepers.push_back("Slurm's CpuSpecList=" + f.slurm_cpu_spec_list + " (CPUs " + slurm.to_list() + ")");
  } else if (f.slurm_core_spec_count && *f.slurm_core_spec_count > 0) {
    // slurmctld's choice on the node line's sockets (the last core of each in turn).
    SlurmShape s = slurm_shape(t, f, slurm_release(f).first);
    CpuSet cores = plan::slurm_core_spec_cores(unsigned(s.configured.sockets.size()), s.configured.cores_per_socket,
                                               *f.slurm_core_spec_count, f.slurm_spec_cores_first);
    CpuSet slurm = cpus_of_slurm_cores(t, cores, beyond);
    kept |= slurm;
    keepers.push_back("Slurm's CoreSpecCount=" + std::to_string(*f.slurm_core_spec_count) + " (cores " + cores.to_list() + ", CPUs " +
                      slurm.to_list() + ")");
  }
  if (f.kubelet && f.kubelet->reserved_system_cpus && !f.kubelet->reserved_system_cpus->empty()) {
    kept |= *f.kubelet->reserved_system_cpus;
    keepers.push_back("the kubelet's reservedSystemCPUs=" + f.kubelet->reserved_system_cpus->to_list());
  }
  // A set kept from jobs that holds every CPU of a GPU's node leaves its ranks none nearby.
  for (const topo::NumaNode& n : t.numa_nodes) {
    if (n.cpus.empty() || kept.empty() || !n.cpus.is_subset_of(kept)) continue;
    std::vector<std::string> here = topo::gpus_on_node(t, n.os_index);
    if (!here.empty())
      return {id, Severity::fail,
              join(keepers, " and ") + " keep every CPU of NUMA node " + std::to_string(n.os_index) + " from jobs, where GPU(s) " +
                  join(here, ", ") + " are: their ranks get CPUs of another node only",
              "keep one or two cores per package for the system (the first of each socket), never a GPU's whole node"};
  }
  std::string where = beyond.empty() ? "" : "; CpuSpecList ids " + join_numbers(beyond) + " are beyond this machine's cores";
  const std::optional<CpuSet>& services = f.systemd_cpu_affinity;
  if (services && !kept.empty() && !services->is_subset_of(kept))
    return {id, Severity::warn,
            "system services run on CPUs " + services->to_list() + " (CPUAffinity= in " + f.systemd_conf + "), and CPUs " +
                (*services - kept).to_list() + " of them go to jobs too (" + join(keepers, ", ") + " keep " + kept.to_list() + ")" + where,
            "make them one set: CPUAffinity=" + kept.to_list() + " in /etc/systemd/system.conf, or keep the services' CPUs from jobs"};
  if (!services && !keepers.empty())
    return {id, Severity::warn,
            join(keepers, " and ") + " keep CPUs from jobs, but system services are not confined to them (no CPUAffinity= in "
                                     "/etc/systemd/system.conf): daemons still run on the ranks' CPUs" + where,
            "CPUAffinity=" + (kept.empty() ? std::string("<the kept CPUs>") : kept.to_list()) +
                " in /etc/systemd/system.conf (then systemctl daemon-reexec), so services stay on the CPUs jobs never get"};
  if (services && keepers.empty() && (f.slurm_task_plugin || f.kubelet))
    return {id, Severity::warn,
            "system services run on CPUs " + services->to_list() + " (CPUAffinity= in " + f.systemd_conf + "), but " +
                (f.slurm_task_plugin ? "Slurm" : "the kubelet") + " may give those CPUs to jobs too",
            f.slurm_task_plugin ? "CpuSpecList= (Slurm's CPU ids of those CPUs) on this node's NodeName= line in slurm.conf"
                                : "reservedSystemCPUs: " + services->to_list() + " in the kubelet's configuration"};
  if (services) return ok(id, "system services on CPUs " + services->to_list() + ", " + (keepers.empty() ? "no scheduler here" : join(keepers, " and ")) + where);
  return ok(id, "no housekeeping CPUs set: system services and jobs share every CPU");
}

CheckResult irq_affinity(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "irq_affinity";
  std::string balance = f.irqbalance.running
                            ? "irqbalance is running" + std::string(f.irqbalance.oneshot ? " (oneshot: placed once at start)" : "") +
                                  (f.irqbalance.banned ? ", CPUs " + f.irqbalance.banned->to_list() + " banned" : "")
                            : "irqbalance is not running";
  unsigned total = 0, known = 0;
  std::vector<std::string> remote;
  for (const DeviceIrqs& d : f.irqs) {
    Device dev = device(t, d.pci);
    std::optional<CpuSet> near = node_cpus(t, dev.dev);
    for (const DeviceIrq& i : d.irqs) {
      ++total;
      if (!i.cpus || !near) continue;
      ++known;
      if ((*i.cpus & *near).empty())
        remote.push_back(dev.kind + " " + d.pci + " IRQ " + std::to_string(i.irq) + " on CPUs " + i.cpus->to_list() + " (node " +
                         nodes_of(t, *i.cpus) + ", the device's " + nodes_of(t, *near) + ")");
    }
  }
  if (total == 0) return ok(id, "no interrupt listed for the GPUs and NICs (no msi_irqs or irq in sysfs); " + balance);
  if (!f.proc_irq) return ok(id, std::to_string(total) + " interrupt(s) of the GPUs and NICs, where they go not known: no /proc/irq");
  if (!remote.empty()) {
    std::string shown = join(std::vector<std::string>(remote.begin(), remote.begin() + long(std::min<size_t>(remote.size(), 4))), ", ");
    return {id, Severity::warn,
            std::to_string(remote.size()) + " of " + std::to_string(known) + " interrupt(s) of the GPUs and NICs go to another node's CPUs: " +
                shown + (remote.size() > 4 ? ", ..." : "") + "; each wakes a remote core and crosses the socket link; " + balance,
            f.irqbalance.running ? "irqbalance places a device's interrupts on its own node unless banned from it or given a policy "
                                   "script: check its settings (" + (f.irqbalance.config.empty() ? std::string("IRQBALANCE_ARGS") : f.irqbalance.config) +
                                       "), or write the node's CPUs to /proc/irq/N/smp_affinity_list"
                                 : "start irqbalance (it places interrupts on their device's node), or write each device's node CPUs to "
                                   "/proc/irq/N/smp_affinity_list at boot (the NIC vendor's IRQ affinity script)"};
  }
  if (known == 0) return ok(id, std::to_string(total) + " interrupt(s) of the GPUs and NICs, not judged: their devices' NUMA nodes are not known; " + balance);
  return ok(id, std::to_string(known) + " interrupt(s) of the GPUs and NICs on their own node's CPUs; " + balance);
}

CheckResult numa_layout(const topo::Topology& t) {
  const char* id = "numa_layout";
  std::vector<std::string> unknown;
  for (const topo::Gpu& g : t.gpus)
    if (!g.numa) unknown.push_back(g.pci);
  std::map<unsigned, unsigned> per_package;
  std::vector<unsigned> cpuless;
  for (const topo::NumaNode& n : t.numa_nodes) {
    if (n.cpus.empty()) cpuless.push_back(n.os_index);
    else if (n.package) ++per_package[*n.package];
  }
  unsigned most = 0;
  for (const auto& [pkg, n] : per_package) most = std::max(most, n);
  std::string layout = std::to_string(t.numa_nodes.size()) + " NUMA node(s)" +
                       (most > 1 ? ", " + std::to_string(most) + " per package (NPS" + std::to_string(most) + " or SNC: each GPU's node is a part of its socket)" : "") +
                       (cpuless.empty() ? "" : ", CPU-less node(s) " + join_numbers(cpuless) + " (memory only: HBM, CXL or GPU memory; never planned for CPUs)");
  if (!unknown.empty())
    return {id, Severity::warn,
            layout + "; GPU(s) " + join(unknown, ", ") + " report no NUMA node (numa_node -1): which CPUs are near them is unknown, "
                                                         "and binding falls back to the whole machine",
            "expose the PCI devices' proximity to the guest or enable ACPI SRAT/_PXM in the firmware; meanwhile give gpubind "
            "an admin topology with the locality (--topology, GPUBIND_TOPOLOGY)"};
  return ok(id, layout + (t.gpus.empty() ? "" : "; every GPU's node is known"));
}

CheckResult gpu_runtime(const RuntimeCheck& c) {
  const char* id = "gpu_runtime";
  if (c.sources.empty())
    return ok(id, "no GPU runtime library (NVML, ROCm SMI) loaded to compare with" + (c.notes.empty() ? std::string() : ": " + c.notes.front()));
  std::string libs = join(c.sources, ", ");
  if (!c.findings.empty())
    return {id, Severity::warn,
            libs + " and the topology disagree about the GPUs: " +
                join(std::vector<std::string>(c.findings.begin(), c.findings.begin() + long(std::min<size_t>(c.findings.size(), 3))), "; ") +
                (c.findings.size() > 3 ? "; and " + std::to_string(c.findings.size() - 3) + " more" : ""),
            "trust neither blindly: check the GPUs' NUMA nodes in the firmware (SRAT) and `nvidia-smi topo -m`; a GPU one side "
            "misses is lost or hidden (driver, device cgroup); give gpubind an admin topology for what the kernel gets wrong"};
  return ok(id, libs + " agree(s) with the topology on " + std::to_string(c.gpus) + " GPU(s): NUMA nodes, CPUs and links");
}

CheckResult numa_distances(const topo::Topology& t) {
  const char* id = "numa_distances";
  const auto& d = t.distances;
  size_t n = t.numa_nodes.size();
  if (d.size() != n || n < 2) return ok(id, n < 2 ? "one NUMA node" : "no distance matrix (SLIT) known");
  // Within a package a node must be nearer than any node of another package.
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b)
      for (size_t c = 0; c < n; ++c) {
        const topo::NumaNode &na = t.numa_nodes[a], &nb = t.numa_nodes[b], &nc = t.numa_nodes[c];
        if (a == b || a == c || na.cpus.empty() || nb.cpus.empty() || nc.cpus.empty() || !na.package || !nb.package || !nc.package) continue;
        if (*na.package != *nb.package || *na.package == *nc.package || d[a].size() != n) continue;
        if (d[a][b] > d[a][c])
          return {id, Severity::warn,
                  "the SLIT puts node " + std::to_string(nb.os_index) + " (same package as node " + std::to_string(na.os_index) +
                      ") at distance " + std::to_string(d[a][b]) + ", farther than node " + std::to_string(nc.os_index) +
                      " of another package (" + std::to_string(d[a][c]) + "): planners that trust it spill ranks to the wrong socket",
                  "update the firmware (its SLIT), or give gpubind an admin topology with corrected distances"};
      }
  return ok(id, "the SLIT agrees with the packages: nodes of one package are nearer than the others");
}

std::string gts(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g GT/s", v);
  return b;
}

CheckResult pcie_links(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "pcie_links";
  std::vector<std::string> narrow, slow;
  unsigned known = 0;
  for (const PcieLink& l : f.links) {
    std::string kind = topo::find_gpu(t, l.pci) ? "GPU " : "NIC ";
    if (l.width && l.max_width) {
      ++known;
      if (*l.width < *l.max_width) narrow.push_back(kind + l.pci + " x" + std::to_string(*l.width) + " of x" + std::to_string(*l.max_width));
    }
    if (l.speed && l.max_speed && *l.speed < *l.max_speed) slow.push_back(kind + l.pci + " " + gts(*l.speed) + " of " + gts(*l.max_speed));
  }
  if (!narrow.empty())
    return {id, Severity::fail,
            "link(s) trained narrower than they can be: " + join(narrow, ", ") + " (a width never changes with load)" +
                (slow.empty() ? "" : "; below their top speed too: " + join(slow, ", ")),
            "reseat the card; check the slot, riser, retimer and cable (lspci -vv: LnkSta against LnkCap)"};
  if (!slow.empty())
    return {id, Severity::warn, "link(s) below their top speed: " + join(slow, ", ") + " (GPUs lower it when idle: look again under load)",
            "run `gpubind topo --gpu-runtime` while the GPUs are busy; a link still slow then needs the slot checked"};
  if (known == 0) return ok(id, f.links.empty() ? "no GPU or NIC link to check" : "the links' widths are not known (no sysfs link files)");
  return ok(id, std::to_string(known) + " GPU and NIC link(s) at their full width and speed");
}

CheckResult pcie_acs(const NodeFacts& f) {
  const char* id = "pcie_acs";
  constexpr uint16_t kRequestRedirect = 0x4, kCompletionRedirect = 0x8;
  if (f.bridges.empty()) return ok(id, "no PCIe switch port between the root ports and the GPUs and NICs (or their sysfs paths are not known)");
  std::vector<std::string> redirect;
  unsigned read = 0;
  for (const PcieBridge& b : f.bridges) {
    if (!b.config_read) continue;
    ++read;
    if (b.acs_control && (*b.acs_control & (kRequestRedirect | kCompletionRedirect)))
      redirect.push_back(b.pci + " (above " + join(b.below, ", ") + ")");
  }
  if (read == 0)
    return ok(id, std::to_string(f.bridges.size()) + " switch port(s) above the GPUs and NICs; their ACS is not known: the extended "
                                                    "config space is readable by root only");
  if (!redirect.empty())
    return {id, Severity::warn,
            "ACS redirects peer-to-peer requests at switch port(s) " + join(redirect, ", ") +
                ": GPU-to-GPU and GPUDirect RDMA traffic that could turn in the switch goes up to the root complex and back",
            "turn the redirect off on those ports at boot (setpci -s PORT ECAP_ACS+0x6.w=0000, or the BIOS's ACS setting) where no "
            "VM needs them isolated"};
  return ok(id, std::to_string(read) + " switch port(s) above the GPUs and NICs without ACS redirection");
}

CheckResult iommu(const NodeFacts& f) {
  const char* id = "iommu";
  std::vector<std::string> translated, vfio, types;
  unsigned grouped = 0;
  for (const IommuDevice& d : f.iommu) {
    if (!d.group) continue;
    ++grouped;
    if (d.type == "DMA" || d.type == "DMA-FQ") {
      translated.push_back(d.pci);
      if (std::find(types.begin(), types.end(), d.type) == types.end()) types.push_back(d.type);
    }
    if (d.type == "unmanaged") vfio.push_back(d.pci);
  }
  std::string mode;
  if (f.cmdline)
    for (std::string_view word : split(*f.cmdline, ' '))
      if (word.starts_with("iommu") || word.starts_with("intel_iommu") || word.starts_with("amd_iommu")) mode += (mode.empty() ? "" : " ") + std::string(word);
  std::string boot = mode.empty() ? "" : " (boot: " + mode + ")";
  if (f.iommu.empty()) return ok(id, "no GPU or NIC to check");
  if (grouped == 0) return ok(id, "no IOMMU translates the GPUs' and NICs' DMA (no iommu_group)" + boot);
  if (!translated.empty())
    return {id, Severity::warn,
            "the IOMMU translates the DMA of " + join(translated, ", ") + " (group type " + join(types, ", ") + ")" + boot +
                ": every transfer is looked up, and GPUDirect P2P and RDMA between devices are slowed or refused",
            "boot with iommu=pt (with intel_iommu=on or amd_iommu=on where wanted): devices keep their groups, DMA goes untranslated"};
  return ok(id, std::to_string(grouped) + " GPU(s) and NIC(s) in IOMMU groups" + (vfio.empty() ? " in passthrough" : ", " + join(vfio, ", ") + " given to VFIO") + boot);
}

CheckResult cgroup_mems(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "cgroup_mems";
  if (!f.cgroup_mems) return ok(id, "the cgroup's memory nodes are not known");
  std::string where = f.cgroup_mems_file.empty() ? "no cpuset cgroup" : f.cgroup_mems_file;
  std::map<unsigned, std::vector<std::string>> outside;  // node -> its GPUs
  for (const topo::Gpu& g : t.gpus)
    if (g.numa)
      for (unsigned n : topo::nodes_with_cpus(t, *g.numa))
        if (!f.cgroup_mems->test(n)) outside[n].push_back(g.pci);
  if (!outside.empty()) {
    std::vector<std::string> named;
    for (const auto& [n, gpus] : outside) named.push_back("node " + std::to_string(n) + " (GPU " + join(gpus, ", ") + ")");
    return {id, Severity::fail,
            "this cgroup allows memory on node(s) " + f.cgroup_mems->to_list() + " only (" + where + "), not on " + join(named, ", ") +
                ": ranks started from here take those GPUs' host memory from another node",
            "allow every node in cpuset.mems of the cgroup jobs start in (Slurm: task/cgroup gives a job its nodes; a container: --cpuset-mems)"};
  }
  return ok(id, "memory allowed on node(s) " + (f.cgroup_mems->empty() ? std::string("(none listed)") : f.cgroup_mems->to_list()) + " (" + where + ")" +
                    (t.gpus.empty() ? "" : ": every GPU's node"));
}

CheckResult zone_reclaim(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "zone_reclaim";
  if (!f.zone_reclaim_mode) return ok(id, "vm.zone_reclaim_mode not known");
  if (*f.zone_reclaim_mode == 0 || topo::cpu_numa_nodes(t).size() < 2) return ok(id, "vm.zone_reclaim_mode=" + std::to_string(*f.zone_reclaim_mode));
  return {id, Severity::warn,
          "vm.zone_reclaim_mode=" + std::to_string(*f.zone_reclaim_mode) +
              ": a rank whose node runs short reclaims page cache (and writes it back) on the node before taking memory from "
              "another: allocation stalls in the training step",
          "sysctl -w vm.zone_reclaim_mode=0 (gpubind's default memory policy, preferred, already keeps memory local)"};
}

CheckResult thp_defrag(const NodeFacts& f) {
  const char* id = "thp_defrag";
  if (!f.thp_defrag) return ok(id, "transparent hugepages' defrag setting not known");
  if (*f.thp_defrag == "always" && f.thp_enabled.value_or("") != "never")
    return {id, Severity::warn,
            "transparent_hugepage/defrag is always: a page fault that finds no free huge page compacts memory synchronously, "
            "stalling the faulting rank for milliseconds",
            "echo defer+madvise > /sys/kernel/mm/transparent_hugepage/defrag (compaction in the background; madvise regions still direct)"};
  return ok(id, "transparent_hugepage/defrag is " + *f.thp_defrag);
}

CheckResult swap(const NodeFacts& f) {
  const char* id = "swap";
  if (!f.swap_total_kb) return ok(id, "swap not known");
  if (*f.swap_total_kb == 0) return ok(id, "no swap");
  return {id, Severity::warn,
          std::to_string(*f.swap_total_kb / 1024) + " MiB of swap: a rank's pages swapped out under memory pressure stall its step "
                                                    "(and pinned GPU transfer buffers cannot be swapped at all)",
          "swapoff -a on training nodes (and remove it from /etc/fstab), or bound the jobs' memory so they never reach it"};
}

CheckResult slurm_task_plugin(const NodeFacts& f) {
  const char* id = "slurm_task_plugin";
  std::string plugin = *f.slurm_task_plugin;
  bool binds = plugin.find("task/affinity") != std::string::npos || plugin.find("task/cgroup") != std::string::npos;
  if (binds) return ok(id, "TaskPlugin=" + plugin + " (" + f.slurm_conf + ")");
  std::string task_plugin = "TaskPlugin=" + (plugin.empty() ? std::string("task/none (unset)") : plugin) + " in " + f.slurm_conf;
  // gpubind's own plugin binds each task by itself, under any TaskPlugin (docs/cli.md).
  if (f.gpubind_spank && !f.gpubind_spank->site_default.empty() && f.gpubind_spank->site_default != "none")
    return ok(id, task_plugin + "; gpubind's SPANK plugin binds every step (default=" + f.gpubind_spank->site_default + ", " +
                      f.gpubind_spank->where + ")");
  if (f.gpubind_spank)
    return {id, Severity::warn,
            task_plugin + "; gpubind's SPANK plugin (" + f.gpubind_spank->where +
                ") binds only steps run with --gpubind: every other task runs where the kernel puts it",
            "default=closest on the plugin's plugstack.conf line binds every step that asks for nothing (or TaskPlugin=task/affinity,task/cgroup)"};
  return {id, Severity::fail, task_plugin + ": Slurm's --cpu-bind and --gpu-bind binding does nothing, and tasks are not kept in their cores",
          "TaskPlugin=task/affinity,task/cgroup with ConstrainCores=yes in cgroup.conf (or gpubind's SPANK plugin binds by itself)"};
}

// slurm_spank: gpubind's SPANK plugin as this node's Slurm loads it: the file the plugstack.conf
// line names, found, and built for the node's release series (plugin.c loads a SPANK plugin only
// into the major and minor it was built for).
CheckResult slurm_spank(const NodeFacts& f) {
  const char* id = "slurm_spank";
  const NodeFacts::SpankPlugin& p = *f.gpubind_spank;
  std::string fails =
      p.required ? "srun refuses every job step here (the line says required)" : "no step is bound (the line says optional)";
  std::string build = "build the plugin against this Slurm's headers (SLURM_SPANK_INCLUDE_DIR, docs/cli.md \"Building it for your Slurm\")";
  if (p.file.empty())
    return {id, Severity::fail,
            p.where + " loads " + p.named + ", which is not " + (p.looked_in.empty() ? "there" : "in " + p.looked_in) + ": " + fails,
            "install gpubind's plugin there, or name its path on the line; " + build};
  if (!p.built_for)
    return {
        id, Severity::warn,
        p.file + " does not say which Slurm it was built for (" + p.where + "): a gpubind plugin built before it said so, or not gpubind's",
        build};
  auto [v, known] = slurm_release(f);
  auto built = plan::parse_slurm_version(*p.built_for);
  std::string what = p.file + " is built for Slurm " + *p.built_for;
  if (!known) return ok(id, what + "; this node's release is unknown (--slurm-version names it) (" + p.where + ")");
  if (built && (built->major != v.major || built->minor != v.minor))
    return {id, Severity::fail,
            what + " and this node runs " + v.text() + ": Slurm refuses it (\"Incompatible Slurm plugin\"), so " + fails, build};
  return ok(id, what + ", the series this node runs (" + v.text() + ", " + p.where + ")");
}

// The GPU of the topology a gres.conf File= names: /dev/nvidiaN is NVIDIA's GPU N, a render node
// the GPU whose OS devices hold it.
std::optional<size_t> gpu_of_file(const topo::Topology& t, const std::string& file) {
  std::string name = file.substr(file.rfind('/') + 1);
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const topo::Gpu& g = t.gpus[i];
    if (g.vendor == topo::Vendor::nvidia && name == "nvidia" + std::to_string(g.index)) return i;
    if (std::find(g.os_names.begin(), g.os_names.end(), name) != g.os_names.end()) return i;
  }
  return std::nullopt;
}

// The first socket `cores` covers in part, for slurmctld's own words.
std::string partial_socket(const CpuSet& cores, const plan::SlurmSockets& s) {
  for (size_t i = 0; i < s.sockets.size(); ++i) {
    unsigned in = (cores & s.sockets[i]).count();
    if (in && in != s.cores_per_socket) return "socket " + std::to_string(i) + " is cores " + s.sockets[i].to_list();
  }
  return "it names " + std::to_string(cores.count()) + " cores of several sockets";
}

// The cores slurmctld keeps from jobs on this node (CpuSpecList, else CoreSpecCount, on the node
// line's sockets) and RestrictedCoresPerGPU's, as it works them out at registration: `refused`
// gets what sets the node DOWN, `starved` each GPU line left no core for its jobs, `said` the
// cores kept, in the words scontrol shows them.
struct KeptCores {
  std::vector<std::string> refused, starved, said;
};
KeptCores kept_cores(const NodeFacts& f, const plan::SlurmSockets& configured, unsigned threads,
                     const std::vector<plan::SlurmGresGpus>& lines, const std::vector<std::string>& names) {
  KeptCores out;
  CpuSet spec;
  std::string keeper;
  if (!f.slurm_cpu_spec_list.empty()) {
    if (auto ids = CpuSet::parse_list(f.slurm_cpu_spec_list)) spec = plan::slurm_cpu_spec_cores(*ids, threads);
    keeper = "CpuSpecList=" + f.slurm_cpu_spec_list;
  } else if (f.slurm_core_spec_count && *f.slurm_core_spec_count > 0) {
    spec = plan::slurm_core_spec_cores(unsigned(configured.sockets.size()), configured.cores_per_socket, *f.slurm_core_spec_count,
                                       f.slurm_spec_cores_first);
    keeper = "CoreSpecCount=" + std::to_string(*f.slurm_core_spec_count);
  }
  if (!spec.empty()) {
    // Slurm keeps whole cores: scontrol's CPUSpecList is every thread of them.
    CpuSet cpu_ids;
    for (unsigned c : spec.ids()) cpu_ids |= CpuSet::range(c * threads, c * threads + threads - 1);
    out.said.push_back(keeper + " keeps cores " + spec.to_list() + " from jobs (CPUSpecList=" + cpu_ids.to_list() + ")");
  }
  for (size_t i = 0; i < lines.size(); ++i)
    if (!spec.empty() && !lines[i].cores.empty() && lines[i].cores.is_subset_of(spec))
      out.starved.push_back(keeper + " keeps every core of " + names[i] + " Cores=" + lines[i].cores.to_list() +
                            " from jobs: its GPU's jobs get cores of other sockets only");
  if (!f.slurm_restricted_cores_per_gpu || *f.slurm_restricted_cores_per_gpu == 0) return out;
  unsigned per = *f.slurm_restricted_cores_per_gpu;
  std::string restricted = "RestrictedCoresPerGPU=" + std::to_string(per);
  plan::SlurmRestrictedCores r = plan::slurm_restricted_cores(lines, spec, per);
  if (r.no_cores) out.refused.push_back(restricted + " and no GPU line names Cores= (\"don't have any topology\")");
  if (r.short_line) {
    const plan::SlurmGresGpus& l = lines[*r.short_line];
    out.refused.push_back(restricted + ": " + names[*r.short_line] + " Cores=" + l.cores.to_list() + " has " + std::to_string(r.got) +
                          " of the " + std::to_string(per * l.count) + " cores its " + std::to_string(l.count) +
                          " GPU(s) need, none kept by core specialization or an earlier line (\"doesn't have access to that many "
                          "unique cores\")");
  }
  if (!r.down()) out.said.push_back(restricted + " keeps cores " + r.all.to_list() + " for GPU jobs");
  return out;
}

// slurm_gres: each GPU's Cores= in gres.conf (or what AutoDetect gives it) as the node's Slurm will
// judge it when the node registers, on the sockets its NodeName= line defines; that line against
// what slurmd counts here; and each GPU's Cores= against its own cores.
CheckResult slurm_gres(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "slurm_gres";
  auto [v, known] = slurm_release(f);
  std::string by = known ? "Slurm " + v.text() : v.text() + "'s rule";  // unknown: the newest rule
  std::string file = f.gres_conf.empty() ? std::string("gres.conf") : f.gres_conf;
  std::string where = file + (known ? "" : "; the release is unknown, --slurm-version names it");
  plan::SlurmCoresRule rule = plan::slurm_cores_rule(v);
  if (known && f.slurm_restricted_cores_per_gpu && !plan::slurm_restricted_cores_known(v))
    return {id, Severity::fail,
            "Slurm " + v.text() + " does not read RestrictedCoresPerGPU= (24.05 on): its daemons stop at this node's NodeName= line in " +
                f.slurm_conf + " (\"unrecognized key\")",
            "remove RestrictedCoresPerGPU= from the line, or run Slurm 24.05 or later"};
  SlurmShape node = slurm_shape(t, f, v);
  const plan::SlurmSockets& counted = node.counted;
  const plan::SlurmSockets& configured = node.configured;
  std::vector<std::string> refused, elsewhere;
  std::string shape = std::to_string(configured.sockets.size()) + " sockets of " + std::to_string(configured.cores_per_socket) + " cores";
  if (counted.unusable.empty() && ((f.slurm_sockets && *f.slurm_sockets != counted.sockets.size()) ||
                                   (f.slurm_cores_per_socket && *f.slurm_cores_per_socket != counted.cores_per_socket) ||
                                   (f.slurm_threads_per_core && *f.slurm_threads_per_core != counted.threads_per_core)))
    refused.push_back("its NodeName= line gives " + shape +
                      (f.slurm_threads_per_core ? " (" + std::to_string(*f.slurm_threads_per_core) + " threads)" : std::string()) +
                      ", slurmd counts " + std::to_string(counted.sockets.size()) + " " + counted.kind + "s of " +
                      std::to_string(counted.cores_per_socket) + " (" + std::to_string(counted.threads_per_core) + " threads) here");
  plan::SlurmNodePlan planned = plan::plan_slurm_node(t, v);
  unsigned judged = 0;
  auto judge = [&](const std::string& what, const CpuSet& cores, std::optional<size_t> gpu) {
    ++judged;
    if (!configured.sockets.empty() && !plan::slurm_accepts(cores, configured, rule))
      refused.push_back(what + " (\"doesn't match socket boundaries\": " + partial_socket(cores, configured) + ")");
    if (gpu && !planned.gpus[*gpu].own.empty() && !planned.gpus[*gpu].own.is_subset_of(cores))
      elsewhere.push_back(what + " leaves out the GPU's own cores " + planned.gpus[*gpu].own.to_list());
  };
  // The GPU lines as slurmctld keeps them, in order, for the cores kept from jobs.
  std::vector<plan::SlurmGresGpus> lines;
  std::vector<std::string> names;
  for (const NodeFacts::GresGpu& g : f.gres_gpus) {
    CpuSet cores;
    if (!g.cores.empty()) {
      auto parsed = CpuSet::parse_list(g.cores);
      if (!parsed) {
        refused.push_back(g.where + ": Cores=" + g.cores + " is not a core list");
        continue;
      }
      cores = *parsed;
      judge(g.where + " Cores=" + g.cores, cores, gpu_of_file(t, g.file));
    }
    lines.push_back({cores, g.count});
    names.push_back(g.where);
  }
  // AutoDetect without Cores=: slurmd takes each GPU's own cores from NVML or ROCm SMI.
  bool any_cores = std::any_of(f.gres_gpus.begin(), f.gres_gpus.end(), [](const NodeFacts::GresGpu& g) { return !g.cores.empty(); });
  if (!f.gres_autodetect.empty() && f.gres_autodetect != "off" && !any_cores) {
    lines.clear();
    names.clear();
    for (const plan::SlurmGpuCores& g : planned.gpus) {
      std::string gpu = "GPU " + std::to_string(t.gpus[g.gpu].index);
      if (!g.own.empty()) judge("AutoDetect=" + f.gres_autodetect + " gives " + gpu + " Cores=" + g.own.to_list(), g.own, std::nullopt);
      lines.push_back({g.own, 1});
      names.push_back("AutoDetect's " + gpu);
    }
  }
  KeptCores kept = kept_cores(f, configured, node.threads, lines, names);
  refused.insert(refused.end(), kept.refused.begin(), kept.refused.end());
  std::string fix = "gpubind slurm gres-conf --slurm-version " + v.text() + " writes the lines and NodeName= definition it takes";
  if (planned.no_cores.empty() && planned.sockets.definition != plan::SlurmSocket::package)
    fix += " (" + std::string(plan::slurmd_parameter(planned.sockets.definition)) + ": " + std::to_string(planned.sockets.sockets.size()) +
           " " + planned.sockets.kind + " sockets of " + std::to_string(planned.sockets.cores_per_socket) + " cores)";
  // The first of each kind in full; the count of the rest.
  auto first_of = [](const std::vector<std::string>& found, const char* rest) {
    return found.front() + (found.size() > 1 ? ", and " + std::to_string(found.size() - 1) + " " + rest : std::string());
  };
  if (!refused.empty()) return {id, Severity::fail, by + " drains this node: " + first_of(refused, "more") + " (" + where + ")", fix};
  if (!kept.starved.empty())
    return {id, Severity::fail, first_of(kept.starved, "more") + " (" + f.slurm_conf + ")",
            "keep fewer cores from jobs, or name them with CpuSpecList= on sockets that keep cores for every GPU"};
  if (!elsewhere.empty())
    return {id, Severity::warn, first_of(elsewhere, "more") + ": Slurm places those GPUs' jobs on other cores (" + where + ")", fix};
  if (judged == 0) return ok(id, "no GPU line names cores (" + where + ")");
  std::string taken = rule == plan::SlurmCoresRule::any ? by + " takes any Cores=" : by + " takes each on " + shape;
  for (const std::string& k : kept.said) taken += "; " + k;
  return ok(id, std::to_string(judged) + " GPU core lists, each holding its GPU's own cores; " + taken + " (" + where + ")");
}

// The CPU DRA driver's configuration as it places claims' CPUs: a group wider than a GPU's NUMA
// node, reserved CPUs that hold a GPU's node or differ from the kubelet's.
std::optional<CheckResult> cpu_driver_config(const topo::Topology& t, const NodeFacts& f, const std::string& seen) {
  const char* id = "kubelet";
  const k8s::CpuDriverConfig& c = *f.cpu_driver;
  const k8s::KubeletConfig& k = *f.kubelet;
  std::string conf = "cpuDeviceMode " + c.cpu_device_mode + (c.cpu_device_mode == "grouped" ? ", groupBy " + c.group_by : "") +
                     ", reservedCPUs " + (c.reserved_cpus ? c.reserved_cpus->to_list() : "none") + " (" + f.cpu_driver_source + ")";
  if (c.cpu_device_mode == "grouped" && c.group_by != "numanode")
    for (const topo::Package& p : t.packages) {
      std::vector<unsigned> nodes = topo::nodes_covering(t, c.group_by == "machine" ? t.cpus : p.cpus);
      bool gpus = std::any_of(nodes.begin(), nodes.end(), [&](unsigned n) { return !topo::gpus_on_node(t, n).empty(); });
      if (nodes.size() < 2 || !gpus) continue;
      return CheckResult{
          id, Severity::warn,
          seen + ", " + conf + ": a group holds NUMA nodes " + join_numbers(nodes) +
              ", so a claim matched to a GPU's pcieRoot or socket may get CPUs on another node than its GPU",
          "groupBy: numanode (or claims with matchAttribute: resource.kubernetes.io/numaNode over the GPU and CPU requests)"};
    }
  if (c.reserved_cpus)
    for (const topo::NumaNode& n : t.numa_nodes)
      if (!n.cpus.empty() && n.cpus.is_subset_of(*c.reserved_cpus) && !topo::gpus_on_node(t, n.os_index).empty())
        return CheckResult{id, Severity::warn,
                           seen + ", " + conf + ": its reserved CPUs hold every CPU of NUMA node " + std::to_string(n.os_index) +
                               ", where GPU(s) " + join(topo::gpus_on_node(t, n.os_index), ", ") + " are: no claim gets CPUs near them",
                           "reserve CPUs of a node without GPUs, or fewer"};
  if (k.reserved_system_cpus && (!c.reserved_cpus || c.reserved_cpus->count() != k.reserved_system_cpus->count()))
    return CheckResult{
        id, Severity::warn,
        seen + ", " + conf + ": the kubelet's reservedSystemCPUs " + k.reserved_system_cpus->to_list() +
            " are not as many: the node's allocatable CPUs and the CPUs the driver gives claims disagree",
        "reservedCPUs in the driver's configuration as many as reservedSystemCPUs (the same list keeps system daemons off claims)"};
  return std::nullopt;
}

// A node where the CPU DRA driver gives exclusive CPUs: the kubelet's CPU manager must be off.
CheckResult cpu_dra_driver(const topo::Topology& t, const NodeFacts& f, const std::string& policies) {
  const char* id = "kubelet";
  std::string seen = "the CPU DRA driver (dra.cpu) runs here (" + f.cpu_driver_seen + ")";
  if (f.kubelet->cpu_manager_policy != "none")
    return {id, Severity::fail, seen + " beside " + policies + ": both set containers' CPUs, and each undoes the other's",
            "cpuManagerPolicy: none (the driver gives exclusive CPUs through its claims)"};
  if (!f.cpu_driver)
    return ok(id, seen + "; " + policies + ", as it needs; its configuration " +
                      (f.cpu_driver_source.empty() ? "not read (no dracpu process visible here)"
                                                   : "in " + f.cpu_driver_source + " could not be read (notes)"));
  if (auto r = cpu_driver_config(t, f, seen)) return *r;
  return ok(id, seen + "; " + policies + ", as it needs; cpuDeviceMode " + f.cpu_driver->cpu_device_mode +
                    (f.cpu_driver->cpu_device_mode == "grouped" ? ", groupBy " + f.cpu_driver->group_by : "") + " (" + f.cpu_driver_source +
                    ")");
}

CheckResult kubelet(const topo::Topology& t, const NodeFacts& f) {
  const char* id = "kubelet";
  const k8s::KubeletConfig& k = *f.kubelet;
  std::string policies = "cpuManagerPolicy " + k.cpu_manager_policy + ", topologyManagerPolicy " + k.topology_manager_policy +
                         " (scope " + k.topology_manager_scope + "), memoryManagerPolicy " + k.memory_manager_policy;
  if (auto refused = k8s::topology_manager_refusal(k, t))
    return {id, Severity::fail, *refused,
            "topologyManagerPolicyOptions max-allowable-numa-nodes: \"" + std::to_string(t.numa_nodes.size()) + "\""};
  if (!f.cpu_driver_seen.empty()) return cpu_dra_driver(t, f, policies);
  if (k.cpu_manager_policy != "static")
    return {id, Severity::warn,
            policies + " (" + f.kubelet_config + "): no pod gets CPUs of its own, so GPU workers share every CPU and migrate",
            "cpuManagerPolicy: static with reservedSystemCPUs, and GPU pods Guaranteed with whole CPUs"};
  if (topo::cpu_numa_nodes(t).size() > 1 && (k.topology_manager_policy == "none" || k.topology_manager_policy == "best-effort"))
    return {id, Severity::warn,
            policies + " (" + f.kubelet_config + "): a pod may get its CPUs on one NUMA node and its GPUs on another",
            "topologyManagerPolicy: single-numa-node (or restricted), so the kubelet refuses pods it cannot align"};
  return ok(id, policies);
}

}  // namespace

Report judge(const topo::Topology& t, const NodeFacts& f) {
  Report r;
  r.results.push_back(numa_balancing(t, f));
  r.results.push_back(isolcpus(t, f));
  r.results.push_back(nohz_full(t, f));
  r.results.push_back(housekeeping(t, f));
  r.results.push_back(irq_affinity(t, f));
  r.results.push_back(numa_layout(t));
  if (f.gpu_runtime) r.results.push_back(gpu_runtime(*f.gpu_runtime));
  else r.notes.push_back("gpu_runtime: not checked" + (f.gpu_runtime_skipped.empty() ? std::string() : ": " + f.gpu_runtime_skipped));
  r.results.push_back(numa_distances(t));
  r.results.push_back(pcie_links(t, f));
  r.results.push_back(pcie_acs(f));
  r.results.push_back(iommu(f));
  r.results.push_back(zone_reclaim(t, f));
  r.results.push_back(thp_defrag(f));
  r.results.push_back(swap(f));
  r.results.push_back(cgroup_mems(t, f));
  if (f.slurm_task_plugin) r.results.push_back(slurm_task_plugin(f));
  else r.notes.push_back("slurm_task_plugin: not checked: no slurm.conf ($SLURM_CONF, /etc/slurm/slurm.conf)");
  if (f.gpubind_spank) r.results.push_back(slurm_spank(f));
  if (f.slurm_node_found && (!f.gres_gpus.empty() || !f.gres_autodetect.empty())) r.results.push_back(slurm_gres(t, f));
  else if (f.slurm_task_plugin)
    r.notes.push_back("slurm_gres: not checked: " + (!f.slurm_node_found   ? "no NodeName= line for this node in " + f.slurm_conf
                                                     : f.gres_conf.empty() ? std::string("no gres.conf beside ") + f.slurm_conf
                                                                           : "no GPU line for this node in " + f.gres_conf));
  if (f.kubelet) r.results.push_back(kubelet(t, f));
  else if (!f.kubelet_config.empty()) r.notes.push_back("kubelet: not checked: " + f.kubelet_config + " could not be read as its configuration");
  else r.notes.push_back("kubelet: not checked: no kubelet configuration (/var/lib/kubelet/config.yaml)");
  for (const std::string& u : f.unreadable) r.notes.push_back(u);
  return r;
}

}  // namespace gpubind::doctor
