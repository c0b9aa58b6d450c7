#pragma once
// Slurm gres.conf lines for a topology's GPUs: Name=gpu Type= File= Cores= Links=. Slurm's own
// AutoDetect needs NVML or RSMI on the node; this needs only the topology, so it also works from
// a captured topology file.
#include <string>

#include "topo/topology.hpp"

namespace gpubind::render {

// `node_name` "" writes lines without NodeName= (they then apply to every node reading the file).
std::string gres_conf(const topo::Topology& t, const std::string& node_name);

// Slurm numbers cores 0..N-1 in the machine's logical order: package by package, then by
// position inside the package (hwloc's logical order), not by OS CPU number; this maps each
// topology core (index into Topology::cores) to that number.
std::vector<unsigned> slurm_core_ids(const topo::Topology& t);

}  // namespace gpubind::render
