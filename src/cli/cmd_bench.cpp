// gpubind bench: a synthetic synchronous data-parallel job run under several binding strategies,
// interleaved, and what each did to step time, jitter, idle ranks, migrations and locality.
#include <cstdio>

#include "bench/runner.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/plan_options.hpp"
#include "discover/live_cache.hpp"
#include "render/bench_render.hpp"
#include "render/json_text.hpp"
#include "sys/fsroot.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

constexpr size_t kMaxInputBytes = 256u << 20;

Result<bench::Record> read_record(const std::string& path) {
  auto text = sys::read_file(path, kMaxInputBytes);
  if (!text) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return Error{path, "not JSON (expected the output of gpubind bench --json)"};
  auto r = bench::record_from_json(j);
  if (!r) return Error{path, r.error().message()};
  return r;
}

struct BenchFlags {
  PlanOptions o;
  bench::RunOptions run;
  std::string strategies, plot, input, noise_on;
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
  app.option("--input", f.input, "Report a saved run (gpubind bench --json output) instead of running one");
  app.footer(R"(Examples:
  gpubind bench -n 2 --noise 2                   this machine, the six strategies, two noisy neighbours
                                                 roaming, and kept on housekeeping CPUs: both reported
  gpubind bench -n 1 --noise 2 --noise-on reserved --reserve 0   the noise on CPU 0's core only
  gpubind bench --strategies closest,none --steps 1000 --plot steps.svg
  gpubind bench --input run.json --plot steps.svg    the report and plot of a saved run)");
}

// A saved run is reported as it was: flags that would change a run are refused, not ignored.
Result<bench::Record> saved_run(const Args& app, const std::string& input) {
  for (const char* flag : {"--strategies", "--threads", "--steps", "--rounds", "--warmup", "--noise", "--noise-on", "--buffer-mib",
                           "--compute", "--gpu", "-n", "--gpus-per-rank", "--reserve", "--allowed", "--mem",
                           "--allowed-mems", "--mem-node", "--no-smt", "--smt", "--balanced", "--nic-env", "--isolate-gpus", "--omp",
                           "--require-gpu"})
    if (app.count(flag))
      return Error{std::string(flag), "applies to a run, not to --input (which reports a saved run as it was)", ErrorKind::usage};
  return read_record(input);
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
  std::vector<std::string> cache_notes;
  auto topo = discover::load_live_cached(discover::default_cache_dir(), discover::kDefaultCacheMaxFiles, &cache_notes);
  print_warnings(cache_notes, f.o.quiet);
  if (!topo) return topo.error();
  auto req = make_request(f.o, *topo, AllowedFrom::affinity);
  if (!req) return req.error();
  unsigned last_round = ~0u;
  if (!f.o.quiet)
    f.run.progress = [&](const std::string&, unsigned round) {
      if (round != last_round) std::fprintf(stderr, "gpubind: bench: round %u of %u\n", round + 1, f.run.rounds);
      last_round = round;
    };
  return bench::run_bench(*topo, *req, f.run);
}

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
  Args app("Run a synthetic synchronous data-parallel job (N ranks of T threads: a memory-bound pass over a first-touched "
           "buffer, a compute part, a barrier across ranks) under several binding strategies in interleaved rounds, and "
           "report step time, jitter, barrier idle, migrations and locality per strategy, against closest.",
           "gpubind bench");
  BenchFlags f;
  add_bench_options(app, f);
  if (int rc = app.parse(args); rc >= 0) return rc;
  if (!f.plot.empty() && !f.plot.ends_with(".svg"))
    return fail(Error{"--plot " + f.plot, "writes SVG: give a FILE ending in .svg (a browser or rsvg-convert makes a PNG)", ErrorKind::usage});
  auto record = f.input.empty() ? new_run(f) : saved_run(app, f.input);
  if (!record) return fail(record.error());
  bench::Report report = bench::make_report(*record);
  if (!f.plot.empty())
    if (auto st = sys::replace_file(f.plot, render::bench_svg(*record, report)); !st) return fail(st.error());
  std::string out = f.json ? render::json_text(render::bench_json(*record, report)) : render::bench_text(*record, report, f.per_rank);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace gpubind::cli
