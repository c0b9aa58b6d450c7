#pragma once
// Renderings of a strategy comparison (plan/compare.hpp): the table and legend people read, and
// JSON (schema as `plan --format json`'s score, per strategy).
#include <nlohmann/json.hpp>
#include <string>

#include "plan/compare.hpp"

namespace gpubind::render {

std::string compare_text(const plan::Comparison& c);
nlohmann::ordered_json compare_json(const plan::Comparison& c);

}  // namespace gpubind::render
