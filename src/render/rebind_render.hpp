#pragma once
// `gpubind rebind`'s outcome as text (a row per rank, then what was left alone or went wrong) and
// as JSON (every thread, before and after).
#include <string>

#include <nlohmann/json.hpp>

#include "rebind/outcome.hpp"

namespace gpubind::render {

std::string rebind_text(const rebind::Outcome& o, const std::vector<rebind::Skipped>& skipped, bool verbose);
nlohmann::ordered_json rebind_json(const rebind::Outcome& o, const std::vector<rebind::Skipped>& skipped, const std::string& node,
                                   const std::string& time);

}  // namespace gpubind::render
