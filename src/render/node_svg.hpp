#pragma once
// The node drawn as operators know it from lstopo (`topo --format svg`), and with a plan's ranks
// on it (`plan --format svg`): packages, NUMA nodes (memory-only ones marked), L3 domains, cores
// with their PUs, the GPUs and NICs under the node they hang from (devices behind one PCIe switch
// bracketed together), NVLink/xGMI groups, and with a plan each rank in its own colour on its
// cores, GPU, memory node and NIC, with a legend of the rank table and the score. Pure.
#include <string>

#include "plan/compare.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace gpubind::render {

// `plan` may be null: the topology alone. Cores of an L3 domain with more than 32 cores are drawn
// as runs of cores with the same rank (or none), so 64-GPU nodes stay legible.
std::string node_svg(const topo::Topology& t, const plan::Plan* plan);

// `compare --format svg`: every strategy's plan as a small map of the node (one column per NUMA
// node, a square per core in its rank's colour, the GPUs and memory), one panel each, with its
// score and the ranks it puts off their GPU's NUMA node in red: small multiples.
std::string compare_svg(const topo::Topology& t, const plan::Comparison& c);

}  // namespace gpubind::render
