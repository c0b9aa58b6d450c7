#pragma once
// JSON output as every command prints it.
#include <nlohmann/json.hpp>
#include <string>

namespace gpubind::render {

// Indented, ending in a newline. Bytes that are not UTF-8 (a process name or command line read
// from /proc) become U+FFFD instead of failing the whole output.
std::string json_text(const nlohmann::ordered_json& j);
// The same on one line: JSON lines (`watch --json`).
std::string json_line(const nlohmann::ordered_json& j);

}  // namespace gpubind::render
