#include "render/doctor_render.hpp"

#include "render/metrics.hpp"
#include "render/table.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

namespace {
using oj = nlohmann::ordered_json;

std::string counts(const doctor::Report& r) {
  unsigned n[3] = {0, 0, 0};
  for (const doctor::CheckResult& c : r.results) ++n[int(c.severity)];
  return std::to_string(n[0]) + " OK, " + std::to_string(n[1]) + " WARN, " + std::to_string(n[2]) + " FAIL";
}
}  // namespace

std::string doctor_text(const doctor::Report& r, const std::string& node) {
  TextTable table({"CHECK", "RESULT", "WHY"});
  std::vector<std::string> fixes;
  for (const doctor::CheckResult& c : r.results) {
    table.add({c.check, doctor::to_string(c.severity), one_line(c.why)});
    if (!c.fix.empty()) fixes.push_back(c.check + ": " + one_line(c.fix));
  }
  std::vector<std::string> notes;
  for (const std::string& n : r.notes) notes.push_back(one_line(n));
  return table.str() + text_block("how to fix", fixes) + text_block("notes", notes) + "\ngpubind doctor on " + one_line(node) + ": " +
         counts(r) + "\n";
}

oj doctor_json(const doctor::Report& r, const std::string& node, const std::string& time) {
  oj j;
  j["node"] = node;
  j["time"] = time;
  j["worst"] = doctor::to_string(r.worst());
  j["checks"] = oj::array();
  for (const doctor::CheckResult& c : r.results)
    j["checks"].push_back({{"check", c.check}, {"severity", doctor::to_string(c.severity)}, {"why", c.why}, {"fix", c.fix.empty() ? oj() : oj(c.fix)}});
  j["notes"] = r.notes;
  return j;
}

std::string doctor_metrics(const doctor::Report& r, const std::string& node) {
  std::string out = "# HELP gpubind_doctor_check One series per gpubind doctor check, its severity (OK, WARN, FAIL) as a label\n"
                    "# TYPE gpubind_doctor_check gauge\n";
  for (const doctor::CheckResult& c : r.results)
    out += "gpubind_doctor_check" + label_set({{"node", node}, {"check", c.check}, {"severity", doctor::to_string(c.severity)}}) + " 1\n";
  return out;
}

}  // namespace gpubind::render
