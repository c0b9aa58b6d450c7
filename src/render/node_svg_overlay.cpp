// The overlays drawn on the node: a plan's ranks, check's processes.
#include <algorithm>

#include "check/check.hpp"
#include "render/node_svg_layout.hpp"
#include "render/plan_render.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

using namespace svg_layout;

Overlay plan_overlay(const plan::Plan& p) {
  Overlay o;
  o.title = "Plan: " + std::to_string(p.ranks.size()) + " rank(s), policy " + plan::to_string(p.policy) + ", memory " +
            plan::to_string(p.mem);
  for (const plan::RankBinding& rb : p.ranks) {
    Overlay::Entry e;
    e.id = rb.local_rank;
    e.cpus = rb.cpus;
    for (const plan::GpuRef& g : rb.gpus) e.gpus.push_back(g.pci);
    for (const plan::NicRef& n : rb.nics) e.nics.push_back(n.pci);
    if (rb.mem_policy != plan::MemPolicy::none) e.mem_nodes = rb.mem_nodes;
    std::vector<std::string> gpus, nics;
    for (const plan::GpuRef& g : rb.gpus) gpus.push_back("GPU" + std::to_string(g.index) + " " + g.pci);
    for (const plan::NicRef& n : rb.nics) nics.push_back((n.name.empty() ? n.pci : n.name) + " (" + topo::to_string(n.path) + ")");
    std::string mem = rb.mem_policy == plan::MemPolicy::none ? "first touch"
                                                             : std::string(plan::to_string(rb.mem_policy)) + " " + join_numbers(rb.mem_nodes);
    e.legend = "rank " + std::to_string(rb.local_rank) + "   " + (gpus.empty() ? "no GPU" : join(gpus, ", ")) + "   CPUs " +
               rb.cpus.to_list() + "   memory " + mem + (nics.empty() ? "" : "   NIC " + join(nics, ", "));
    o.entries.push_back(std::move(e));
  }
  const plan::Score& sc = p.score;
  o.footer.push_back("score: cpu locality " + format_share(sc.cpu_locality) + ", memory locality " + format_share(sc.mem_locality) +
                     ", overlap " + std::to_string(sc.overlap_cpus) + " CPU(s), idle " + std::to_string(sc.idle_cpus) +
                     " CPU(s), cores per rank " + std::to_string(sc.min_cores) + "-" + std::to_string(sc.max_cores));
  return o;
}

Overlay check_overlay(const check::Report& r) {
  Overlay o;
  o.by_rank = false;
  size_t bad = 0;
  for (size_t i = 0; i < r.processes.size(); ++i) {
    const check::ProcessReport& pr = r.processes[i];
    Overlay::Entry e;
    e.id = unsigned(i);
    std::string rank = check::local_rank_of(pr.state);
    e.name = "pid " + std::to_string(pr.state.pid) + (rank.empty() ? "" : " (rank " + rank + ")");
    e.cpus = pr.state.cpus_allowed;
    e.gpus = pr.gpus;
    if (pr.state.pages_per_node)
      for (const auto& [node, pages] : *pr.state.pages_per_node)
        if (pages) e.mem_nodes.push_back(node);
    for (const probe::ThreadState& t : pr.state.threads)
      if (t.last_cpu) e.ran_on.set(*t.last_cpu);
    std::vector<std::string> verdicts;
    for (const check::Finding& f : pr.findings) verdicts.push_back(std::string(check::to_string(f.verdict)) + ": " + f.reason);
    e.bad = !pr.findings.empty();
    bad += e.bad;
    e.legend = e.name + " " + one_line(pr.state.comm) + "   GPU " + (pr.gpus.empty() ? "-" : join(pr.gpus, ",")) + "   CPUs " +
               pr.state.cpus_allowed.to_list() + "   " +
               (!pr.judged ? "NO_GPU" : verdicts.empty() ? "OK" : join(verdicts, "; "));
    o.entries.push_back(std::move(e));
  }
  o.title = "Check: " + std::to_string(r.processes.size()) + " process(es), " +
            (bad ? std::to_string(bad) + " with findings" : std::string("all OK"));
  return o;
}

}  // namespace gpubind::render
