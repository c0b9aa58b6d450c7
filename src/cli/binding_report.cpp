#include "cli/binding_report.hpp"

#include "render/plan_render.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

std::string describe_binding(const plan::RankBinding& rb, bind::MemoryApplied memory) {
  std::vector<std::string> gpus;
  for (const auto& g : rb.gpus) gpus.push_back(std::to_string(g.index) + " (" + g.pci + ")");
  std::string note = bind::memory_applied_note(memory);
  std::string mem = rb.mem_policy == plan::MemPolicy::none
                        ? "unchanged"
                        : std::string(plan::to_string(rb.mem_policy)) + " " + join_numbers(rb.mem_nodes) + (note.empty() ? "" : " " + note);
  std::vector<std::string> nics;
  for (const auto& n : rb.nics) nics.push_back(n.name.empty() ? n.pci : n.name);
  return std::string(gpus.size() > 1 ? "GPUs " : "GPU ") + (gpus.empty() ? std::string("none") : join(gpus, ", ")) + ", CPUs " +
         rb.cpus.to_list() + ", memory " + mem + (nics.empty() ? "" : (nics.size() > 1 ? ", NICs " : ", NIC ") + join(nics, "; "));
}

std::string report_line(const topo::Topology& t, int pid, long global_rank, unsigned local_size, const plan::RankBinding& rb,
                        bind::MemoryApplied memory) {
  return "[" + one_line(t.hostname.empty() ? "localhost" : t.hostname) + ":" + std::to_string(pid) + "] gpubind: rank " +
         (global_rank < 0 ? std::string("?") : std::to_string(global_rank)) + " (local " + std::to_string(rb.local_rank) + " of " +
         std::to_string(local_size) + ") bound to " + describe_binding(rb, memory) + ": " + render::core_map(t, rb.cpus);
}

}  // namespace gpubind::cli
