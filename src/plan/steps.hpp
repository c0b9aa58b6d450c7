#pragma once
// The steps of plan::make_plan, shared by the files that implement them (internal to src/plan):
//   plan.cpp       the request, the rank count and each rank's GPUs, then the steps in order
//   gpu_spread.cpp which GPUs fewer ranks than visible GPUs take
//   rank_cpus.cpp  CPUs: target domains, pools, crowded pools, the policies' splits
//   rank_memory.cpp memory policy and nodes
//   rank_nics.cpp  NICs and the NIC and runtime environment
//   score.cpp      the score every plan and `compare` report
#include <string>
#include <vector>

#include "plan/cpu_split.hpp"
#include "plan/plan.hpp"

namespace gpubind::plan::steps {

// Everything the steps share.
struct Ctx {
  const topo::Topology& t;
  const Request& req;
  CpuSet allowed;  // usable PUs: caller's allowed set minus --reserve
  CoreTable cores;
  Plan plan;
  // The GPUs gpubind chose for fewer ranks than visible GPUs, in rank order (gpu_spread.cpp):
  // every rank's visible list, so that rank r's device r is its GPU. Empty: nothing chosen.
  std::vector<const topo::Gpu*> spread;
};

// Each rank's GPUs, by local rank.
using GpusOfRanks = std::vector<std::vector<const topo::Gpu*>>;

// The cores touching `cpus`, whole.
CpuSet whole_cores(const topo::Topology& t, const CpuSet& cpus);
// Whether every one of these GPUs has a known NUMA node.
bool locality_known(const std::vector<const topo::Gpu*>& gpus);
std::string cpus_text(const CpuSet& s);

// 2b. Fewer ranks than visible GPUs: the visible GPUs reordered so that the first `ranks` (each
// rank's first GPU) are spread over packages, NUMA nodes and PCIe switches, when nothing fixed
// which GPUs the workers see; else `visible` as it is (gpu_spread.cpp).
std::vector<const topo::Gpu*> spread_gpus(Ctx& c, const std::vector<const topo::Gpu*>& visible, unsigned ranks, unsigned k);
// The variables that make `gpus` the GPUs a worker sees, in that order (rank_nics.cpp).
std::vector<std::pair<std::string, std::string>> visibility_env(const Ctx& c, const std::vector<const topo::Gpu*>& gpus);

// 3. Each rank's CPUs under the request's policy (rank_cpus.cpp).
void assign_cpus(Ctx& c, const GpusOfRanks& gpus_of, bool any_gpu);
// 4. A rank's memory policy and nodes (rank_memory.cpp).
void assign_memory(Ctx& c, RankBinding& rb, const std::vector<const topo::Gpu*>& gpus);
// 5. Each rank's NICs (rank_nics.cpp).
void assign_nics(Ctx& c, const GpusOfRanks& gpus_of);
// 6. Each rank's environment: threads, GPU isolation, NICs (rank_nics.cpp).
void assign_environment(Ctx& c, const GpusOfRanks& gpus_of);

}  // namespace gpubind::plan::steps
