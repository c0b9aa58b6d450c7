// gpubind topo: discover a topology and print it.
#include <cstdio>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "discover/source.hpp"
#include "discover/topo_report.hpp"
#include "render/topo_text.hpp"
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
  app.same_as("--json", "--format", "json");
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
  auto topo = acquire_topology({.use = TopologyUse::describe, .flag = topology});
  if (!topo) return fail(topo.error());
  print_warnings(topo->warnings, quiet);

  // The topology, cross-checked against the GPU runtime libraries (the default on this machine)
  // and measured where asked for.
  auto report = discover::describe_topology(std::move(*topo), {!no_gpu_runtime && (gpu_runtime || source.empty()), measure});
  print_warnings(report.warnings, quiet);
  std::string out = render::topo_report(report, format);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gpubind::cli
