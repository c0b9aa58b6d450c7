#pragma once
// Text renderings of a Topology for `gpubind topo`. JSON is topo::to_json (src/topo/json.hpp);
// hwloc XML is discover::to_hwloc_xml.
#include <string>

#include "topo/cross_check.hpp"
#include "topo/report.hpp"
#include "topo/topology.hpp"

namespace gpubind::render {

// Summary, one row per NUMA node (CPUs, memory, GPUs, NICs), GPU and NIC tables, warnings.
std::string topo_table(const topo::Topology& t);

// The `nvidia-smi topo -m` layout: GPU x GPU/NIC path classes or NV#/XGMI links, CPU and NUMA
// affinity columns, the legend.
std::string topo_matrix(const topo::Topology& t);

// topo --measure: each GPU's host-to-device copy bandwidth from each NUMA node (GB/s), the
// nearest node measured ("-" when none is clearly nearest) and the GPU's NUMA node in use.
std::string measured_table(const topo::Topology& t, const std::vector<topo::MeasuredGpu>& measured);

// `gpubind topo`'s output in FORMAT: table (with the measured table after it), matrix, json
// (topo_json), xml (hwloc 2) or svg.
std::string topo_report(const topo::TopoReport& r, const std::string& format);
// topo::to_json, and the runtime libraries' views, the cross-check and the measurements where
// the report has them.
std::string topo_json(const topo::TopoReport& r);

// "0-3", or "unknown" for a device whose locality the source does not give.
std::string cpus_or_unknown(const std::optional<CpuSet>& cpus);
std::string numa_or_unknown(const std::optional<std::vector<unsigned>>& numa);
// A NIC as operators name it: its OS devices ("ib0,mlx5_0"), else its PCI address.
std::string nic_label(const topo::Nic& n);

}  // namespace gpubind::render
