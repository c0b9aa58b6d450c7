#pragma once
// `gpubind bench` output: the table per strategy with ratios against closest, the per-rank
// detail, JSON (the raw record, which --input reads back, plus the report), and an SVG box plot
// of the step-time distributions.
#include <nlohmann/json.hpp>
#include <string>

#include "bench/ab.hpp"
#include "bench/record.hpp"

namespace gpubind::render {

// `per_rank`: each rank's placement, migrations, idle and locality under every strategy too.
std::string bench_text(const bench::Record& r, const bench::Report& rep, bool per_rank);
nlohmann::ordered_json bench_json(const bench::Record& r, const bench::Report& rep);
// A standalone SVG document: one box per strategy (quartiles, median, whiskers to min and p99,
// the max as a dot), on a common millisecond axis.
std::string bench_svg(const bench::Record& r, const bench::Report& rep);

// bench --ab: the user's job per strategy (runs, samples, step-time distribution, mean wall time,
// the p50 against the base with its interval), the verdicts and the notes; JSON: the record
// (which --input reads back) with the report.
std::string bench_ab_text(const bench::AbRecord& r, const bench::AbReport& rep);
nlohmann::ordered_json bench_ab_json(const bench::AbRecord& r, const bench::AbReport& rep);

}  // namespace gpubind::render
