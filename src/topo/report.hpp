#pragma once
// What `gpubind topo` reports: the topology, and where asked for, the GPU runtime libraries'
// view with the cross-check's findings, and measured copy bandwidth. Plain values: made by
// discover::describe_topology, rendered by render::topo_report.
#include <optional>
#include <string>
#include <vector>

#include "topo/cross_check.hpp"
#include "topo/topology.hpp"

namespace gpubind::topo {

struct TopoReport {
  Topology topology;
  std::vector<RuntimeView> runtime_views;                        // NVML, ROCm SMI
  std::optional<std::vector<CrossCheckFinding>> cross_check;     // nullopt: no runtime was asked or loaded
  std::optional<std::vector<MeasuredGpu>> measured;              // nullopt: not measured
  std::vector<std::string> warnings;  // the libraries' notes, disagreements, what could not be measured
};

}  // namespace gpubind::topo
