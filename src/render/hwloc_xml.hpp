#pragma once
// Writes a Topology as hwloc 2 XML (`gpubind topo --format xml`), loadable by hwloc/lstopo and
// by gpubind as --topology. Pure text generation: no hwloc call, so it works for every source.
// What hwloc XML cannot hold from the model: NICs without a PCI address; NVLink/xGMI links
// (hwloc stores those as vendor-plugin distance matrices); L3 domains that span several NUMA
// nodes of one package (Intel SNC), which are left out so the tree stays nested; which CPU-less
// node holds a GPU's memory (Gpu::memory_numa).
#include <string>

#include "topo/topology.hpp"

namespace gpubind::render {

std::string to_hwloc_xml(const topo::Topology& t);

}  // namespace gpubind::render
