#pragma once
// Splitting a set of cores among the ranks that share it: equal, contiguous, disjoint blocks of
// whole cores, aligned to L3 domains where the counts allow.
#include <string>
#include <vector>

#include "topo/topology.hpp"
#include "util/cpuset.hpp"

namespace gpubind::plan {

struct CoreSlot {
  CpuSet pus;   // the usable PUs of one core (allowed, not reserved; first PU only with --no-smt)
  int l3 = -1;  // index into Topology::l3_domains, -1 when unknown
};

// The usable cores of the machine, ordered by L3 domain then first PU (so a contiguous run of
// slots stays inside one L3 where possible), with a PU -> slot index for fast lookups.
struct CoreTable {
  std::vector<CoreSlot> slots;
  std::vector<int> slot_of_pu;  // -1 for PUs that are not usable

  // The slots touching `cpus`, in slot order.
  std::vector<const CoreSlot*> within(const CpuSet& cpus) const;
  unsigned count(const CpuSet& cpus) const { return unsigned(within(cpus).size()); }
};

CoreTable make_core_table(const topo::Topology& t, const CpuSet& allowed, bool smt);


// "rank 3" or "ranks 0,1,2", for warnings and explain lines about a group of ranks.
std::string ranks_text(const std::vector<size_t>& members);

struct Split {
  std::vector<CpuSet> blocks;  // one per rank, in rank order
  std::string how;             // for --explain
  bool shared = false;         // fewer cores than ranks: cores are shared
};

// More ranks than cores but no more than PUs: the fewest cores are split between ranks (issue 33
// item 3: 6 ranks on 4 SMT4 cores split 2 cores in halves, not all 4). The first ranks get a whole
// core each; the last m cores are divided evenly among the other ranks, m the smallest count that
// divides evenly (each split core's PUs in equal groups), else the smallest that has a PU for each.
Split split_fewest_cores(const std::vector<const CoreSlot*>& cores, const CpuSet& domain, unsigned ranks);

// Divides `cores` (the slots inside `domain`, in order) among `ranks` ranks. `balanced` leaves
// leftover cores idle rather than giving the first ranks one more.
Split split_domain(const std::vector<const CoreSlot*>& cores, const CpuSet& domain, unsigned ranks, bool balanced);

}  // namespace gpubind::plan
