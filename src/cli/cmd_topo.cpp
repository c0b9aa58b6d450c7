// gpubind topo: discover a topology and print it.
#include <cstdio>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "render/json_text.hpp"
#include "render/hwloc_xml.hpp"
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
  bool json = false, quiet = false, gpu_runtime = false, no_gpu_runtime = false;
  add_topology_option(app, topology);
  add_quiet_option(app, quiet);
  app.option("--format", format, "table (per NUMA node), matrix (like nvidia-smi topo -m), json, xml (hwloc 2 XML)")
      .one_of({"table", "matrix", "json", "xml"});
  app.flag("--json", json, "Same as --format json");
  app.flag("--gpu-runtime", gpu_runtime,
           "Cross-check the topology against this machine's GPU runtime libraries (NVML, ROCm SMI): the default for "
           "this machine; for a --topology file, when the file describes this machine");
  app.flag("--no-gpu-runtime", no_gpu_runtime, "Do not load the GPU runtime libraries");
  app.footer(R"(Examples:
  gpubind topo                                  this machine: NUMA nodes, GPUs, NICs
  gpubind topo --format matrix                  GPU/NIC matrix like nvidia-smi topo -m
  gpubind topo --topology node.xml --json       a captured hwloc XML (lstopo --of xml), as JSON
  gpubind topo --topology example:dgx-h100      a machine built into gpubind
  gpubind topo --topology node.json --gpu-runtime   an admin's file checked against this machine's NVML)");
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (json) format = "json";

  if (gpu_runtime && no_gpu_runtime) return fail(Error{"--gpu-runtime", "cannot be given with --no-gpu-runtime"}, kExitUsage);
  std::string source = topology_source(topology);
  auto topo = discover::load_topology(source);
  if (!topo) return fail(topo.error(), kExitFailure);
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

  std::string out;
  if (format == "table") out = render::topo_table(*topo);
  else if (format == "matrix") out = render::topo_matrix(*topo);
  else if (format == "json") {
    auto j = topo::to_json(*topo);
    if (findings) {
      j["gpu_runtime"] = nlohmann::ordered_json::array();
      for (const topo::RuntimeView& v : views) j["gpu_runtime"].push_back(topo::to_json(v));
      j["cross_check"] = nlohmann::ordered_json::array();
      for (const auto& f : *findings) j["cross_check"].push_back({{"gpu", f.gpu.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(f.gpu)}, {"source", f.source}, {"finding", f.what}});
    }
    out = render::json_text(j);
  }
  else out = render::to_hwloc_xml(*topo);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gpubind::cli
