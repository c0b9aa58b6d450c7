#include "render/bench_render.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "render/svg.hpp"
#include "render/table.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

using bench::Record;
using bench::Report;
using bench::StrategyReport;

namespace {

std::string ms(double v) { return fixed(v, v < 10 ? 3 : v < 100 ? 2 : 1); }

std::string pct(std::optional<double> v) { return v ? fixed(*v * 100, 1) + "%" : "-"; }


// "1.07x [0.95-1.20]"; "-" without an interval (closest itself, too few steps).
std::string interval_text(const std::optional<bench::RatioInterval>& v) {
  if (!v) return "-";
  return fixed(v->estimate, 2) + "x [" + fixed(v->low, 2) + "-" + fixed(v->high, 2) + "]";
}

// "1.42x [1.30-1.55] slower"
std::string verdict_text(const std::optional<bench::RatioInterval>& v) {
  if (!v) return "- (too few steps for an interval)";
  return interval_text(v) + " " + bench::to_string(v->verdict);
}

nlohmann::ordered_json summary_json(const bench::Summary& m) {
  return {{"count", m.count}, {"min", m.min}, {"p25", m.p25}, {"p50", m.p50}, {"p75", m.p75},
          {"p99", m.p99},     {"max", m.max}, {"mean", m.mean}, {"cv", m.cv}};
}

nlohmann::ordered_json interval_json(const std::optional<bench::RatioInterval>& v) {
  if (!v) return nullptr;
  return {{"ratio", v->estimate}, {"low", v->low}, {"high", v->high}, {"confidence", 0.95}, {"verdict", bench::to_string(v->verdict)}};
}

std::string plural(unsigned n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string nodes_text(const std::vector<unsigned>& v) { return v.empty() ? "-" : join_numbers(v); }

std::string machine_line(const bench::MachineInfo& m) {
  std::string s = "machine " + m.name + ": " + plural(m.packages, "package", "packages") + ", " +
                  plural(m.numa_nodes, "NUMA node", "NUMA nodes");
  if (m.memory_nodes) s += " (+" + plural(m.memory_nodes, "memory-only node", "memory-only nodes") + ")";
  s += ", " + plural(m.cpus, "CPU", "CPUs") + " (" + std::to_string(m.allowed_cpus) + " allowed), " +
       (m.gpus ? plural(m.gpus, "GPU", "GPUs") : std::string("no GPU"));
  return s;
}

std::string config_line(const bench::Config& c) {
  return "gpubind bench: " + plural(c.ranks, "rank", "ranks") + " x " + plural(c.threads, "thread", "threads") + ", " +
         std::to_string(c.steps) + " steps per strategy in " + plural(c.rounds, "interleaved round", "interleaved rounds") +
         " (+" + std::to_string(c.warmup) + " warm-up each), " + human_bytes(c.buffer_bytes) + " streamed per thread per step, " +
         (c.noise ? "--noise " + std::to_string(c.noise) : std::string("no noise"));
}

// Whether the record holds runs with the noise on reserved CPUs (then each placement is its own section).
bool placed(const Record& r) {
  return std::any_of(r.strategies.begin(), r.strategies.end(),
                     [](const bench::StrategyRecord& s) { return s.noise == bench::NoisePlacement::reserved; });
}

// A strategy's name, with its noise placement when the record has two.
std::string label(const std::string& name, bench::NoisePlacement noise, bool two) {
  return two ? name + " (noise " + bench::to_string(noise) + ")" : name;
}

// Each rank's placement and what it did, under every strategy.
std::string rank_table(const Record& r) {
  TextTable ranks({"STRATEGY", "RANK", "GPU", "CPUS", "MEMORY", "HOME", "MIGRATIONS", "IDLE", "CROSS-NUMA", "REMOTE MEM"});
  for (const bench::StrategyRecord& s : r.strategies)
    for (const bench::RankRecord& k : s.ranks) {
      std::string memory = k.mem_policy == "none" ? "first touch" : k.mem_policy + " " + nodes_text(k.mem_nodes);
      ranks.add({label(s.name, s.noise, placed(r)), std::to_string(k.rank), k.gpu.empty() ? "-" : k.gpu, k.cpus.to_list(), memory, nodes_text(k.home_nodes),
                 k.migrations ? std::to_string(*k.migrations) : "-", pct(bench::idle_share(k)),
                 pct(k.work_s > 0 ? std::optional<double>(k.off_home_s / k.work_s) : std::nullopt),
                 pct(k.pages ? std::optional<double>(double(k.remote_pages) / double(k.pages)) : std::nullopt)});
    }
  return ranks.str("  ");
}

std::string placement_heading(const Record& r, bench::NoisePlacement noise) {
  if (noise == bench::NoisePlacement::reserved)
    return "noise on the reserved CPUs " + r.config.reserved.to_list() + ", every strategy's ranks planned on the others:\n";
  return "noise roaming over every allowed CPU:\n";
}

// The table of the strategies run under one noise placement.
std::string placement_table(const Record& r, const Report& rep, bench::NoisePlacement noise) {
  std::vector<std::string> header = {"STRATEGY",   "P50 MS",     "P99 MS",         "MAX MS",         "JITTER CV",
                                     "IDLE MEAN",  "IDLE MAX",   "MIGR/RANK/S",    "CROSS-NUMA",     "REMOTE MEM",
                                     "MEM/RANK",   "P50 VS CLOSEST (95%)"};
  if (r.config.gpu) header.insert(header.begin() + 11, "H2D GB/S");
  TextTable t(header);
  for (const StrategyReport& s : rep.strategies) {
    if (s.noise != noise) continue;
    std::vector<std::string> row = {s.name, ms(s.step_ms.p50), ms(s.step_ms.p99), ms(s.step_ms.max), pct(s.step_ms.cv),
                                    pct(s.idle_mean), pct(s.idle_max),
                                    s.migrations_per_rank_s ? fixed(*s.migrations_per_rank_s, 1) : "-", pct(s.cross_numa),
                                    pct(s.remote_memory), human_bytes(s.footprint_bytes), interval_text(s.p50_vs_closest)};
    if (r.config.gpu) row.insert(row.begin() + 11, s.h2d_bytes_per_s ? fixed(*s.h2d_bytes_per_s / 1e9, 1) : "-");
    t.add(std::move(row));
  }
  return t.str();
}

// Their verdicts against closest (under the same placement).
std::string placement_verdicts(const Report& rep, bench::NoisePlacement noise) {
  std::vector<std::string> verdicts;
  for (const StrategyReport& s : rep.strategies)
    if (s.noise == noise && (s.p50_vs_closest || s.p99_vs_closest))
      verdicts.push_back(s.name + ": p50 " + verdict_text(s.p50_vs_closest) + "; p99 " + verdict_text(s.p99_vs_closest));
  if (verdicts.empty()) return "";
  return text_block("against closest (step time, 95 % interval from a moving-block bootstrap of the steps)", verdicts);
}

const char* kLegend =
    "\n  step: the slowest rank's pace (barrier to barrier), per sample for a bigger batch; jitter CV: its standard\n"
    "  deviation over its mean; idle: the share of the step a rank waits at the barrier (its GPU would idle);\n"
    "  cross-NUMA: the share of work time on CPUs outside the rank's home node (its GPU's); remote mem: the\n"
    "  share of its buffer's pages outside it; mem/rank: what a rank streams every step.\n";

}  // namespace

std::string bench_text(const Record& r, const Report& rep, bool per_rank) {
  std::string out = config_line(r.config) + "\n" + machine_line(r.machine) + "\n\n";
  std::string h2d = r.config.gpu ? "  h2d: every rank's copies of its buffer to its GPU, bytes over their time on the GPUs.\n" : "";
  if (!placed(r)) {
    out += placement_table(r, rep, bench::NoisePlacement::roaming) + kLegend + h2d +
           placement_verdicts(rep, bench::NoisePlacement::roaming);
  } else {
    bool first = true;
    for (bench::NoisePlacement noise : {bench::NoisePlacement::roaming, bench::NoisePlacement::reserved})
      if (std::any_of(rep.strategies.begin(), rep.strategies.end(), [&](const StrategyReport& s) { return s.noise == noise; })) {
        out += (first ? "" : "\n") + placement_heading(r, noise) + placement_table(r, rep, noise) + placement_verdicts(rep, noise);
        first = false;
      }
    out += kLegend + h2d;
  }
  if (rep.reserved_vs_roaming_p50 || rep.reserved_vs_roaming_p99)
    out += text_block("closest with the noise on the reserved CPUs against closest with it roaming (its ranks without the reserved CPUs)",
                      {"p50 " + verdict_text(rep.reserved_vs_roaming_p50), "p99 " + verdict_text(rep.reserved_vs_roaming_p99)});
  if (per_rank) out += "\nper rank:\n" + rank_table(r);
  out += text_block("notes", rep.notes);
  out += text_block("warnings", r.warnings);
  return out;
}

namespace {

std::string upper_case(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Where an --ab run's samples came from, in words.
std::string ab_source(const bench::AbRecord& r) {
  std::string skipped = r.warmup ? ", the first " + std::to_string(r.warmup) + " of each run skipped (--warmup)" : "";
  switch (r.source) {
    case bench::StepSource::pattern:
      return "step times: rank " + std::to_string(r.step_rank) + "'s lines matching '" + r.pattern + "'" + skipped;
    case bench::StepSource::file: return "step times: the job's " + r.pattern + skipped;
    case bench::StepSource::wall: break;
  }
  return "samples: each run's wall time (no --step-regex or --step-file)";
}

}  // namespace

std::string bench_ab_text(const bench::AbRecord& r, const bench::AbReport& rep) {
  std::string launch = r.launch_args.empty() ? "" : " " + join(r.launch_args, " ");
  std::string out = "gpubind bench --ab " + join(r.strategies, ",") + ", " + plural(r.rounds, "round", "rounds") + ": " +
                    join(r.command, " ") + "\n  through gpubind launch" + launch + " (" + plural(r.ranks, "rank", "ranks") +
                    "); " + ab_source(r) + "\n" + machine_line(r.machine) + "\n\n";
  TextTable t({"STRATEGY", "RUNS", "SAMPLES", "P50 MS", "P99 MS", "MAX MS", "JITTER CV", "WALL S", "P50 VS " + upper_case(rep.base) + " (95%)"});
  std::vector<std::string> verdicts;
  for (const bench::AbStrategyReport& s : rep.strategies) {
    t.add({s.name, std::to_string(s.runs), std::to_string(s.step_ms.count), ms(s.step_ms.p50), ms(s.step_ms.p99), ms(s.step_ms.max),
           pct(s.step_ms.cv), fixed(s.wall_mean_s, 2), interval_text(s.p50_vs_base)});
    if (s.p50_vs_base || s.p99_vs_base)
      verdicts.push_back(s.name + ": p50 " + verdict_text(s.p50_vs_base) + "; p99 " + verdict_text(s.p99_vs_base));
  }
  out += t.str();
  out += "\n  samples: the step times of all runs of a strategy (or their wall times); wall s: a run's mean wall time,\n"
         "  start-up included.\n";
  if (!verdicts.empty())
    out += text_block("against " + rep.base + " (95 % interval from a moving-block bootstrap, one run's samples a block)", verdicts);
  out += text_block("notes", rep.notes);
  out += text_block("warnings", r.warnings);
  return out;
}

nlohmann::ordered_json bench_ab_json(const bench::AbRecord& r, const bench::AbReport& rep) {
  nlohmann::ordered_json raw = bench::to_json(r), j;
  j["format"] = raw["format"];
  j["machine"] = raw["machine"];
  j["config"] = raw["config"];
  j["base"] = rep.base;
  j["results"] = nlohmann::ordered_json::array();
  for (const bench::AbStrategyReport& s : rep.strategies) {
    j["results"].push_back({{"strategy", s.name},
                            {"runs", s.runs},
                            {"step_ms", summary_json(s.step_ms)},
                            {"wall_mean_s", s.wall_mean_s},
                            {"p50_vs_base", interval_json(s.p50_vs_base)},
                            {"p99_vs_base", interval_json(s.p99_vs_base)}});
  }
  j["notes"] = rep.notes;
  j["warnings"] = raw["warnings"];
  j["runs"] = raw["runs"];
  return j;
}

nlohmann::ordered_json bench_json(const Record& r, const Report& rep) {
  nlohmann::ordered_json j;
  j["format"] = "gpubind-bench/3";
  nlohmann::ordered_json raw = bench::to_json(r);
  j["machine"] = raw["machine"];
  j["config"] = raw["config"];
  auto opt = [](std::optional<double> v) {
    return v && std::isfinite(*v) ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  j["results"] = nlohmann::ordered_json::array();
  for (const StrategyReport& s : rep.strategies) {
    j["results"].push_back({{"strategy", s.name},
                            {"noise", bench::to_string(s.noise)},
                            {"h2d_bytes_per_s", opt(s.h2d_bytes_per_s)},
                            {"batch", s.batch},
                            {"step_ms", summary_json(s.step_ms)},
                            {"idle_mean", s.idle_mean},
                            {"idle_max", s.idle_max},
                            {"migrations_per_rank_s", opt(s.migrations_per_rank_s)},
                            {"cross_numa", opt(s.cross_numa)},
                            {"remote_memory", opt(s.remote_memory)},
                            {"footprint_bytes_per_rank", s.footprint_bytes},
                            {"p50_vs_closest", interval_json(s.p50_vs_closest)},
                            {"p99_vs_closest", interval_json(s.p99_vs_closest)},
                            {"migrations_vs_closest", opt(s.migrations_vs_closest)},
                            {"migrations_vs_closest_infinite", s.migrations_vs_closest && std::isinf(*s.migrations_vs_closest)}});
  }
  j["reserved_vs_roaming"] = {{"strategy", "closest"},
                               {"p50", interval_json(rep.reserved_vs_roaming_p50)},
                               {"p99", interval_json(rep.reserved_vs_roaming_p99)}};
  j["notes"] = rep.notes;
  j["samples"] = raw["samples"];
  j["warnings"] = raw["warnings"];
  return j;
}

namespace {

// A round step for about `n` axis ticks over [0, hi]: 1, 2 or 5 times a power of ten. (No libm:
// the binary maps none, so exec starts without it.)
double tick_step(double hi, int n) {
  double raw = hi / n, p = 1;
  while (p > raw) p /= 10;
  while (p * 10 <= raw) p *= 10;
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

// ceil(v / step) * step for positive values, without libm.
double round_up(double v, double step) {
  double n = double(static_cast<long long>(v / step));
  return (n * step < v ? n + 1 : n) * step;
}

const char* kColours[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"};

}  // namespace

std::string bench_svg(const Record& r, const Report& rep) {
  const int left = placed(r) ? 210 : 130, right = 30, top = 64, row = 44, width = 860;
  const int plot_w = width - left - right;
  const int height = top + row * int(std::max<size_t>(1, rep.strategies.size())) + 70;
  // The axis reaches past every p99 (a lone max beyond it is drawn at the edge, with its value).
  double hi = 0;
  for (const StrategyReport& s : rep.strategies) hi = std::max(hi, s.step_ms.p99);
  hi = hi > 0 ? hi * 1.15 : 1;
  double step = tick_step(hi, 8);
  hi = round_up(hi, step);
  auto x = [&](double v) { return left + std::min(v, hi) / hi * plot_w; };

  Svg o(width, height);
  o.text(left, 22, "Step time per strategy (ms per sample), " + std::to_string(r.config.ranks) + " ranks",
         "font-size=\"15\" font-weight=\"bold\"");
  o.text(left, 40, machine_line(r.machine), "fill=\"#555\"");
  o.text(left, 55,
         std::to_string(r.config.steps) + " steps per strategy, " + std::to_string(r.config.rounds) + " interleaved rounds, " +
             (r.config.noise ? "noise " + std::to_string(r.config.noise) : std::string("no noise")) +
             "; box: quartiles and median, whiskers: min to p99, dot: max",
         "fill=\"#555\"");
  int axis_y = top + row * int(rep.strategies.size()) + 6;
  for (double v = 0; v <= hi + step / 2; v += step) {
    o.line(x(v), top, x(v), axis_y, "stroke=\"#e4e4e4\"");
    o.text(x(v), axis_y + 16, fixed(v, step < 0.1 ? 2 : step < 1 ? 1 : 0), "text-anchor=\"middle\"");
  }
  o.text(left + plot_w / 2, axis_y + 36, "ms per sample", "text-anchor=\"middle\"");
  for (size_t i = 0; i < rep.strategies.size(); ++i) {
    const StrategyReport& s = rep.strategies[i];
    const bench::Summary& m = s.step_ms;
    std::string colour = kColours[i % (sizeof kColours / sizeof *kColours)];
    std::string stroke = "stroke=\"" + colour + "\" stroke-width=\"1.5\"";
    double cy = top + row * double(i) + row / 2, h = row / 2;
    o.begin_group(label(s.name, s.noise, placed(r)) + ": p50 " + ms(m.p50) + " ms, p99 " + ms(m.p99) + " ms, max " + ms(m.max) + " ms, CV " +
                  fixed(m.cv * 100, 1) + "%");
    o.text(left - 10, cy + 4, label(s.name, s.noise, placed(r)), "text-anchor=\"end\"");
    if (m.count) {
      o.line(x(m.min), cy, x(m.p99), cy, stroke);
      for (double v : {m.min, m.p99}) o.line(x(v), cy - h / 3, x(v), cy + h / 3, stroke);
      o.rect(x(m.p25), cy - h / 2, std::max(1.0, x(m.p75) - x(m.p25)), h,
             "fill=\"" + colour + "\" fill-opacity=\"0.35\" stroke=\"" + colour + "\"");
      o.line(x(m.p50), cy - h / 2, x(m.p50), cy + h / 2, "stroke=\"black\" stroke-width=\"2\"");
      o.circle(x(m.max), cy, 3.5, "fill=\"" + colour + "\"");
      if (m.max > hi) o.text(x(m.max) - 6, cy - h / 2 - 2, "max " + ms(m.max) + " \u2192", "text-anchor=\"end\" fill=\"#555\"");
    }
    if (s.p50_vs_closest || s.p99_vs_closest)
      o.text(left + 4, cy + h / 2 + 10, "against closest: p50 " + verdict_text(s.p50_vs_closest) + "; p99 " + verdict_text(s.p99_vs_closest),
             "font-size=\"10\" fill=\"#333\"");
    o.end_group();
  }
  return o.str();
}

}  // namespace gpubind::render
