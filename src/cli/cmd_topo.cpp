// gpubind topo: discover a topology and print it.
#include <cstdio>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "render/json_text.hpp"
#include "render/node_svg.hpp"
#include "render/hwloc_xml.hpp"
#include "discover/gpu_measure.hpp"
#include "discover/gpu_runtime.hpp"
#include "discover/source.hpp"
#include "render/topo_text.hpp"
#include "topo/cross_check.hpp"
#include "topo/json.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

int cmd_topo(const std::vector<std::string>& args) {
  Args app("Show the machine's sockets, NUMA nodes, L3 domains, cores, GPUs and NICs, their locality and "
           "the PCIe/NVLink path class between devices.",
           "gpubind topo");
  std::string topology;
  std::string format = "table";
  bool json = false, quiet = false, gpu_runtime = false, no_gpu_runtime = false, measure = false;
  add_topology_option(app, topology);
  add_quiet_option(app, quiet);
  app.option("--format", format,
             "table (per NUMA node), matrix (like nvidia-smi topo -m), json, xml (hwloc 2 XML), svg (a drawing, as lstopo's)")
      .one_of({"table", "matrix", "json", "xml", "svg"});
  app.flag("--json", json, "Same as --format json");
  app.flag("--gpu-runtime", gpu_runtime,
           "Cross-check the topology against this machine's GPU runtime libraries (NVML, ROCm SMI): the default for "
           "this machine; for a --topology file, when the file describes this machine");
  app.flag("--no-gpu-runtime", no_gpu_runtime, "Do not load the GPU runtime libraries");
  app.flag("--measure", measure,
           "Measure each GPU's host-to-device copy bandwidth from pinned memory on each NUMA node (CUDA / HIP runtime) "
           "and report the node it is really nearest to; this machine, or a --topology file describing it");
  app.footer(R"(Examples:
  gpubind topo                                  this machine: NUMA nodes, GPUs, NICs
  gpubind topo --format matrix                  GPU/NIC matrix like nvidia-smi topo -m
  gpubind topo --topology node.xml --json       a captured hwloc XML (lstopo --of xml), as JSON
  gpubind topo --topology example:dgx-h100      a machine built into gpubind
  gpubind topo --topology node.json --gpu-runtime   an admin's file checked against this machine's NVML
  gpubind topo --measure                        copy bandwidth from every NUMA node to every GPU)");
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (json) format = "json";

  if (gpu_runtime && no_gpu_runtime) return fail(Error{"--gpu-runtime", "cannot be given with --no-gpu-runtime", ErrorKind::usage});
  std::string source = topology_source(topology);
  auto topo = discover::load_topology(source);
  if (!topo) return fail(topo.error());
  print_warnings(topo->warnings, quiet);

  // The GPU runtime libraries' view, for the vendors the topology has: UUIDs and names filled in,
  // disagreements reported (topo/cross_check.hpp says which side is kept).
  std::optional<std::vector<topo::CrossCheckFinding>> findings;
  std::vector<topo::RuntimeView> views;
  if (!no_gpu_runtime && (gpu_runtime || source.empty())) {
    discover::GpuRuntimes runtimes = discover::open_gpu_runtimes(*topo, "no cross-check against the GPU runtime");
    print_warnings(runtimes.notes, quiet);
    if (!runtimes.empty()) {
      views = runtimes.views();
      findings = topo::cross_check(*topo, views);
      std::vector<std::string> lines;
      for (const auto& f : *findings) lines.push_back(topo::to_line(f));
      print_warnings(lines, quiet);
    }
  }

  // Measured locality: copies from each NUMA node with CPUs to each GPU (topo::cross_check_measured).
  std::optional<std::vector<topo::MeasuredGpu>> measured;
  if (measure) {
    discover::MeasureOptions mo;
    for (const topo::NumaNode& n : topo->numa_nodes)
      if (!n.cpus.empty()) mo.nodes.push_back({n.os_index, n.cpus & topo->allowed_cpus});
    bool nvidia = topo::has_gpu_of(*topo, topo::Vendor::nvidia), amd = topo::has_gpu_of(*topo, topo::Vendor::amd);
    if (!nvidia && !amd) {
      print_warnings({"--measure: the topology has no NVIDIA or AMD GPU to measure"}, quiet);
    } else {
      discover::Measurements m = discover::measure_copy_bandwidth(nvidia, amd, mo);
      print_warnings(m.notes, quiet);
      std::vector<std::string> lines;
      for (const auto& f : topo::cross_check_measured(*topo, m.gpus)) lines.push_back(topo::to_line(f));
      print_warnings(lines, quiet);
      measured = std::move(m.gpus);
    }
  }

  std::string out;
  if (format == "table") {
    out = render::topo_table(*topo);
    if (measured && !measured->empty()) out += render::measured_table(*topo, *measured);
  }
  else if (format == "matrix") out = render::topo_matrix(*topo);
  else if (format == "svg") out = render::node_svg(*topo);
  else if (format == "json") {
    auto j = topo::to_json(*topo);
    if (findings) {
      j["gpu_runtime"] = nlohmann::ordered_json::array();
      for (const topo::RuntimeView& v : views) j["gpu_runtime"].push_back(topo::to_json(v));
      j["cross_check"] = nlohmann::ordered_json::array();
      for (const auto& f : *findings) j["cross_check"].push_back({{"gpu", f.gpu.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(f.gpu)}, {"source", f.source}, {"finding", f.what}});
    }
    if (measured) {
      j["measured"] = nlohmann::ordered_json::array();
      for (const topo::MeasuredGpu& m : *measured) {
        nlohmann::ordered_json per_node = nlohmann::ordered_json::object();
        for (const auto& [n, bw] : m.bytes_per_second) per_node[std::to_string(n)] = bw;
        std::optional<unsigned> nearest = topo::nearest_measured(m);
        j["measured"].push_back({{"gpu", m.pci}, {"source", m.source}, {"bytes_per_second", per_node},
                                 {"nearest_node", nearest ? nlohmann::ordered_json(*nearest) : nlohmann::ordered_json()}});
      }
    }
    out = render::json_text(j);
  }
  else out = render::to_hwloc_xml(*topo);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gpubind::cli
