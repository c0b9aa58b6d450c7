#include "bind/pinning.hpp"

#include <algorithm>

#include "topo/pinning_env.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

namespace pe = topo::pinning_env;

std::string knob_setting(const std::map<std::string, std::string>& env, const char* name) { return name + ("=" + one_line(env.at(name))); }

const char* stop_of(const char* name) {
  for (const pe::Knob& k : pe::kKnobs)
    if (std::string_view(k.name) == name) return k.stop;
  return "";
}

// The CPUs of the NUMA node(s) of the rank's first GPU, and how to name it; empty when unknown.
std::pair<CpuSet, std::string> gpu_cpus(const topo::Topology& t, const plan::RankBinding& rb) {
  if (rb.gpus.empty()) return {};
  const topo::Gpu* g = topo::find_gpu(t, rb.gpus.front().pci);
  if (!g || !g->numa) return {{}, "GPU " + std::to_string(rb.gpus.front().index)};
  return {topo::cpus_of_nodes(t, topo::nodes_with_cpus(t, {*g->numa})), "GPU " + std::to_string(g->index)};
}

// "42 of them outside this rank's (local rank(s) 2's)" for CPUs `set`, "" when all are its own.
std::string outside(const plan::Plan& p, const plan::RankBinding& rb, const CpuSet& set) {
  CpuSet off = set - rb.cpus;
  if (off.empty()) return "";
  std::vector<unsigned> others;
  for (const plan::RankBinding& o : p.ranks)
    if (o.local_rank != rb.local_rank && o.cpus.intersects(off)) others.push_back(o.local_rank);
  return std::to_string(off.count()) + " of them outside this rank's " + rb.cpus.to_list() +
         (others.empty() ? std::string() : " (local rank(s) " + join_numbers(others) + "'s)");
}

}  // namespace

std::optional<CpuSet> parse_gomp_cpu_list(const std::string& text) {
  CpuSet out;
  bool any = false;
  for (std::string_view word : split(text, ' '))
    for (std::string_view item : split(word, ',')) {
      item = trim(item);
      if (item.empty()) continue;
      size_t colon = item.find(':'), dash = item.find('-');
      auto first = parse_uint(item.substr(0, std::min(dash, colon)));
      auto last = dash == std::string_view::npos
                      ? first
                      : parse_uint(item.substr(dash + 1, colon == std::string_view::npos ? colon : colon - dash - 1));
      auto stride = colon == std::string_view::npos ? std::optional<uint64_t>(1) : parse_uint(item.substr(colon + 1));
      if (!first || !last || !stride || *stride == 0 || *last < *first || *last > 65535) return std::nullopt;
      for (uint64_t c = *first; c <= *last; c += *stride) out.set(unsigned(c));
      any = true;
    }
  if (!any) return std::nullopt;
  return out;
}

std::vector<std::string> pinning_notes(const topo::Topology& t, const plan::Plan& p, const plan::RankBinding& rb,
                                       const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  auto [near, gpu] = gpu_cpus(t, rb);
  auto with_stop = [](std::string line, const std::string& off, const char* name) {
    return off.empty() ? line : line + ", " + off + ": " + stop_of(name);
  };
  if (pe::on(env, "NCCL_IGNORE_CPU_AFFINITY")) {
    std::string v = knob_setting(env, "NCCL_IGNORE_CPU_AFFINITY");
    if (near.empty())
      out.push_back(v + ": NCCL pins its threads to its GPU's NUMA node's CPUs, whatever the rank's; gpubind does not know that node here");
    else
      out.push_back(
          with_stop(v + ": NCCL will pin its threads to " + gpu + "'s " + std::to_string(near.count()) + " CPUs " + near.to_list(),
                    outside(p, rb, near), "NCCL_IGNORE_CPU_AFFINITY"));
  }
  if (pe::on(env, "NCCL_PROXY_CPUSET")) {
    const std::string& raw = env.at("NCCL_PROXY_CPUSET");
    std::string v = knob_setting(env, "NCCL_PROXY_CPUSET");
    CpuSet set = pe::nccl_cpu_list(raw);
    // NCCL reads CPU ids between commas, each as a C number: say so where that is not what it looks like.
    auto as_written = CpuSet::parse_list(raw);
    std::string read = as_written && *as_written == set ? "" : " (NCCL reads CPU ids between commas, each a C number: no ranges)";
    if (set.empty()) out.push_back(v + ": no CPU NCCL can use in it" + read + ": NCCL leaves its proxy threads where they are");
    else
      out.push_back(with_stop(v + ": NCCL 2.28 and later pin its proxy threads to CPUs " + set.to_list() + read, outside(p, rb, set),
                              "NCCL_PROXY_CPUSET"));
  }
  if (pe::on(env, "AMD_CPU_AFFINITY")) {
    std::string line = knob_setting(env, "AMD_CPU_AFFINITY") + ": the HIP runtime pins the thread that initializes it to " +
                       (near.empty() ? std::string("its GPU's nearest NUMA node") : gpu + "'s NUMA node, CPUs " + near.to_list()) +
                       " (ROCm since rocm-systems PR #6134 leaves a thread already narrowed, as gpubind's, alone), and every process that "
                       "thread starts inherits it";
    out.push_back(with_stop(line, near.empty() ? "" : outside(p, rb, near), "AMD_CPU_AFFINITY"));
  }
  if (pe::on(env, "AMD_GRAPH_CPU_AFFINITY")) {
    bool hold = pe::on(env, "AMD_GRAPH_CPU_AFFINITY_HOLD");
    std::string line = knob_setting(env, "AMD_GRAPH_CPU_AFFINITY") + ": the HIP runtime pins the thread launching a HIP graph to " +
                       (near.empty() ? std::string("its GPU's nearest NUMA node") : gpu + "'s NUMA node, CPUs " + near.to_list()) +
                       (hold ? ", and holds it there until the graph is destroyed (AMD_GRAPH_CPU_AFFINITY_HOLD)" : " for each launch");
    out.push_back(with_stop(line, near.empty() ? "" : outside(p, rb, near), "AMD_GRAPH_CPU_AFFINITY"));
  }
  if (pe::on(env, "AMD_GRAPH_NUMA_BIND")) {
    // Memory, not threads (rocm-systems PR #6738): the graph's host-side packet buffers, mbind preferred.
    std::string line = knob_setting(env, "AMD_GRAPH_NUMA_BIND") + ": the HIP runtime places its graph launch buffers on " +
                       (rb.gpus.empty() ? std::string("its GPU") : gpu) + "'s nearest NUMA node (preferred; no thread is pinned)";
    const topo::Gpu* g = rb.gpus.empty() ? nullptr : topo::find_gpu(t, rb.gpus.front().pci);
    if (g && g->numa && !rb.mem_nodes.empty() && !std::any_of(g->numa->begin(), g->numa->end(), [&](unsigned n) {
          return std::find(rb.mem_nodes.begin(), rb.mem_nodes.end(), n) != rb.mem_nodes.end();
        }))
      line += ", not the rank's memory node(s) " + join_numbers(rb.mem_nodes);
    out.push_back(line);
  }
  if (pe::on(env, "GOMP_CPU_AFFINITY")) {
    std::string v = knob_setting(env, "GOMP_CPU_AFFINITY");
    auto set = parse_gomp_cpu_list(env.at("GOMP_CPU_AFFINITY"));
    if (!set) {
      out.push_back(v + ": not a CPU list libgomp reads");
    } else {
      CpuSet mine = *set & rb.cpus;
      std::string line = v + ": libgomp pins its OpenMP threads in turn to the listed CPUs the process may use";
      if (mine.empty()) line += ", none of the rank's " + rb.cpus.to_list() + ": it pins none";
      else if (mine.count() < rb.cpus.count())
        line += ", " + mine.to_list() + " (" + std::to_string(mine.count()) + " of the rank's " + std::to_string(rb.cpus.count()) +
                "): threads beyond those share them; " + stop_of("GOMP_CPU_AFFINITY");
      else line += ", all the rank's " + rb.cpus.to_list();
      out.push_back(line);
    }
  }
  return out;
}

std::optional<std::string> narrowed_before(const topo::Topology& t, const CpuSet& affinity, const std::map<std::string, std::string>& env) {
  if (affinity.empty() || t.allowed_cpus.empty() || !affinity.is_subset_of(t.allowed_cpus) || affinity == t.allowed_cpus)
    return std::nullopt;
  std::string why;
  if (pe::on(env, "AMD_CPU_AFFINITY"))
    why = "AMD_CPU_AFFINITY is on: a HIP runtime loaded before gpubind (a wrapper's, the launcher's) pins its thread to its GPU's node";
  for (const topo::NumaNode& n : t.numa_nodes)
    if (why.empty() && !n.cpus.empty() && (n.cpus & t.allowed_cpus) == affinity)
      why = "they are NUMA node " + std::to_string(n.os_index) +
            "'s: a runtime imported before gpubind (HIP with AMD_CPU_AFFINITY=1), numactl or taskset pinned it there";
  return "this process may run on CPUs " + affinity.to_list() + ", fewer than its cgroup's " + t.allowed_cpus.to_list() +
         ", before gpubind planned" + (why.empty() ? std::string(" (taskset, numactl or a runtime pinned it)") : "; " + why) +
         ": planned within " + affinity.to_list();
}

}  // namespace gpubind::bind
