#pragma once
// `gpubind bench` output: the table per strategy with ratios against closest, the per-rank
// detail, JSON (the raw record, which --input reads back, plus the report), and an SVG box plot
// of the step-time distributions.
#include <nlohmann/json.hpp>
#include <string>

#include "bench/record.hpp"

namespace gpubind::render {

std::string bench_text(const bench::Record& r, const bench::Report& rep);
nlohmann::ordered_json bench_json(const bench::Record& r, const bench::Report& rep);
// A standalone SVG document: one box per strategy (quartiles, median, whiskers to min and p99,
// the max as a dot), on a common millisecond axis.
std::string bench_svg(const bench::Record& r, const bench::Report& rep);

}  // namespace gpubind::render
