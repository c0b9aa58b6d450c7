#include "bind/launcher_binding.hpp"

#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

unsigned cores_in(const topo::Topology& t, const CpuSet& cpus) {
  unsigned n = 0;
  for (const topo::Core& c : t.cores) n += c.pus.intersects(cpus);
  return n;
}

// The PUs in `cpus` of the core holding its highest PU (the plan's "last core", for NCCL_PROXY_CPUSET).
CpuSet last_core_of(const topo::Topology& t, const CpuSet& cpus) {
  std::optional<unsigned> top = cpus.last();
  for (const topo::Core& c : t.cores)
    if (top && c.pus.test(*top)) return c.pus & cpus;
  return top ? CpuSet::of({*top}) : CpuSet();
}

}  // namespace

LauncherBinding judge_launcher_binding(const topo::Topology& t, plan::RankBinding& rb, const CpuSet& launcher,
                                       const CpuSet& allowed, bool keep) {
  LauncherBinding out;
  out.launcher = launcher;
  if (launcher.empty() || allowed.is_subset_of(launcher)) return out;  // not pinned by the launcher
  if (launcher == rb.cpus) {
    out.kind = LauncherBinding::Kind::same;
    return out;
  }
  std::string who = "local rank " + std::to_string(rb.local_rank);
  // Near: the GPU's node(s); a rank without GPU has its memory node(s).
  std::vector<unsigned> gpu_nodes;
  for (const plan::GpuRef& g : rb.gpus)
    if (const topo::Gpu* gpu = topo::find_gpu(t, g.pci); gpu && gpu->numa)
      for (unsigned n : topo::nodes_with_cpus(t, *gpu->numa)) gpu_nodes.push_back(n);
  if (rb.gpus.empty()) gpu_nodes = rb.mem_nodes;
  CpuSet near = topo::cpus_of_nodes(t, gpu_nodes);
  unsigned have = cores_in(t, launcher), want = cores_in(t, rb.cpus);
  if (keep) {
    if (!near.empty() && launcher.is_subset_of(near) && have >= want) {
      out.kind = LauncherBinding::Kind::kept;
      out.note = who + ": keeps the launcher's CPUs " + launcher.to_list() + " (on the rank's NUMA node, " + std::to_string(have) +
                 " core(s); the plan's were " + rb.cpus.to_list() + ")";
      rb.cpus = launcher;
      for (auto& [k, v] : rb.env) {
        if (plan::is_pool_size_env(k)) v = std::to_string(std::max(1u, have));
        if (k == plan::kNcclProxyCpusetEnv) v = join_numbers(last_core_of(t, launcher).ids());
      }
      return out;
    }
  }
  bool narrowed = rb.cpus.is_subset_of(launcher), widened = launcher.is_subset_of(rb.cpus);
  out.kind = narrowed ? LauncherBinding::Kind::narrowed : widened ? LauncherBinding::Kind::widened : LauncherBinding::Kind::replaced;
  out.note = who + ": gpubind " + (narrowed ? "narrows" : widened ? "widens" : "replaces") + " the launcher's binding to CPUs " +
             launcher.to_list() +
             " with " + rb.cpus.to_list();
  if (!keep)
    out.note += " (--keep-launcher-binding keeps a launcher binding on the GPU's node)";
  else
    out.note += std::string(" (not kept: ") +
                (near.empty()                   ? "the GPU's node is unknown"
                 : !launcher.is_subset_of(near) ? "CPUs " + (launcher - near).to_list() + " are off the GPU's node"
                                                : std::to_string(have) + " core(s) where the plan gives " + std::to_string(want)) +
                ")";
  return out;
}

bool pinned_to_whole_numa_nodes(const topo::Topology& t, const CpuSet& launcher, const CpuSet& allowed) {
  if (launcher.empty() || allowed.is_subset_of(launcher)) return false;
  CpuSet nodes;
  for (const topo::NumaNode& n : t.numa_nodes)
    if (n.cpus.intersects(launcher)) nodes |= n.cpus & allowed;
  return !nodes.empty() && nodes == launcher;
}

}  // namespace gpubind::bind
