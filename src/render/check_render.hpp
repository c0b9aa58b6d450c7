#pragma once
// Renderings of a check::Report: a table with one line per process (and per thread with
// verbose), the findings' reasons, and JSON. Names and values read from a process (its name,
// its threads' names, its environment) are shown escaped: a name holding a terminal escape or a
// newline is text, not a command to the terminal.
#include <nlohmann/json.hpp>
#include <string>

#include "check/check.hpp"

namespace gpubind::render {

inline constexpr int kCheckSchemaVersion = 1;

std::string check_text(const check::Report& r, bool verbose);
nlohmann::ordered_json check_json(const check::Report& r);

}  // namespace gpubind::render
