#pragma once
// `gpubind doctor`'s report as a table (a row per check, then how to fix each finding), as JSON
// (with the node and the time) and as node_exporter textfile metrics
// (gpubind_doctor_check{node,check,severity} 1, one per check).
#include <string>

#include <nlohmann/json.hpp>

#include "doctor/doctor.hpp"

namespace gpubind::render {

std::string doctor_text(const doctor::Report& r, const std::string& node);
nlohmann::ordered_json doctor_json(const doctor::Report& r, const std::string& node, const std::string& time);
std::string doctor_metrics(const doctor::Report& r, const std::string& node);

}  // namespace gpubind::render
