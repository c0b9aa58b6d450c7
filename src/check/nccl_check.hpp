#pragma once
// `check --nccl-log`: what NCCL did in each rank (check/nccl_log.hpp) judged against the
// topology and gpubind's plan for the GPUs the ranks used (issue 55). Pure: the parsed log, the
// topology and a base plan request in, one verdict per rank out.
//
// The plan: on each host, the ranks NCCL logged there, in local-rank order, each on the GPU NCCL
// says it used (its busId), planned with the request's policy as `gpubind plan` would. Every
// host is judged against the one topology given (a job's nodes are alike).
#include <optional>
#include <string>
#include <vector>

#include "check/check.hpp"
#include "check/nccl_log.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace gpubind::check {

struct NcclRankReport {
  std::string host;
  int pid = 0;
  std::string file;
  std::string version;  // "2.28.3+cuda12.9"; "" when the log does not say
  bool rccl = false;
  std::optional<unsigned> rank, nranks, local_rank, local_ranks;  // in its largest communicator
  std::string bus_id;                                             // its GPU, "" when no init line says
  std::optional<unsigned> gpu;                                    // that GPU's index in the topology
  // The rank's own CPUs when NCCL started (2.28+'s "CPU affinity"), and the set NCCL pinned its
  // threads to (empty: "empty, ignoring"); nullopt when the log does not say.
  std::optional<CpuSet> cpus_at_init;
  std::optional<CpuSet> nccl_cpus;
  std::optional<CpuSet> gpu_cpus;                   // the GPU's CPUs: the topology's, else NCCL's
  bool ignore_cpu_affinity = false;                 // NCCL_IGNORE_CPU_AFFINITY=1: NCCL's set is the GPU's, not the rank's
  std::optional<CpuSet> planned;                    // the plan's CPUs for this rank
  std::vector<std::string> nics;                    // the NICs its own channels went through, NCCL's names
  std::vector<std::string> planned_nics;            // the plan's, OS names joined by ","
  std::optional<topo::PathClass> planned_nic_path;  // from its GPU to the plan's (first) NIC
  std::optional<bool> gdr;  // whether its channels through a NIC used GPU Direct RDMA; nullopt: none went through one
  std::vector<Finding> findings;
  std::vector<std::string> notes;
};

struct NcclReport {
  std::vector<NcclRankReport> ranks;  // by host, then rank
  std::vector<std::string> notes;     // the log's as a whole
  bool has_findings() const;
};

// The rank's verdicts as `check --nccl-log` prints them: "OK" or its findings', each once.
std::string verdicts_of(const NcclRankReport& r);

// `base` carries the planning options (policy, SMT, reserve); its ranks and rank_gpus are set per host.
NcclReport judge_nccl_log(const topo::Topology& t, const NcclLog& log, const plan::Request& base);

// The rules, one per verdict, each applied to one rank (exposed for their tests).
namespace nccl_rules {
// MISPLACED: none of the rank's CPUs are its GPU's: NCCL's "empty, ignoring" (2.28+), or no
// affinity line at all where `silence_means_empty` (NCCL through 2.27 and RCCL print none for an
// empty set: the version says so, or the log's other ranks' hex lines do) and the GPU's CPUs are
// known; a note instead where NCCL does not know the GPU's CPUs (a VM, numa_node -1). Some of its
// CPUs off the GPU's: MISPLACED too.
void affinity(NcclRankReport& r, const NcclProcess& p, bool silence_means_empty);
// UNBOUND: the rank had more CPUs than the plan gives it (and all of those): NCCL narrows only
// the threads it starts during init (its proxy threads); it gives the calling thread its mask
// back when init ends (src/init.cc, every version read), so the rank itself stays unbound.
void unbound(NcclRankReport& r);
// OVERLAP: two ranks of a host ran on shared CPUs (their CPUs at init, else NCCL's set).
void overlap(std::vector<NcclRankReport*>& host_ranks);
// REMOTE_NIC: the rank's own channels went through a NIC farther from its GPU than the plan's.
void remote_nic(NcclRankReport& r, const topo::Topology& t);
// NO_GDR: none of its channels through a NIC used GPU Direct RDMA although the plan's NIC is
// PIX or PXB from its GPU (NCCL_NET_GDR_LEVEL's default, PXB, allows it there).
void no_gdr(NcclRankReport& r, const NcclProcess& p);
}  // namespace nccl_rules

}  // namespace gpubind::check
