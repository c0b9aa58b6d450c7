// gpubind doctor: the node-level causes of jitter that binding alone cannot cure, judged before a
// job starts, with exit codes fit for a node health check.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "discover/topo_report.hpp"
#include "doctor/doctor.hpp"
#include "doctor/reader.hpp"
#include "plan/slurm_node.hpp"
#include "render/doctor_render.hpp"
#include "render/json_text.hpp"
#include "sys/clock.hpp"
#include "sys/environment.hpp"
#include "sys/fsroot.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

namespace {

struct DoctorFlags {
  std::string topology, root_dir, textfile, node_name, slurm_conf, kubelet_config, slurm_version;
  bool json = false, no_gpu_runtime = false, quiet = false;
};

// The GPU runtime libraries' cross-check of this node's topology (topo --gpu-runtime's).
void add_gpu_runtime(const topo::Topology& t, const DoctorFlags& f, doctor::NodeFacts& facts) {
  if (!f.root_dir.empty()) facts.gpu_runtime_skipped = "a captured tree (--root): this machine's libraries describe another node";
  else if (f.no_gpu_runtime) facts.gpu_runtime_skipped = "--no-gpu-runtime";
  else if (t.gpus.empty()) facts.gpu_runtime_skipped = "no GPU in the topology";
  if (!facts.gpu_runtime_skipped.empty()) return;
  topo::TopoReport report = discover::describe_topology(t, {true, false});
  doctor::RuntimeCheck c;
  for (const topo::RuntimeView& v : report.runtime_views) {
    c.sources.push_back(v.source);
    c.gpus += unsigned(v.gpus.size());
  }
  for (const topo::CrossCheckFinding& x : report.cross_check.value_or(std::vector<topo::CrossCheckFinding>{}))
    c.findings.push_back((x.gpu.empty() ? "" : "GPU " + x.gpu + ": ") + x.what);
  if (!report.cross_check) c.notes = report.warnings;
  facts.gpu_runtime = c;
}

void add_doctor_options(Args& app, DoctorFlags& f) {
  add_topology_option(app, f.topology);
  app.option("--root", f.root_dir, "Read /proc, /sys and /etc under this directory (a captured node; needs --topology)");
  app.option("--slurm-conf", f.slurm_conf, "slurm.conf to read (default: $SLURM_CONF, else /etc/slurm/slurm.conf)");
  app.option("--slurm-version", f.slurm_version,
             "The Slurm release gres.conf is judged for (25.11; default: this node's slurmd -V; under --root, unknown: the newest rule)");
  app.option("--kubelet-config", f.kubelet_config, "The kubelet's configuration (default: /var/lib/kubelet/config.yaml)");
  app.flag("--no-gpu-runtime", f.no_gpu_runtime, "Do not load NVML or ROCm SMI to cross-check the GPUs");
  app.flag("--json", f.json, "JSON output, with the node and the time");
  app.option("--textfile", f.textfile,
             "Also replace FILE with gpubind_doctor_check{check,severity} metrics (node_exporter's textfile collector)");
  app.option("--node-name", f.node_name, "The node named in --json and the metrics (default: $NODE_NAME, else the hostname)");
  add_quiet_option(app, f.quiet);
  app.footer(R"(Exit codes: 0 every check OK; 3 a warning (no failure); 4 a failure; 1 an error; 2 usage.
Examples:
  gpubind doctor                         this node
  gpubind doctor --json --textfile /var/lib/node_exporter/gpubind-doctor.prom)");
}

}  // namespace

int cmd_doctor(const std::vector<std::string>& args) {
  Args app(
      "Check this node for the causes of jitter that binding alone cannot cure: NUMA balancing, isolated and "
      "adaptive-tick CPUs, housekeeping CPUs, interrupts, NUMA layout and distances, PCIe links, ACS and the IOMMU, "
      "memory reclaim, hugepage compaction, swap, the cgroup's memory nodes, Slurm's TaskPlugin and gres.conf, the kubelet's managers. "
      "Each check OK, WARN or FAIL with why and how to fix it.",
      "gpubind doctor");
  DoctorFlags f;
  add_doctor_options(app, f);
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (!f.slurm_version.empty())
    if (auto v = plan::parse_slurm_version(f.slurm_version); !v) return fail(v.error());
  if (!f.root_dir.empty() && topology_source(f.topology).empty())
    return fail(Error{"--root " + f.root_dir, "needs --topology: the captured node's topology (its GPUs and NICs)", ErrorKind::usage});
  auto topo = acquire_topology({.flag = f.topology, .root = f.root_dir, .quiet = f.quiet});
  if (!topo) return fail(topo.error());
  auto root = sys::open_fsroot(f.root_dir.empty() ? "/" : f.root_dir);
  if (!root) return fail(root.error());
  // A file named on this node is found from where the user stands; under --root, as on the captured node.
  auto here = [&](const std::string& path) { return f.root_dir.empty() && !path.empty() ? sys::absolute_path(path) : path; };
  std::string slurm_conf = !f.slurm_conf.empty() ? here(f.slurm_conf) : f.root_dir.empty() ? sys::env_value("SLURM_CONF").value_or("") : "";
  std::string node = node_name(f.node_name, "", *topo);
  auto facts = doctor::read_node_facts(**root, *topo, {slurm_conf, node, here(f.kubelet_config), !f.slurm_conf.empty(), !f.kubelet_config.empty()});
  if (!facts) return fail(facts.error());
  add_gpu_runtime(*topo, f, *facts);
  if (!f.slurm_version.empty()) facts->slurm_version = f.slurm_version;
  else if (f.root_dir.empty() && facts->slurm_node_found)
    if (auto installed = installed_slurm()) facts->slurm_version = installed->version;
  doctor::Report report = doctor::judge(*topo, *facts);
  std::string out = f.json ? render::json_text(render::doctor_json(report, node, sys::utc_timestamp())) : render::doctor_text(report, node);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!f.textfile.empty())
    if (Status s = sys::replace_file(f.textfile, render::doctor_metrics(report, node)); !s) return fail(Error{"--textfile", s.error().message()});
  switch (report.worst()) {
    case doctor::Severity::ok: return kExitOk;
    case doctor::Severity::warn: return kExitDoctorWarnings;
    case doctor::Severity::fail: return kExitDoctorFailures;
  }
  return kExitOk;
}

}  // namespace gpubind::cli
