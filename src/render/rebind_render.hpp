#pragma once
// `gpubind rebind`'s outcome as text (a row per rank, then what was left alone or went wrong) and
// as JSON (every thread, before and after).
#include <string>

#include <nlohmann/json.hpp>

#include "rebind/enforce.hpp"
#include "rebind/outcome.hpp"

namespace gpubind::render {

std::string rebind_text(const rebind::Outcome& o, const std::vector<rebind::Skipped>& skipped, bool verbose);
nlohmann::ordered_json rebind_json(const rebind::Outcome& o, const std::vector<rebind::Skipped>& skipped, const std::string& node,
                                   const std::string& time);

// One watch --enforce action: a line for the terminal ("rank 0 (PID 42) thread 43 (pt_nccl):
// allowed 0-223, repinned to 0-13 (GPUBIND_CPUS)"), and a JSON line's object ("type": "repin").
std::string repin_text(const rebind::Repin& r);
nlohmann::ordered_json repin_json(const rebind::Repin& r, const std::string& node, const std::string& time);

}  // namespace gpubind::render
