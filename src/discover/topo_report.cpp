#include "discover/topo_report.hpp"

#include "discover/gpu_measure.hpp"
#include "discover/gpu_runtime.hpp"

namespace gpubind::discover {

namespace {

// The GPU runtime libraries' view, for the vendors the topology has: UUIDs and names filled in,
// disagreements reported (topo/cross_check.hpp says which side is kept).
void cross_check_runtime(topo::TopoReport& r) {
  GpuRuntimes runtimes = open_gpu_runtimes(r.topology, "no cross-check against the GPU runtime");
  r.warnings.insert(r.warnings.end(), runtimes.notes.begin(), runtimes.notes.end());
  if (runtimes.empty()) return;
  r.runtime_views = runtimes.views();
  r.cross_check = topo::cross_check(r.topology, r.runtime_views);
  for (const auto& f : *r.cross_check) r.warnings.push_back(topo::to_line(f));
}

// Measured locality: copies from each NUMA node with CPUs to each GPU (topo::cross_check_measured).
void measure(topo::TopoReport& r) {
  const topo::Topology& t = r.topology;
  MeasureOptions mo;
  for (const topo::NumaNode& n : t.numa_nodes)
    if (!n.cpus.empty()) mo.nodes.push_back({n.os_index, n.cpus & t.allowed_cpus});
  bool nvidia = topo::has_gpu_of(t, topo::Vendor::nvidia), amd = topo::has_gpu_of(t, topo::Vendor::amd);
  if (!nvidia && !amd) {
    r.warnings.push_back("--measure: the topology has no NVIDIA or AMD GPU to measure");
    return;
  }
  Measurements m = measure_copy_bandwidth(nvidia, amd, mo);
  r.warnings.insert(r.warnings.end(), m.notes.begin(), m.notes.end());
  for (const auto& f : topo::cross_check_measured(r.topology, m.gpus)) r.warnings.push_back(topo::to_line(f));
  r.measured = std::move(m.gpus);
}

}  // namespace

topo::TopoReport describe_topology(topo::Topology t, const TopoAsk& ask) {
  topo::TopoReport r;
  r.topology = std::move(t);
  if (ask.gpu_runtime) cross_check_runtime(r);
  if (ask.measure) measure(r);
  return r;
}

}  // namespace gpubind::discover
