#pragma once
// The node drawn as operators know it from lstopo (`topo --format svg`), and with a plan's ranks
// on it (`plan --format svg`): packages, NUMA nodes (memory-only ones marked), L3 domains, cores
// with their PUs, the GPUs and NICs under the node they hang from (devices behind one PCIe switch
// bracketed together), NVLink/xGMI groups, and with a plan each rank in its own colour on its
// cores, GPU, memory node and NIC, with a legend of the rank table and the score. Pure.
#include <string>
#include <vector>

#include "check/check.hpp"
#include "plan/compare.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace gpubind::render {

// What is drawn over the node: a plan's ranks, or the processes `check` judged. Each entry has
// its own colour (by id) on the cores it may use, its GPUs, NICs and memory nodes.
struct Overlay {
  std::string title;
  bool by_rank = true;  // entries are a plan's ranks ("rank N"); else processes, called by `name`
  struct Entry {
    unsigned id = 0;
    std::string name;
    CpuSet cpus;
    std::vector<std::string> gpus, nics;  // PCI addresses
    std::vector<unsigned> mem_nodes;
    CpuSet ran_on;       // where its threads last ran (check): a dot on those cores
    std::string legend;  // its line under the drawing
    bool bad = false;    // a finding: drawn in red
  };
  std::vector<Entry> entries;
  std::vector<std::string> footer;  // lines after the legend (the plan's score, the verdicts)
};

Overlay plan_overlay(const plan::Plan& p);
// The processes of a check report: their allowed CPUs, their GPUs, the nodes holding their pages
// (with --numa-maps), where their threads last ran, and their verdicts.
Overlay check_overlay(const check::Report& r);

// The node alone, or with an overlay. Cores of an L3 domain with more than 64 cores are drawn as
// runs of cores with the same owner (or none), so the largest nodes stay legible.
std::string node_svg(const topo::Topology& t, const Overlay* overlay = nullptr);
// The node with a plan's ranks on it (node_svg of plan_overlay).
std::string plan_svg(const topo::Topology& t, const plan::Plan& p);

// `compare --format svg`: every strategy's plan as a small map of the node (one column per NUMA
// node, a square per core in its rank's colour, the GPUs and memory), one panel each, with its
// score and the ranks it puts off their GPU's NUMA node in red: small multiples.
std::string compare_svg(const topo::Topology& t, const plan::Comparison& c);

}  // namespace gpubind::render
