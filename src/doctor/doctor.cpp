#include "doctor/doctor.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

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
  return {id, Severity::fail,
          "TaskPlugin=" + (plugin.empty() ? std::string("task/none (unset)") : plugin) + " in " + f.slurm_conf +
              ": Slurm's --cpu-bind and --gpu-bind binding does nothing, and tasks are not kept in their cores",
          "TaskPlugin=task/affinity,task/cgroup with ConstrainCores=yes in cgroup.conf (or gpubind's SPANK plugin binds by itself)"};
}

}  // namespace

Report judge(const topo::Topology& t, const NodeFacts& f) {
  Report r;
  r.results.push_back(numa_balancing(t, f));
  r.results.push_back(isolcpus(t, f));
  r.results.push_back(nohz_full(t, f));
  r.results.push_back(numa_layout(t));
  r.results.push_back(numa_distances(t));
  r.results.push_back(pcie_links(t, f));
  r.results.push_back(zone_reclaim(t, f));
  r.results.push_back(thp_defrag(f));
  r.results.push_back(swap(f));
  if (f.slurm_task_plugin) r.results.push_back(slurm_task_plugin(f));
  else r.notes.push_back("slurm_task_plugin: not checked: no slurm.conf ($SLURM_CONF, /etc/slurm/slurm.conf)");
  for (const std::string& u : f.unreadable) r.notes.push_back(u);
  return r;
}

}  // namespace gpubind::doctor
