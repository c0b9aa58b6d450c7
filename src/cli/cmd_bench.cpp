// gpubind bench: a synthetic synchronous data-parallel job run under several binding strategies,
// interleaved, and what each did to step time, jitter, idle ranks, migrations and locality.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <variant>

#include "bench/ab_runner.hpp"
#include "bench/runner.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/live_cache.hpp"
#include "plan/plan.hpp"
#include "render/bench_render.hpp"
#include "render/json_text.hpp"
#include "sys/fsroot.hpp"
#include "util/exit_status.hpp"
#include "util/json_field.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

constexpr size_t kMaxInputBytes = 256u << 20;

Result<nlohmann::json> read_json(const std::string& path) {
  auto text = sys::read_file(path, kMaxInputBytes);
  if (!text) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return Error{path, "not JSON (expected the output of gpubind bench --json)"};
  return j;
}

// An A/B record (bench --ab --json) is reported as such.
bool is_ab_record(const nlohmann::json& j) { return json_field::get<std::string>(j, "format") == bench::kAbFormat; }

int print_ab(const bench::AbRecord& r, bool json) {
  bench::AbReport rep = bench::make_ab_report(r);
  std::string out = json ? render::json_text(render::bench_ab_json(r, rep)) : render::bench_ab_text(r, rep);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

Result<bench::Record> read_record(const nlohmann::json& j, const std::string& path) {
  auto r = bench::record_from_json(j);
  if (!r) return Error{path, r.error().message()};
  return r;
}

struct BenchFlags {
  PlanOptions o;
  bench::RunOptions run;
  std::string strategies, plot, input, noise_on;
  // --ab: the user's command under each strategy.
  std::string ab, ab_env, step_regex, step_file;
  unsigned step_rank = 0, timeout_s = 0;
  std::vector<std::string> command;
  std::optional<unsigned> buffer_mib;
  bool json = false, per_rank = false;
};

void add_bench_options(Args& app, BenchFlags& f) {
  bench::RunOptions& run = f.run;
  add_plan_options(app, f.o, false);
  app.option("--strategies", f.strategies,
             "Comma-separated policies to run (POLICY-2x doubles the batch); default closest,cpu-only,none,numa,socket,none-2x");
  app.option("--threads", run.threads, "Threads per rank (default: the cores of the smallest rank under closest, 1 to 8)")
      .range(1, 256);
  app.option("--steps", run.steps, "Measured steps per strategy, over all rounds (default 200)").range(1, 1000000);
  app.option("--rounds", run.rounds, "Interleaved rounds: every strategy runs once per round (default 5)").range(1, 1000);
  app.option("--warmup", run.warmup, "Unmeasured steps at the start of every run (default 5)").range(0, 100000);
  app.option("--noise", run.noise, "Unbound background processes during the runs: CPU hogs and memory streamers, "
                                    "alternately (default 0)")
      .range(0, 1024);
  app.option("--noise-on", f.noise_on, "Where the noise runs: roaming (any allowed CPU), reserved (only on housekeeping CPUs: "
                                       "--reserve, else each package's first core, with the ranks planned around them) or "
                                       "both, each reported on its own (default both with --noise)");
  app.option("--buffer-mib", f.buffer_mib, "MiB streamed per thread per step (default: about half the L3 over all threads, "
                                           "1 to 8)")
      .range(1, 4096);
  app.option("--compute", run.compute, "Dependent multiply-adds per thread per step (default 20000)").range(0, 1000000000);
  app.flag("--gpu", run.gpu, "Every step, also copy each rank's buffer to its GPU through the CUDA or HIP runtime "
                             "(GPUBIND_CUDA_RUNTIME / GPUBIND_HIP_RUNTIME name the library), timed on the GPU");
  app.flag("--per-rank", f.per_rank, "Also show each rank's CPUs, memory, home node, migrations, idle and locality");
  app.flag("--json", f.json, "JSON output: the report and the raw samples (which --input reads back)");
  app.option("--plot", f.plot, "Write an SVG box plot of the step times per strategy to FILE");
  app.option("--input", f.input, "Report a saved run (gpubind bench --json output, or bench --ab's) instead of running one");
  app.option("--ab", f.ab, "Run YOUR command (after --) through gpubind launch under each of these policies in turn, "
                           "--rounds times, and compare its step times (closest,none): the first is the base");
  app.option("--ab-env", f.ab_env,
             "Run YOUR command (after --) as --ab does, once per value of one variable in its environment "
             "(OMP_NUM_THREADS=1,4,auto; auto: unset, so launch sizes it from each rank's cores), under "
             "the one policy of --ab (default closest): the first value is the base");
  app.option("--step-regex", f.step_regex, "--ab: a step time in the job's output: a regular expression whose named group "
                                           "(?<ms>...), (?<s>...) or (?<us>...) holds it, in the lines of --step-rank");
  app.option("--step-file", f.step_file, "--ab: a file the job writes, one step time in ms per line (removed before each run)");
  app.option("--step-rank", f.step_rank, "--ab: whose output lines --step-regex reads (global rank, default 0)");
  app.option("--timeout", f.timeout_s, "--ab: seconds a run may take before it is stopped (exit 124; default none)").range(1, 86400 * 7);
  app.footer(R"(Examples:
  gpubind bench -n 2 --noise 2                   this machine, the six strategies, two noisy neighbours
                                                 roaming, and kept on housekeeping CPUs: both reported
  gpubind bench -n 1 --noise 2 --noise-on reserved --reserve 0   the noise on CPU 0's core only
  gpubind bench --strategies closest,none --steps 1000 --plot steps.svg
  gpubind bench --input run.json --plot steps.svg    the report and plot of a saved run
  gpubind bench --ab closest,none -n 2 --rounds 5 --step-regex 'step [0-9]+ (?<ms>[0-9.]+) ms' \
      -- /usr/bin/python3 examples/ddp_train.py --steps 60 --print-steps    your job, A/B)");
}

// The report of a record, as text or JSON, and its plot.
int report_record(const bench::Record& record, const BenchFlags& f) {
  bench::Report report = bench::make_report(record);
  if (!f.plot.empty())
    if (auto st = sys::replace_file(f.plot, render::bench_svg(record, report)); !st) return fail(st.error());
  std::string out = f.json ? render::json_text(render::bench_json(record, report)) : render::bench_text(record, report, f.per_rank);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

// A saved run is reported as it was: flags that would change a run are refused, not ignored.
int saved_run(const Args& app, const BenchFlags& f) {
  for (const char* flag : {"--strategies", "--threads", "--steps", "--rounds", "--warmup", "--noise", "--noise-on", "--buffer-mib",
                           "--compute", "--gpu", "-n", "--gpus-per-rank", "--reserve", "--allowed", "--mem",
                           "--allowed-mems", "--mem-node", "--no-smt", "--smt", "--balanced", "--nic-env", "--isolate-gpus", "--omp",
                           "--require-gpu", "--ab", "--step-regex", "--step-file", "--step-rank", "--timeout"})
    if (app.count(flag))
      return fail(Error{std::string(flag), "applies to a run, not to --input (which reports a saved run as it was)", ErrorKind::usage});
  auto j = read_json(f.input);
  if (!j) return fail(j.error());
  if (is_ab_record(*j)) {
    if (!f.plot.empty()) return fail(Error{"--plot", "draws bench's own runs, not an --ab record", ErrorKind::usage});
    auto ab = bench::ab_record_from_json(*j);
    if (!ab) return fail(Error{f.input, ab.error().message()});
    return print_ab(*ab, f.json);
  }
  auto record = read_record(*j, f.input);
  if (!record) return fail(record.error());
  return report_record(*record, f);
}

// A run on this machine: the strategies, each planned from the same request.
Result<bench::Record> new_run(BenchFlags& f) {
  std::vector<std::string> names = bench::default_strategies();
  if (!f.strategies.empty()) {
    names.clear();
    for (std::string_view v : split(f.strategies, ',')) names.emplace_back(trim(v));
  }
  for (const std::string& name : names) {
    auto s = bench::parse_strategy(name);
    if (!s) return Error{"--strategies", s.error().message(), ErrorKind::usage};
    f.run.strategies.push_back(*s);
  }
  if (f.noise_on.empty()) f.noise_on = f.run.noise ? "both" : "roaming";
  if (f.noise_on == "both") f.run.placements = {bench::NoisePlacement::roaming, bench::NoisePlacement::reserved};
  else if (auto p = bench::noise_placement_from_string(f.noise_on)) f.run.placements = {*p};
  else return Error{"--noise-on " + f.noise_on, "expected roaming, reserved or both", ErrorKind::usage};
  if (f.buffer_mib) f.run.buffer_bytes = uint64_t(*f.buffer_mib) << 20;
  auto topo = acquire_topology({.quiet = f.o.quiet});
  if (!topo) return topo.error();
  auto req = make_request(f.o, *topo, AllowedFrom::affinity);
  if (!req) return req.error();
  unsigned last_round = ~0u;
  if (!f.o.quiet) {
    f.run.notice = [](const std::string& note) { std::fprintf(stderr, "gpubind: bench: note: %s\n", note.c_str()); };
    f.run.warning = [](const std::string& w) { std::fprintf(stderr, "gpubind: warning: bench: %s\n", w.c_str()); };
    f.run.progress = [&](const std::string&, unsigned round) {
      if (round != last_round) std::fprintf(stderr, "gpubind: bench: round %u of %u\n", round + 1, f.run.rounds);
      last_round = round;
    };
  }
  return bench::run_bench(*topo, *req, f.run);
}

// --ab: the flags of bench's own synthetic job, which the user's job does not take.
constexpr const char* kSyntheticFlags[] = {"--strategies", "--threads", "--steps", "--noise", "--noise-on", "--buffer-mib",
                                           "--compute",    "--gpu",     "--plot"};

// The options before "--" that are launch's (the plan flags, -n...): all but bench's own.
std::vector<std::string> launch_args(const std::vector<std::string>& args) {
  static const std::map<std::string, bool> own = {{"--ab", true},         {"--ab-env", true},    {"--rounds", true},    {"--warmup", true},
                                                  {"--step-regex", true}, {"--step-file", true}, {"--step-rank", true}, {"--timeout", true},
                                                  {"--input", true},      {"--json", false},     {"--per-rank", false}, {"--quiet", false},
                                                  {"-q", false}};
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
    auto it = own.find(args[i].substr(0, args[i].find('=')));
    if (it == own.end()) out.push_back(args[i]);
    else if (it->second && args[i].find('=') == std::string::npos) ++i;
  }
  return out;
}

Result<bench::AbOptions> ab_env_options(const BenchFlags& f, const std::vector<std::string>& args, bench::AbOptions o);
Result<bench::AbOptions> ab_common(const BenchFlags& f, const std::vector<std::string>& args, bench::AbOptions o);

Result<bench::AbOptions> ab_options(const Args& app, BenchFlags& f, const std::vector<std::string>& args) {
  if (f.command.empty())
    return Error{f.ab_env.empty() ? "--ab" : "--ab-env",
                 "give the command after --: gpubind bench --ab closest,none [options] -- CMD [ARGS...]", ErrorKind::usage};
  for (const char* flag : kSyntheticFlags)
    if (app.count(flag)) return Error{flag, "applies to bench's own job, not to --ab (which runs yours)", ErrorKind::usage};
  bench::AbOptions o;
  if (!f.ab_env.empty()) return ab_env_options(f, args, std::move(o));
  for (std::string_view v : split(f.ab, ',')) {
    auto s = bench::parse_strategy(std::string(trim(v)));
    if (s && s->batch != 1)
      return Error{"--ab " + f.ab, "'" + s->name + "': a doubled batch is bench's own job's; --ab runs yours as it is", ErrorKind::usage};
    if (!s)
      return Error{"--ab " + f.ab, "'" + std::string(trim(v)) + "' is not a policy (closest, socket-split, socket, numa, l3, cpu-only, none)",
                   ErrorKind::usage};
    if (std::find(o.strategies.begin(), o.strategies.end(), s->name) != o.strategies.end())
      return Error{"--ab " + f.ab, s->name + " is named twice", ErrorKind::usage};
    o.strategies.push_back(s->name);
  }
  if (o.strategies.size() < 2) return Error{"--ab " + f.ab, "name two policies or more to compare (closest,none)", ErrorKind::usage};
  return ab_common(f, args, std::move(o));
}

// --ab-env NAME=V1,V2,...: the arms are the variable's values under one policy.
Result<bench::AbOptions> ab_env_options(const BenchFlags& f, const std::vector<std::string>& args, bench::AbOptions o) {
  std::string what = "--ab-env " + f.ab_env;
  size_t eq = f.ab_env.find('=');
  std::string name = f.ab_env.substr(0, eq);
  bool valid = eq != std::string::npos && !name.empty() && !std::isdigit((unsigned char)name[0]) &&
               std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
  if (!valid) return Error{what, "give NAME=VALUE,VALUE,... (OMP_NUM_THREADS=1,4,auto)", ErrorKind::usage};
  if (name.starts_with("GPUBIND_"))
    return Error{what, "GPUBIND_* variables are gpubind's own record of a binding, not a setting to compare", ErrorKind::usage};
  std::string values = f.ab_env.substr(eq + 1);  // split's views point into it
  for (std::string_view v : split(values, ',')) {
    std::string arm = name + "=" + std::string(trim(v));
    if (trim(v).empty()) return Error{what, "an empty value (write auto to leave the variable unset)", ErrorKind::usage};
    if (std::find(o.strategies.begin(), o.strategies.end(), arm) != o.strategies.end())
      return Error{what, std::string(trim(v)) + " is named twice", ErrorKind::usage};
    o.strategies.push_back(arm);
  }
  if (o.strategies.size() < 2) return Error{what, "name two values or more to compare (1,auto)", ErrorKind::usage};
  std::string policy = f.ab.empty() ? "closest" : f.ab;
  auto s = bench::parse_strategy(policy);
  if (!s || s->batch != 1)
    return Error{"--ab " + f.ab,
                 "with --ab-env, one policy to run every value under (closest, socket-split, socket, numa, l3, cpu-only, "
                 "none); --ab compares policies, --ab-env the values of a variable",
                 ErrorKind::usage};
  o.env_name = name;
  auto done = ab_common(f, args, std::move(o));
  if (done) done->launch_args.insert(done->launch_args.begin(), {"--policy", s->name});
  return done;
}

// What --ab and --ab-env share: where the step times come from, the rounds, the command.
Result<bench::AbOptions> ab_common(const BenchFlags& f, const std::vector<std::string>& args, bench::AbOptions o) {
  if (!f.step_regex.empty() && !f.step_file.empty())
    return Error{"--step-regex", "read the step times from the output or from --step-file, not both", ErrorKind::usage};
  if (!f.step_regex.empty()) {
    auto p = bench::parse_step_pattern(f.step_regex);
    if (!p) return p.error();
    o.pattern = std::move(*p);
  }
  o.step_file = f.step_file;
  o.step_rank = f.step_rank;
  o.timeout = std::chrono::seconds(f.timeout_s);
  o.rounds = f.run.rounds;
  o.warmup = f.run.warmup;
  o.command = f.command;
  o.launch_args = launch_args(args);
  return o;
}

// bench --ab: the user's command under each strategy; exit 124 when a run outlived --timeout.
int bench_ab(const Args& app, BenchFlags& f, const std::vector<std::string>& args) {
  auto o = ab_options(app, f, args);
  if (!o) return fail(o.error());
  auto topo = acquire_topology({.quiet = f.o.quiet});
  if (!topo) return fail(topo.error());
  auto req = make_request(f.o, *topo, AllowedFrom::affinity);
  if (!req) return fail(req.error());
  auto p = plan::make_plan(*topo, *req);
  if (!p) return fail(Error{p.error().what, p.error().why, ErrorKind::usage});
  o->ranks = unsigned(p->ranks.size());
  if (!f.o.quiet) {
    o->notice = [](const std::string& note) { std::fprintf(stderr, "gpubind: bench --ab: note: %s\n", note.c_str()); };
    o->warning = [](const std::string& w) { std::fprintf(stderr, "gpubind: warning: bench --ab: %s\n", w.c_str()); };
    o->progress = [&](const std::string& name, unsigned round) {
      std::fprintf(stderr, "gpubind: bench --ab: round %u of %u: %s done\n", round + 1, o->rounds, name.c_str());
    };
  }
  auto done = bench::run_ab(*topo, *req, *o);
  if (auto* failed = std::get_if<bench::AbFailure>(&done)) return fail_with(failed->error, failed->timed_out ? kExitTimedOut : kExitFailure);
  return print_ab(std::get<bench::AbRecord>(done), f.json);
}

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
  Args app("Run a synthetic synchronous data-parallel job (N ranks of T threads: a memory-bound pass over a first-touched "
           "buffer, a compute part, a barrier across ranks) under several binding strategies in interleaved rounds, and "
           "report step time, jitter, barrier idle, migrations and locality per strategy, against closest.",
           "gpubind bench");
  BenchFlags f;
  add_bench_options(app, f);
  bool with_command = std::find(args.begin(), args.end(), "--") != args.end();
  if (int rc = with_command ? app.parse_with_command(args, kExitUsage, f.command) : app.parse(args); rc >= 0) return rc;
  if (!f.plot.empty() && !f.plot.ends_with(".svg"))
    return fail(Error{"--plot " + f.plot, "writes SVG: give a FILE ending in .svg (a browser or rsvg-convert makes a PNG)", ErrorKind::usage});
  if (!f.input.empty() && with_command) return fail(Error{"--input", "reports a saved run: no command after --", ErrorKind::usage});
  if (!f.input.empty()) return saved_run(app, f);
  if (!f.ab.empty() || !f.ab_env.empty() || with_command)
    return f.ab.empty() && f.ab_env.empty()
               ? fail(Error{"bench -- CMD", "runs your command only with --ab POLICIES (closest,none) or --ab-env NAME=VALUES",
                            ErrorKind::usage})
               : bench_ab(app, f, args);
  auto record = new_run(f);
  if (!record) return fail(record.error());
  return report_record(*record, f);
}

}  // namespace gpubind::cli
