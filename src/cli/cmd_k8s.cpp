// gpubind k8s: Kubernetes helpers. `check` judges, on a node (or a captured tree), whether the
// kubelet gave each GPU container CPUs of its own on its GPUs' NUMA node.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "discover/gpu_runtime.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "k8s/reader.hpp"
#include "render/json_text.hpp"
#include "render/k8s_render.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

namespace {

// The node's topology: --topology, else the captured tree's sys/ (--root), else this machine. With
// `gpu_runtime` (this machine, or a file describing it) the GPU libraries fill in the GPUs' UUIDs,
// by which the NVIDIA device plugin names them.
Result<topo::Topology> node_topology(const std::string& topology, const std::string& root_dir, bool gpu_runtime, bool quiet) {
  auto t = acquire_topology({.flag = topology, .root = root_dir, .root_is_machine = true, .quiet = quiet});
  if (t && gpu_runtime && !t->gpus.empty())
    print_warnings(discover::adopt_runtime_view(*t, discover::open_gpu_runtimes(*t, "GPUs named by UUID cannot be matched")), quiet);
  return t;
}

}  // namespace

int cmd_k8s(const std::vector<std::string>& args) {
  Args app("Kubernetes helpers. Usage: gpubind k8s check [--root DIR] [--topology SRC] [--json]", "gpubind k8s");
  app.require_subcommand();
  Args& check =
      app.subcommand("check",
                     "Judge each container the kubelet gave GPUs: its CPUs (CPU manager) against its GPUs' NUMA nodes "
                     "(device plugins, DRA): ALIGNED, CROSS_NUMA, REMOTE_NIC, SHARED_CPUS, SPLIT_L3, NO_EXCLUSIVE_CPUS, LOCALITY_UNKNOWN");
  std::string topology, root_dir, format = "text";
  k8s::ReaderOptions options;
  bool json = false, quiet = false, gpu_runtime = false, no_gpu_runtime = false;
  add_topology_option(check, topology);
  add_quiet_option(check, quiet);
  check.option("--root", root_dir, "Read the kubelet's files (and sys/, without --topology) under this directory, a captured node");
  check.option("--kubelet-dir", options.kubelet_dir, "The kubelet's --root-dir (default /var/lib/kubelet)");
  check.option("--kubelet-config", options.config, "The kubelet's configuration file (default KUBELET_DIR/config.yaml)");
  check.option("--pod-logs", options.pod_logs, "Where pods' log directories name them (default /var/log/pods)");
  check.option("--pod-resources", options.pod_resources,
               "The kubelet's pod-resources API socket (default KUBELET_DIR/pod-resources/kubelet.sock), asked where it exists");
  check.option("--resource-slices", options.resource_slices,
               "This node's ResourceSlices (kubectl get resourceslices -o json or yaml): DRA devices' PCI addresses, NUMA nodes, CPU ids");
  check.option("--cdi-dir", options.cdi_dir, "Where the CPU DRA driver writes its CDI specs (default /var/run/cdi)");
  bool no_pod_resources = false;
  check.flag("--no-pod-resources", no_pod_resources, "Do not ask the pod-resources API: read the kubelet's checkpoint files only");
  check.flag("--gpu-runtime", gpu_runtime,
             "Ask this machine's NVML / ROCm SMI for the GPUs' UUIDs also for a --topology file (the default for this machine)");
  check.flag("--no-gpu-runtime", no_gpu_runtime, "Do not ask NVML / ROCm SMI for this node's GPU UUIDs");
  check.flag("--json", json, "JSON output (same as --format json)");
  check.same_as("--json", "--format", "json");
  check.option("--format", format, "text, json").one_of({"text", "json"});
  check.footer(R"(Examples:
  gpubind k8s check                                 this node, as root
  gpubind k8s check --root /tmp/node7 --json        a node's captured /var/lib/kubelet, /var/log/pods and /sys
  gpubind k8s check --kubelet-config /etc/kubernetes/kubelet.yaml
  kubectl get resourceslices -o json > slices.json && gpubind k8s check --resource-slices slices.json)");
  if (int rc = app.parse(args); rc >= 0) return rc;

  if (gpu_runtime && no_gpu_runtime) return fail(Error{"--gpu-runtime", "cannot be given with --no-gpu-runtime", ErrorKind::usage});
  bool live = topology_source(topology).empty() && root_dir.empty();
  auto root = sys::open_fsroot(root_dir.empty() ? "/" : root_dir);
  if (!root) return fail(root.error());
  auto t = node_topology(topology, root_dir, gpu_runtime || (live && !no_gpu_runtime), quiet);
  if (!t) return fail(t.error());
  print_warnings(t->warnings, quiet);
  options.use_pod_resources = !no_pod_resources;
  auto state = k8s::read_node_state(**root, options);
  if (!state) return fail(state.error());
  k8s::Report report = k8s::judge(std::move(*state), *t);
  std::string out = json || format == "json" ? render::json_text(render::k8s_json(report)) : render::k8s_text(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return k8s::has_problems(report) ? kExitCheckFindings : kExitOk;
}

}  // namespace gpubind::cli
