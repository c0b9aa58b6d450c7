#include "render/compare_render.hpp"

#include <cstdio>
#include <map>

#include "render/plan_render.hpp"
#include "render/table.hpp"

namespace gpubind::render {

namespace {

std::string nic_summary(const plan::Score& s) {
  std::map<std::string, unsigned> count;
  for (const auto& c : s.nic_path) count[c ? topo::to_string(*c) : "none"]++;
  std::string out;
  for (const char* k : {"PIX", "PXB", "PHB", "NODE", "SYS", "none"})
    if (count.count(k)) out += (out.empty() ? "" : " ") + std::to_string(count[k]) + "x" + k;
  return out.empty() ? "-" : out;
}

}  // namespace

std::string compare_text(const plan::Comparison& c) {
  TextTable t({"STRATEGY", "CPU LOCALITY", "MEM LOCALITY", "OVERLAP", "IDLE", "CORES/RANK", "NIC PATH"});
  for (const plan::StrategyOutcome& s : c.strategies) {
    if (!s.plan) {
      t.add({s.name, "n/a", "n/a", "-", "-", "-", "-"});
      continue;
    }
    const plan::Score& sc = s.plan->score;
    // The peers' rules choose no NIC: their NIC path is not theirs to score.
    t.add({s.name, format_share(sc.cpu_locality), format_share(sc.mem_locality),
           std::to_string(sc.overlap_cpus) + (sc.cores_known ? " CPUs" : " CPUs?"), std::to_string(sc.idle_cpus) + " CPUs",
           std::to_string(sc.min_cores) + "-" + std::to_string(sc.max_cores), s.gpubind_policy ? nic_summary(sc) : "-"});
  }
  std::string out = "Compare: " + std::to_string(c.ranks) + " rank(s) on " + c.topology_origin + "\n\n" + t.str() + "\n";
  char line[512];
  for (const plan::StrategyOutcome& s : c.strategies) {
    std::snprintf(line, sizeof line, "  %-21s %s\n", s.name.c_str(), s.description.c_str());
    out += line;
  }
  for (const plan::StrategyOutcome& s : c.strategies)
    if (!s.plan) out += "  " + s.name + ": cannot plan this: " + s.error + "\n";
  out += "\n  cpu locality: share of the ranks' CPUs on their GPU's NUMA node; memory locality: share of\n"
         "  memory placed there; overlap: CPUs given to more than one rank; idle: allowed CPUs no rank got.\n";
  return out;
}

nlohmann::ordered_json compare_json(const plan::Comparison& c) {
  nlohmann::ordered_json j;
  j["schema_version"] = kPlanSchemaVersion;
  j["topology"] = c.topology_origin;
  j["strategies"] = nlohmann::ordered_json::array();
  for (const plan::StrategyOutcome& s : c.strategies) {
    nlohmann::ordered_json e;
    e["strategy"] = s.name;
    e["description"] = s.description;
    if (s.plan) {
      e["score"] = plan_json(*s.plan, false)["score"];
    } else {
      e["score"] = nullptr;
      e["error"] = s.error;
    }
    j["strategies"].push_back(e);
  }
  j["warnings"] = c.warnings;
  return j;
}

}  // namespace gpubind::render
