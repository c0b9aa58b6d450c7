#include "bench/ab.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <map>

#include "bench/json_fields.hpp"
#include "util/strings.hpp"

namespace gpubind::bench {

using ojson = nlohmann::ordered_json;
using nlohmann::json;
using json_fields::field;

namespace {

constexpr size_t kMaxStepLine = 4096;
constexpr const char* kNoLookaround[] = {"(?=", "(?!", "(?<=", "(?<!", "\\1", "\\2"};
constexpr StepSource kSources[] = {StepSource::wall, StepSource::pattern, StepSource::file};

std::optional<double> unit_ms(const std::string& name) {
  if (name == "ms") return 1.0;
  if (name == "s") return 1000.0;
  if (name == "us") return 0.001;
  return std::nullopt;
}

}  // namespace

Result<StepPattern> parse_step_pattern(const std::string& text) {
  const std::string what = "--step-regex '" + text + "'";
  StepPattern p;
  p.text = text;
  // ECMAScript's and .NET's (?<name>...) in RE2's spelling, (?P<name>...); escapes and character
  // classes copied as they are.
  std::string re2_text;
  bool in_class = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      re2_text += text.substr(i, 2);
      ++i;
      continue;
    }
    if (in_class) {
      in_class = c != ']';
      re2_text += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      re2_text += c;
      if (i + 1 < text.size() && text[i + 1] == ']') re2_text += text[++i];  // "[]...]": a literal ]
      continue;
    }
    re2_text += c;
    if (c == '(' && text.compare(i + 1, 2, "?<") == 0 && i + 3 < text.size() && text[i + 3] != '=' && text[i + 3] != '!') {
      re2_text += "?P<";
      i += 2;
    }
  }
  RE2::Options options;
  options.set_log_errors(false);  // RE2 would print its own line on stderr
  auto re = std::make_shared<const RE2>(re2_text, options);
  if (!re->ok()) {
    bool lookaround = std::any_of(std::begin(kNoLookaround), std::end(kNoLookaround), [&](const char* s) { return text.find(s) != std::string::npos; });
    return Error{what, "not a regular expression: " + re->error() + (lookaround ? " (no lookahead, lookbehind or backreference: RE2 matches in linear time)" : ""),
                 ErrorKind::usage};
  }
  const std::map<std::string, int>& named = re->NamedCapturingGroups();
  if (named.empty())
    return Error{what, "no named group for the step time: write it as (?<ms>[0-9.]+), or (?<s>...) or (?<us>...) for its unit",
                 ErrorKind::usage};
  if (named.size() > 1) return Error{what, "more than one named group: name only the step time's", ErrorKind::usage};
  auto ms = unit_ms(named.begin()->first);
  if (!ms)
    return Error{what, "the group (?<" + named.begin()->first + ">...): name the step time's unit, ms, s or us", ErrorKind::usage};
  p.group = size_t(named.begin()->second);
  p.to_ms = *ms;
  p.regex = std::move(re);
  return p;
}

std::vector<double> step_times_in_output(const std::string& output, const StepPattern& p, unsigned rank) {
  std::vector<double> out;
  const std::string tag = "[" + std::to_string(rank) + "] ";
  if (!p.regex) return out;
  std::vector<re2::StringPiece> groups(p.group + 1);
  for (std::string_view line : split(output, '\n')) {
    // A step line is short: a long line (a JSON dump, a progress bar redrawn with \r) is no step's.
    if (!line.starts_with(tag) || line.size() > kMaxStepLine) continue;
    std::string_view rest = line.substr(tag.size());
    if (!p.regex->Match(re2::StringPiece(rest.data(), rest.size()), 0, rest.size(), RE2::UNANCHORED, groups.data(), int(groups.size())) ||
        groups[p.group].data() == nullptr)
      continue;
    if (auto v = parse_double(std::string_view(groups[p.group].data(), groups[p.group].size())); v && *v >= 0) out.push_back(*v * p.to_ms);
  }
  return out;
}

std::optional<std::string_view> rank_line_text(std::string_view line) {
  size_t close = line.find("] ");
  if (!line.starts_with("[") || close == std::string_view::npos || close < 2 || !parse_uint(line.substr(1, close - 1))) return std::nullopt;
  return line.substr(close + 2);
}

std::vector<std::string> rank_warnings_in_output(const std::string& output, std::string_view owner) {
  constexpr std::string_view kWarning = "gpubind: warning: ";
  std::vector<std::string> out;
  for (std::string_view line : split(output, '\n')) {
    auto text = rank_line_text(line);
    if (!text || !text->starts_with(kWarning)) continue;
    keep_warning(out, ranks_warning(trim(text->substr(kWarning.size())), owner), nullptr);
  }
  return out;
}

Result<std::vector<double>> step_times_in_file(const std::string& text) {
  std::vector<double> out;
  size_t n = 0;
  for (std::string_view line : split(text, '\n')) {
    ++n;
    std::string_view t = trim(line);
    if (t.empty() || t.starts_with("#")) continue;
    auto v = parse_double(t);
    if (!v || *v < 0) return Error{"line " + std::to_string(n), "'" + std::string(t.substr(0, 80)) + "' is not a step time in ms"};
    out.push_back(*v);
  }
  return out;
}

const char* to_string(StepSource s) {
  switch (s) {
    case StepSource::wall: return "wall";
    case StepSource::pattern: return "pattern";
    case StepSource::file: return "file";
  }
  return "?";
}

AbReport make_ab_report(const AbRecord& r) {
  AbReport rep;
  rep.base = r.strategies.empty() ? "" : r.strategies.front();
  std::vector<std::vector<double>> series;
  for (const std::string& name : r.strategies) {
    AbStrategyReport s;
    s.name = name;
    std::vector<double> all;
    double wall = 0;
    for (const AbRun& run : r.runs)
      if (run.strategy == name) {
        ++s.runs;
        wall += run.wall_s;
        all.insert(all.end(), run.step_ms.begin(), run.step_ms.end());
      }
    s.wall_mean_s = s.runs ? wall / double(s.runs) : 0;
    s.step_ms = summarize(all);
    rep.strategies.push_back(std::move(s));
    series.push_back(std::move(all));
  }
  for (size_t i = 1; i < rep.strategies.size(); ++i) {
    AbStrategyReport& s = rep.strategies[i];
    size_t block = s.runs ? series[i].size() / s.runs : 0;  // a run's steps: one block
    s.p50_vs_base = quantile_ratio(series[i], series[0], 0.50, block);
    s.p99_vs_base = quantile_ratio(series[i], series[0], 0.99, block);
    if (std::min(s.runs, rep.strategies[0].runs) < kMinAbRunsForVerdict)
      for (std::optional<RatioInterval>* v : {&s.p50_vs_base, &s.p99_vs_base})
        if (*v) (*v)->verdict = Verdict::too_few_runs;
  }
  size_t fewest_runs = ~size_t(0);
  for (const AbStrategyReport& s : rep.strategies) fewest_runs = std::min(fewest_runs, s.runs);
  if (rep.strategies.size() > 1 && fewest_runs < kMinAbRunsForVerdict)
    rep.notes.push_back("too few runs to tell: " + std::to_string(fewest_runs) + " run(s) of a policy, and a test over runs needs " +
                        std::to_string(kMinAbRunsForVerdict) + " of each (2 against 2 can reach p = 1/3 at best, 3 against 3 p = 1/10): " +
                        "the ratios are shown without a verdict; --rounds " + std::to_string(kMinAbRunsForVerdict) + " or more");
  size_t fewest = ~size_t(0);
  for (const auto& s : series) fewest = std::min(fewest, s.size());
  if (!series.empty() && fewest < min_steps_for_interval(0.5))
    rep.notes.push_back(std::string(r.source == StepSource::wall ? "wall time: one sample per run, " : "") + std::to_string(fewest) +
                        " sample(s) for a strategy: no ratio against " + rep.base + " without the " +
                        std::to_string(min_steps_for_interval(0.5)) + " an interval needs (" +
                        (r.source == StepSource::wall ? "more --rounds, or step times with --step-regex or --step-file" : "more steps or --rounds") + ")");
  else if (!series.empty() && fewest < min_steps_for_interval(0.99))
    rep.notes.push_back("the p99 needs " + std::to_string(min_steps_for_interval(0.99)) + " samples per strategy for an interval: with " +
                        std::to_string(fewest) + " only the p50 is compared");
  for (std::string& n : ab_node_notes(r)) rep.notes.push_back(std::move(n));
  return rep;
}

std::vector<std::string> ab_node_notes(const AbRecord& r) {
  std::vector<std::string> out;
  if (r.machine.allowed_cpus && r.ranks > r.machine.allowed_cpus)
    out.push_back("oversubscribed: " + std::to_string(r.ranks) + " ranks on " + std::to_string(r.machine.allowed_cpus) +
                  " allowed CPU(s): every policy shares CPUs, so this measures how each shares them, not where it runs");
  for (std::string& n : machine_notes(r.machine)) out.push_back(std::move(n));
  if (r.machine.numa_nodes <= 1)
    out.push_back("one NUMA node with CPUs: no strategy can put a rank away from its memory or its GPU's node here; what "
                  "differs is how each shares the CPUs");
  if (r.machine.gpus == 0) out.push_back("no GPU: the ranks were planned CPU-only, one per NUMA node unless -n said otherwise");
  return out;
}

ojson to_json(const AbRecord& r) {
  ojson j;
  j["format"] = kAbFormat;
  j["machine"] = machine_to_json(r.machine);
  j["config"] = {{"command", r.command},       {"launch_args", r.launch_args}, {"ranks", r.ranks},
                 {"strategies", r.strategies}, {"rounds", r.rounds},           {"warmup", r.warmup},
                 {"source", to_string(r.source)}, {"pattern", r.pattern},      {"step_rank", r.step_rank}};
  ojson runs = ojson::array();
  for (const AbRun& run : r.runs)
    runs.push_back({{"strategy", run.strategy}, {"round", run.round}, {"wall_s", run.wall_s}, {"step_ms", run.step_ms}});
  j["runs"] = std::move(runs);
  j["warnings"] = r.warnings;
  return j;
}

Result<AbRecord> ab_record_from_json(const json& j) {
  const std::string what = "bench --ab record";
  if (!j.is_object() || !j.contains("format") || j["format"] != kAbFormat)
    return Error{what, std::string("expected the output of gpubind bench --ab --json (format ") + kAbFormat + ")"};
  for (const char* key : {"machine", "config", "runs"})
    if (!j.contains(key)) return Error{what, std::string("missing '") + key + "'"};
  AbRecord r;
  auto machine = machine_from_json(j["machine"], what + ": machine");
  if (!machine) return machine.error();
  r.machine = *machine;
  const json& c = j["config"];
  const std::string cw = what + ": config";
  std::string source;
  for (auto st : {field(c, "command", r.command, cw), field(c, "launch_args", r.launch_args, cw), field(c, "ranks", r.ranks, cw),
                  field(c, "strategies", r.strategies, cw), field(c, "rounds", r.rounds, cw), field(c, "warmup", r.warmup, cw),
                  field(c, "source", source, cw), field(c, "pattern", r.pattern, cw), field(c, "step_rank", r.step_rank, cw)})
    if (!st) return st.error();
  auto known = std::find_if(std::begin(kSources), std::end(kSources), [&](StepSource k) { return source == to_string(k); });
  if (known == std::end(kSources)) return Error{cw, "unknown source '" + source + "' (wall, pattern or file)"};
  r.source = *known;
  if (r.strategies.empty()) return Error{cw, "no strategies"};
  if (!j["runs"].is_array()) return Error{what, "'runs' must be an array"};
  for (const json& run : j["runs"]) {
    AbRun a;
    const std::string rw = what + ": runs";
    for (auto st : {field(run, "strategy", a.strategy, rw), field(run, "round", a.round, rw), field(run, "wall_s", a.wall_s, rw),
                    field(run, "step_ms", a.step_ms, rw)})
      if (!st) return st.error();
    if (std::find(r.strategies.begin(), r.strategies.end(), a.strategy) == r.strategies.end())
      return Error{rw, "strategy '" + a.strategy + "' is not among config.strategies"};
    if (a.wall_s < 0 || std::any_of(a.step_ms.begin(), a.step_ms.end(), [](double v) { return !(v >= 0); }))
      return Error{rw, "a negative time"};
    r.runs.push_back(std::move(a));
  }
  if (j.contains("warnings"))  // not in the first records
    if (auto st = field(j, "warnings", r.warnings, what); !st) return st.error();
  return r;
}

}  // namespace gpubind::bench
