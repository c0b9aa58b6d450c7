#include "bench/ab_runner.hpp"

#include "bench/runner.hpp"
#include "sys/clock.hpp"
#include "sys/fsroot.hpp"
#include "sys/process.hpp"
#include "util/strings.hpp"

namespace gpubind::bench {

namespace {

constexpr size_t kMaxStepFileBytes = 64u << 20;

bool rank_line(std::string_view line) { return rank_line_text(line).has_value(); }

// The last line of `text` that starts with `prefix` (empty: a rank's line), up to 200 bytes.
std::string last_line(const std::string& text, std::string_view prefix) {
  std::string_view last;
  for (std::string_view line : split(text, '\n'))
    if (prefix.empty() ? rank_line(line) : line.starts_with(prefix)) last = trim(line);
  return std::string(last.substr(0, 200));
}

size_t rank_lines(const std::string& text) {
  size_t n = 0;
  for (std::string_view line : split(text, '\n')) n += rank_line(line);
  return n;
}

// Why a run failed, from launch's summary and the ranks' last word on stderr.
std::string failure_text(const sys::CommandResult& r) {
  std::string summary = last_line(r.err, "gpubind launch: "), said = last_line(r.err, "");
  std::string out = "the command exited " + std::to_string(r.exit_code);
  if (!summary.empty()) out += " (" + summary + ")";
  if (!said.empty()) out += "; its last line on stderr: " + said;
  return out;
}

// One run of the user's command under `policy`; its step times (all of them) and wall time, and
// its ranks' binding warnings in `warnings`.
std::variant<AbRun, AbFailure> run_one(const AbOptions& o, const std::string& policy, const std::string& what,
                                       std::vector<std::string>& warnings) {
  // Not --quiet: the ranks' binding warnings (a memory policy the container refuses) are read from
  // the output and said once; launch's own lines are not a rank's and are left aside.
  std::vector<std::string> argv = {o.self, "launch", "--tag-output"};
  sys::CommandOptions how{.late_is_error = false};
  if (o.env_name.empty()) {
    argv.insert(argv.end(), {"--policy", policy});
  } else {  // the arm is "NAME=VALUE"
    std::string v = policy.substr(o.env_name.size() + 1);
    if (v == "auto") how.unset_env.push_back(o.env_name);
    else how.set_env.emplace_back(o.env_name, v);
  }
  argv.insert(argv.end(), o.launch_args.begin(), o.launch_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), o.command.begin(), o.command.end());
  if (!o.step_file.empty())
    if (auto st = sys::remove_file(o.step_file); !st) return AbFailure{Error{"--step-file " + o.step_file, st.error().why}};
  const sys::Clock& clock = sys::steady_clock();
  auto start = clock.now();
  // No --timeout: a day, the longest any run is waited for.
  auto deadline = o.timeout.count() > 0 ? o.timeout : std::chrono::seconds(86400);
  auto r = sys::run_command(argv, deadline, how);
  double wall_s = std::chrono::duration<double>(clock.now() - start).count();
  if (!r) return AbFailure{Error{what, r.error().why}};
  if (r->late)
    return AbFailure{Error{what, "still running after " + std::to_string(deadline.count()) + " s (--timeout): stopped, and its ranks with it"},
                     true};
  if (r->exit_code != 0) return AbFailure{Error{what, failure_text(*r)}};
  warnings = rank_warnings_in_output(r->err, policy + "'s ranks");
  AbRun run;
  run.wall_s = wall_s;
  if (o.pattern) {
    run.step_ms = step_times_in_output(r->out, *o.pattern, o.step_rank);
    std::vector<double> on_err = step_times_in_output(r->err, *o.pattern, o.step_rank);
    run.step_ms.insert(run.step_ms.end(), on_err.begin(), on_err.end());
    if (run.step_ms.empty())
      return AbFailure{Error{what, "no line of rank " + std::to_string(o.step_rank) + " matched --step-regex '" + o.pattern->text +
                                       "' (the ranks printed " + std::to_string(rank_lines(r->out) + rank_lines(r->err)) + " line(s))"}};
  } else if (!o.step_file.empty()) {
    auto text = sys::read_file(o.step_file, kMaxStepFileBytes);
    if (!text) return AbFailure{Error{what, "the job wrote no --step-file " + o.step_file + " (" + text.error().why + ")"}};
    auto times = step_times_in_file(*text);
    if (!times) return AbFailure{Error{what, "--step-file " + o.step_file + ": " + times.error().message()}};
    run.step_ms = std::move(*times);
    if (run.step_ms.empty()) return AbFailure{Error{what, "--step-file " + o.step_file + " holds no step time"}};
  } else {
    run.step_ms = {wall_s * 1000};
    return run;
  }
  if (run.step_ms.size() <= o.warmup)
    return AbFailure{Error{what, std::to_string(run.step_ms.size()) + " step time(s), none beyond --warmup " + std::to_string(o.warmup)}};
  run.step_ms.erase(run.step_ms.begin(), run.step_ms.begin() + o.warmup);
  return run;
}

}  // namespace

std::variant<AbRecord, AbFailure> run_ab(const topo::Topology& t, const plan::Request& base, const AbOptions& o) {
  AbRecord rec;
  rec.machine = machine_info(t, base);
  rec.command = o.command;
  rec.launch_args = o.launch_args;
  rec.ranks = o.ranks;
  rec.strategies = o.strategies;
  rec.rounds = o.rounds;
  rec.source = o.pattern ? StepSource::pattern : o.step_file.empty() ? StepSource::wall : StepSource::file;
  rec.warmup = rec.source == StepSource::wall ? 0 : o.warmup;
  rec.pattern = o.pattern ? o.pattern->text : o.step_file;
  rec.step_rank = o.step_rank;
  auto root = sys::open_fsroot("/");
  if (!root) return AbFailure{root.error()};
  LoadWatch load(**root);
  rec.machine.load_before = load.load_before();
  if (o.notice)
    for (const std::string& n : ab_node_notes(rec)) o.notice(n);
  auto order = round_order(o.strategies.size(), o.rounds);
  for (unsigned round = 0; round < o.rounds; ++round)
    for (size_t i : order[round]) {
      const std::string& name = o.strategies[i];
      std::string what = "bench --ab: round " + std::to_string(round + 1) + ", " + name;
      std::vector<std::string> warnings;
      auto run = run_one(o, name, what, warnings);
      if (auto* failed = std::get_if<AbFailure>(&run)) return *failed;
      for (std::string& w : warnings) keep_warning(rec.warnings, std::move(w), o.warning);
      AbRun& done = std::get<AbRun>(run);
      done.strategy = name;
      done.round = round;
      rec.runs.push_back(std::move(done));
      if (o.progress) o.progress(name, round);
    }
  load.finish(rec.machine);
  return rec;
}

}  // namespace gpubind::bench
