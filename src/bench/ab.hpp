#pragma once
// `gpubind bench --ab`: the user's own job run under each strategy in turn, and what its step
// times (or, without them, its wall time) say. Pure: the step times are read from what a run
// printed (or the file it wrote), and the report is made from the record, so both are tested on
// hand-made text and records; the runs themselves are in ab_runner.hpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/record.hpp"
#include "bench/stats.hpp"
#include "util/result.hpp"

namespace re2 {
class RE2;
}

namespace gpubind::bench {

// --step-regex: a regular expression (RE2's syntax, which takes the usual ECMAScript and Python
// patterns but no lookaround or backreference) with one named group that holds the step time and
// names its unit: (?<ms>...), (?<s>...) or (?<us>...) ((?P<ms>...), Python's spelling, too). RE2
// matches in time linear in the line and uses no recursion, so no pattern a user writes can hang
// bench or overflow its stack (std::regex did both: '(?<ms>(a|aa)+)b' over 40 bytes took 38 s,
// nested groups under a repeat over a 4 KB line crashed).
struct StepPattern {
  std::string text;                  // as given
  std::shared_ptr<const re2::RE2> regex;  // compiled
  size_t group = 0;                       // the named group's number
  double to_ms = 1;                       // its unit in ms
};
Result<StepPattern> parse_step_pattern(const std::string& text);

// Where a run's step times come from.
enum class StepSource {
  wall,     // none: the run's wall time is its one sample
  pattern,  // the lines of one rank that match --step-regex
  file,     // a file the job writes, one step time in ms per line
};

// The step times (ms) in a run's output: the lines that launch --tag-output marked "[RANK] "
// for global rank `rank` and that match `p` (searched, not anchored); the matches in order. Lines
// over 4 KiB are not searched.
std::vector<double> step_times_in_output(const std::string& output, const StepPattern& p, unsigned rank);
// What a rank printed on a line that launch --tag-output marked "[RANK] ...", without the tag;
// nullopt for a line of launch's own.
std::optional<std::string_view> rank_line_text(std::string_view line);
// The warnings the ranks' binding printed in a run's output ("[RANK] gpubind: warning: ..."), each
// as ranks_warning gives it for `owner`, distinct, in order.
std::vector<std::string> rank_warnings_in_output(const std::string& output, std::string_view owner);
// A step file's times: one number (ms) per line; blank lines and lines starting with '#' are
// skipped; anything else is an Error naming the line.
Result<std::vector<double>> step_times_in_file(const std::string& text);

struct AbRun {
  std::string strategy;
  unsigned round = 0;
  double wall_s = 0;
  std::vector<double> step_ms;  // measured (after --warmup), in order; the wall time's ms for StepSource::wall
};

struct AbRecord {
  MachineInfo machine;
  std::vector<std::string> command;     // the user's
  std::vector<std::string> launch_args;  // the plan flags given to launch (-n 2 ...)
  unsigned ranks = 0;                   // as launch planned them
  std::vector<std::string> strategies;  // in --ab order; the first is the base
  unsigned rounds = 0;
  unsigned warmup = 0;  // step times skipped at the start of every run
  StepSource source = StepSource::wall;
  std::string pattern;    // --step-regex, or --step-file's path
  unsigned step_rank = 0;  // whose lines
  std::vector<AbRun> runs;  // in the order they ran
  std::vector<std::string> warnings;  // the ranks' binding warnings, each once ("closest's ranks: ...")
};

struct AbStrategyReport {
  std::string name;
  size_t runs = 0;
  Summary step_ms;
  double wall_mean_s = 0;
  // Against the base (the first of --ab), with 95 % intervals from a moving-block bootstrap in
  // blocks of one run's steps: absent for the base, or with too few samples (20 for the p50, 500
  // for the p99, as for the synthetic job).
  std::optional<RatioInterval> p50_vs_base, p99_vs_base;
};

// The runs of each policy below which bench --ab gives no verdict. Its interval resamples whole
// runs, so it can be no surer than a test over runs: the smallest two-sided p of an exact
// permutation test of n runs against n is 2/C(2n,n), 0.33 at 2, 0.10 at 3, 0.029 at 4. With 2 runs
// an A/A test here gave "1.30x [1.28-1.52] slower" in 2 of 3 tries.
inline constexpr size_t kMinAbRunsForVerdict = 4;

struct AbReport {
  std::string base;
  std::vector<AbStrategyReport> strategies;
  std::vector<std::string> notes;
};

const char* to_string(StepSource s);  // "wall", "pattern", "file"
AbReport make_ab_report(const AbRecord& r);
// What the node lets the A/B show (other load, stolen time, one NUMA node, no GPU): part of the
// report's notes, and said before the first run.
std::vector<std::string> ab_node_notes(const AbRecord& r);

inline constexpr const char* kAbFormat = "gpubind-bench-ab/1";
nlohmann::ordered_json to_json(const AbRecord& r);
Result<AbRecord> ab_record_from_json(const nlohmann::json& j);

}  // namespace gpubind::bench
