#pragma once
// `gpubind doctor`: the node-level causes of jitter that binding alone cannot cure, judged before
// a job starts. Pure: the node's facts (doctor/facts.hpp) and its topology in, one result per
// check out, each OK, WARN or FAIL with one line of why and one of how to fix it.
//
// The checks (docs/cli.md, "gpubind doctor", has each rule and its source):
//   numa_balancing     kernel.numa_balancing on a node of several NUMA nodes
//   isolcpus           domain-isolated CPUs on the GPUs' nodes (threads there are not balanced)
//   nohz_full          adaptive-tick CPUs: none left for housekeeping, or without rcu_nocbs
//   housekeeping       CPUs kept from jobs (Slurm CpuSpecList/CoreSpecCount, kubelet
//                      reservedSystemCPUs) against where systemd runs services (CPUAffinity)
//   irq_affinity       the GPUs' and NICs' interrupts delivered to another node's CPUs; irqbalance
//   numa_layout        GPUs of unknown locality, several nodes per package (NPS/SNC), CPU-less nodes
//   gpu_runtime        NVML / ROCm SMI disagreeing with the kernel about the GPUs (live node only)
//   numa_distances     a SLIT that puts a node of the same package farther than another package's
//   pcie_links         GPU and NIC links trained narrower than they can be (or slower, when idle allows)
//   pcie_acs           PCIe switch ports above GPUs and NICs that redirect peer traffic (ACS)
//   iommu              the GPUs' and NICs' DMA translated by the IOMMU (not passthrough)
//   zone_reclaim       vm.zone_reclaim_mode: reclaim on the local node before using another
//   thp_defrag         transparent hugepages compacted synchronously in page faults
//   swap               swap on a node that runs training jobs
//   cgroup_mems        the cgroup's cpuset.mems without a GPU's node
//   slurm_task_plugin  Slurm without task/affinity or task/cgroup: its binding is a no-op
//   slurm_gres         gres.conf's GPU Cores= that the node's Slurm drains it for (24.11 on: whole
//                      sockets), a NodeName= shape slurmd does not count, Cores= off the GPU's cores
//   kubelet            the kubelet's CPU and Topology managers' policies
#include <string>
#include <vector>

#include "doctor/facts.hpp"
#include "topo/topology.hpp"

namespace gpubind::doctor {

enum class Severity { ok, warn, fail };
const char* to_string(Severity s);

struct CheckResult {
  std::string check;  // its id, as above
  Severity severity = Severity::ok;
  std::string why;    // one line: what was found
  std::string fix;    // one line: what to do ("" when OK)
};

struct Report {
  std::vector<CheckResult> results;  // in the order of the list above; skipped checks are absent
  std::vector<std::string> notes;  // what could not be read (facts.unreadable), and checks not run
  Severity worst() const;
};

Report judge(const topo::Topology& t, const NodeFacts& facts);

}  // namespace gpubind::doctor
