#pragma once
// `gpubind topo` as a library call: a loaded topology, cross-checked against this machine's GPU
// runtime libraries and measured (host-to-device copies from each NUMA node) where asked for.
#include "topo/report.hpp"

namespace gpubind::discover {

struct TopoAsk {
  bool gpu_runtime = false;  // load NVML / ROCm SMI for the topology's vendors and cross-check
  bool measure = false;      // copy bandwidth from each NUMA node with CPUs to each GPU
};

topo::TopoReport describe_topology(topo::Topology t, const TopoAsk& ask);

}  // namespace gpubind::discover
