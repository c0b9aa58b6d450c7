#pragma once
// Renderings of `watch`: a table per interval (one row per rank, worst first, with its findings)
// and a summary at the end; JSON lines for programs (one object per interval, then the summary;
// schema in docs/cli.md). Names read from processes are shown escaped, as in `check`.
#include <nlohmann/json.hpp>
#include <string>

#include "watch/watch.hpp"

namespace gpubind::render {

inline constexpr int kWatchSchemaVersion = 1;

std::string interval_text(const watch::Interval& iv);
std::string summary_text(const watch::Summary& s);
// `node` (watch's node name) and `time` (RFC 3339, when the line was written) in every object, so
// lines from many nodes and runs can be merged.
nlohmann::ordered_json interval_json(const watch::Interval& iv, const std::string& node, const std::string& time);
nlohmann::ordered_json summary_json(const watch::Summary& s, const std::string& node, const std::string& time);

}  // namespace gpubind::render
