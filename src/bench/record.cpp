#include "bench/record.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "bench/json_fields.hpp"
#include "util/json_field.hpp"
#include "util/strings.hpp"

namespace gpubind::bench {

using ojson = nlohmann::ordered_json;
using nlohmann::json;
using json_fields::field;

Result<StrategySpec> parse_strategy(const std::string& name) {
  StrategySpec s;
  s.name = name;
  std::string policy = name;
  if (policy.ends_with("-2x")) {
    policy.resize(policy.size() - 3);
    s.batch = 2;
  }
  auto p = plan::policy_from_string(policy);
  if (!p)
    return Error{"strategy " + name, "expected a policy (closest, socket-split, socket, numa, l3, cpu-only, none), "
                                     "with -2x for a doubled batch", ErrorKind::usage};
  s.policy = *p;
  return s;
}

const char* to_string(NoisePlacement p) { return p == NoisePlacement::reserved ? "reserved" : "roaming"; }

std::optional<NoisePlacement> noise_placement_from_string(const std::string& s) {
  for (NoisePlacement p : {NoisePlacement::roaming, NoisePlacement::reserved})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

CpuSet housekeeping_cpus(const topo::Topology& t, const plan::Request& r) {
  CpuSet allowed = plan::allowed_cpus(t, r), out;
  if (!r.reserve.empty()) return allowed - plan::usable_cpus(t, r);  // the reserve's whole cores
  for (const topo::Package& p : t.packages)
    for (const topo::Core& core : t.cores)
      if (core.pus.is_subset_of(p.cpus) && core.pus.intersects(allowed)) {
        out |= core.pus;
        break;
      }
  return out & allowed;
}

std::string ranks_warning(std::string_view warning, std::string_view owner) {
  size_t colon = warning.find(": ");
  if (warning.starts_with("local rank ") && colon != std::string_view::npos) warning.remove_prefix(colon + 2);
  return std::string(owner) + ": " + std::string(warning);
}

void keep_warning(std::vector<std::string>& warnings, std::string warning, const std::function<void(const std::string&)>& say) {
  if (std::find(warnings.begin(), warnings.end(), warning) != warnings.end()) return;
  warnings.push_back(std::move(warning));
  if (say) say(warnings.back());
}

const std::vector<std::string>& default_strategies() {
  static const std::vector<std::string> names = {"closest", "cpu-only", "none", "numa", "socket", "none-2x"};
  return names;
}

double idle_share(const RankRecord& r) { return r.step_s > 0 ? std::clamp(1.0 - r.busy_s / r.step_s, 0.0, 1.0) : 0.0; }

namespace {

std::optional<double> ratio(double value, double base) {
  if (base > 0) return value / base;
  if (value > 0) return std::numeric_limits<double>::infinity();
  return 1.0;
}

// A strategy's step times per sample (step / batch), in run order.
std::vector<double> per_sample(const StrategyRecord& s) {
  std::vector<double> out;
  out.reserve(s.step_ms.size());
  for (double ms : s.step_ms) out.push_back(ms / double(std::max(1u, s.batch)));
  return out;
}

StrategyReport report_one(const StrategyRecord& s, const Config& c) {
  StrategyReport out;
  out.name = s.name;
  out.batch = std::max(1u, s.batch);
  out.noise = s.noise;
  out.step_ms = summarize(per_sample(s));
  out.footprint_bytes = c.buffer_bytes * c.threads * out.batch;

  double idle_sum = 0, rank_s = 0, work = 0, off = 0;
  uint64_t migrations = 0, pages = 0, remote = 0, copied = 0;
  double copy_s = 0;
  bool migrations_known = !s.ranks.empty();
  for (const RankRecord& r : s.ranks) {
    double idle = idle_share(r);
    idle_sum += idle;
    out.idle_max = std::max(out.idle_max, idle);
    rank_s += r.measured_s;
    work += r.work_s;
    off += r.off_home_s;
    if (r.migrations) migrations += *r.migrations;
    else migrations_known = false;
    pages += r.pages;
    remote += r.remote_pages;
    copied += r.copy_bytes;
    copy_s += r.copy_s;
  }
  if (copy_s > 0) out.h2d_bytes_per_s = double(copied) / copy_s;
  if (!s.ranks.empty()) out.idle_mean = idle_sum / double(s.ranks.size());
  if (migrations_known && rank_s > 0) out.migrations_per_rank_s = double(migrations) / rank_s;
  if (work > 0) out.cross_numa = off / work;
  if (pages > 0) out.remote_memory = double(remote) / double(pages);
  return out;
}

}  // namespace

std::optional<CpuTicks> parse_cpu_ticks(const std::string& proc_stat) {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is also
  // counted in user, so the total is the first eight.
  std::string_view line = std::string_view(proc_stat).substr(0, proc_stat.find('\n'));
  if (!line.starts_with("cpu ")) return std::nullopt;
  CpuTicks t;
  size_t field = 0;
  for (std::string_view w : split(line.substr(4), ' ')) {
    if (w.empty()) continue;
    auto v = parse_uint(w);
    if (!v) return std::nullopt;
    if (field < 8) t.total += *v;
    if (field == 7) t.steal = *v;
    ++field;
  }
  if (field < 8) return std::nullopt;
  return t;
}

std::optional<double> parse_load_average(const std::string& proc_loadavg) {
  auto v = parse_double(std::string_view(proc_loadavg).substr(0, proc_loadavg.find(' ')));
  if (!v || *v < 0 || *v > 1e9) return std::nullopt;
  return v;
}

namespace {

// Every strategy against closest under the same noise placement: p50 and p99 ratios with their
// intervals, and the migrations ratio.
void compare_with_closest(const Record& r, Report& rep) {
  const StrategyRecord* closest_under[2] = {nullptr, nullptr};
  for (const StrategyRecord& s : r.strategies)
    if (s.name == "closest") closest_under[size_t(s.noise)] = &s;
  if (closest_under[0] && closest_under[1]) {
    std::vector<double> roaming = per_sample(*closest_under[0]), reserved = per_sample(*closest_under[1]);
    size_t round = reserved.size() / std::max(1u, r.config.rounds);
    rep.reserved_vs_roaming_p50 = quantile_ratio(reserved, roaming, 0.50, round);
    rep.reserved_vs_roaming_p99 = quantile_ratio(reserved, roaming, 0.99, round);
  }
  for (NoisePlacement placement : {NoisePlacement::roaming, NoisePlacement::reserved}) {
    auto closest = std::find_if(rep.strategies.begin(), rep.strategies.end(), [&](const StrategyReport& s) {
      return s.name == "closest" && s.noise == placement;
    });
    if (closest == rep.strategies.end()) continue;
    std::vector<double> base = per_sample(r.strategies[size_t(closest - rep.strategies.begin())]);
    for (size_t i = 0; i < rep.strategies.size(); ++i) {
      StrategyReport& s = rep.strategies[i];
      if (s.noise != placement) continue;
      if (s.migrations_per_rank_s && closest->migrations_per_rank_s)
        s.migrations_vs_closest = ratio(*s.migrations_per_rank_s, *closest->migrations_per_rank_s);
      if (&s == &*closest) continue;
      std::vector<double> mine = per_sample(r.strategies[i]);
      size_t round = mine.size() / std::max(1u, r.config.rounds);  // a round's steps: one block
      s.p50_vs_closest = quantile_ratio(mine, base, 0.50, round);
      s.p99_vs_closest = quantile_ratio(mine, base, 0.99, round);
    }
  }
}

// Oversubscription under each placement that ran: what it measures instead.
void oversubscription_notes(const Record& r, Report& rep) {
  const Config& c = r.config;
  unsigned allowed = r.machine.allowed_cpus, rank_threads = c.ranks * std::max(1u, c.threads);
  const std::string what = " every strategy shares CPUs, so this measures how each shares them (a pinned rank cannot step away "
                           "from a neighbour; an unbound one can), not where it runs";
  bool roaming = false, reserved = false;
  for (const StrategyRecord& s : r.strategies) (s.noise == NoisePlacement::reserved ? reserved : roaming) = true;
  std::string ranks = std::to_string(c.ranks) + " rank(s) x " + std::to_string(c.threads) + " thread(s)";
  if (roaming && allowed && rank_threads + c.noise > allowed)
    rep.notes.push_back("oversubscribed" + std::string(reserved ? " (noise roaming)" : "") + ": " + ranks + " + " +
                        std::to_string(c.noise) + " noise process(es) on " + std::to_string(allowed) + " allowed CPUs:" + what);
  unsigned left = allowed > c.reserved.count() ? allowed - c.reserved.count() : 0;
  if (reserved && allowed && rank_threads > left)
    rep.notes.push_back("oversubscribed (noise on reserved CPUs): " + ranks + " on the " + std::to_string(left) +
                        " CPU(s) left beside the reserved " + c.reserved.to_list() + ":" + what);
  if (reserved)
    rep.notes.push_back("noise on reserved CPUs " + c.reserved.to_list() + ": the noise processes run only there and every "
                        "strategy's ranks are planned on the other CPUs, as a node keeps its daemons with Slurm's "
                        "CoreSpecCount or CpuSpecList, systemd's CPUAffinity or the kubelet's reservedSystemCPUs; each "
                        "strategy is compared with closest under the same placement");
}

}  // namespace

// The load average and the runnable threads are the whole machine's: judged against all its CPUs,
// not the few a Slurm step or taskset allowed bench (other jobs' work on other cores is not ours).
std::vector<std::string> machine_notes(const MachineInfo& m) {
  std::vector<std::string> out;
  if (m.load_before && m.cpus && *m.load_before >= 0.5 * m.cpus)
    out.push_back("other load: the 1-minute load average was " + fixed(*m.load_before, 2) + " on " + std::to_string(m.cpus) +
                  " CPUs before the run: other processes shared the CPUs, and their comings and goings are in every step time");
  if (m.runnable_outside_mean && *m.runnable_outside_mean >= 0.5)
    out.push_back("other load during the run: " + fixed(*m.runnable_outside_mean, 2) + " threads of other processes were runnable on "
                  "average (at most " + std::to_string(m.runnable_outside_max.value_or(0)) + ", sampled once a second), on " +
                  std::to_string(m.cpus) + " CPUs: they took CPU time the ranks would have had");
  if (m.steal_share && *m.steal_share >= 0.02)
    out.push_back("stolen time: the hypervisor took " + fixed(*m.steal_share * 100, 2) + "% of the CPU time during the run: a "
                  "virtual machine's vCPUs stall when its host is busy, whatever the binding");
  return out;
}

std::vector<std::string> node_notes(const Record& r) {
  Report rep;
  const MachineInfo& m = r.machine;
  oversubscription_notes(r, rep);
  for (std::string& n : machine_notes(m)) rep.notes.push_back(std::move(n));
  if (m.numa_nodes <= 1)
    rep.notes.push_back("one NUMA node with CPUs: no strategy can put a rank away from its memory or its GPU's node here, so "
                        "cross-NUMA and remote shares are 0 for all; only migrations and jitter (under --noise) tell them apart");
  if (m.gpus == 0)
    rep.notes.push_back("no GPU: a rank's home is the NUMA node gpubind's closest plan gives it, where its GPU would be");
  if (r.config.noise == 0)
    rep.notes.push_back("no --noise: the ranks have the machine to themselves and the kernel seldom moves them; real nodes run "
                        "other tenants and daemons");
  return rep.notes;
}

Report make_report(const Record& r) {
  Report rep;
  for (const StrategyRecord& s : r.strategies) rep.strategies.push_back(report_one(s, r.config));
  compare_with_closest(r, rep);
  auto closest = std::find_if(rep.strategies.begin(), rep.strategies.end(), [](const StrategyReport& s) { return s.name == "closest"; });
  if (closest != rep.strategies.end()) {
    if (closest->step_ms.count < min_steps_for_interval(0.5))
      rep.notes.push_back("fewer than " + std::to_string(min_steps_for_interval(0.5)) + " steps per strategy: no ratio against closest "
                          "is given, since no interval could back it (--steps)");
    else if (closest->step_ms.count < min_steps_for_interval(0.99))
      rep.notes.push_back("the p99 against closest needs " + std::to_string(min_steps_for_interval(0.99)) +
                          " steps per strategy (5 beyond the p99) for an interval: with " + std::to_string(closest->step_ms.count) +
                          " only the p50 is compared (--steps " + std::to_string(min_steps_for_interval(0.99)) + ")");
  }

  for (std::string& n : node_notes(r)) rep.notes.push_back(std::move(n));
  for (const StrategyReport& s : rep.strategies)
    if (s.batch > 1) {
      rep.notes.push_back(s.name + " does " + std::to_string(s.batch) + "x the work per step (a bigger batch): its step times "
                          "are per sample (step / " + std::to_string(s.batch) + "), its memory per rank " +
                          std::to_string(s.batch) + "x");
      break;
    }
  return rep;
}

ojson machine_to_json(const MachineInfo& m) {
  return {{"name", m.name},         {"packages", m.packages}, {"numa_nodes", m.numa_nodes},
          {"memory_nodes", m.memory_nodes}, {"cpus", m.cpus}, {"allowed_cpus", m.allowed_cpus},
          {"gpus", m.gpus},
          {"load_before", m.load_before ? ojson(*m.load_before) : ojson(nullptr)},
          {"steal_share", m.steal_share ? ojson(*m.steal_share) : ojson(nullptr)},
          {"runnable_outside_mean", m.runnable_outside_mean ? ojson(*m.runnable_outside_mean) : ojson(nullptr)},
          {"runnable_outside_max", m.runnable_outside_max ? ojson(*m.runnable_outside_max) : ojson(nullptr)}};
}

ojson to_json(const Record& r) {
  ojson j;
  j["machine"] = machine_to_json(r.machine);
  const Config& c = r.config;
  j["config"] = {{"ranks", c.ranks},   {"threads", c.threads}, {"steps", c.steps},
                 {"rounds", c.rounds}, {"warmup", c.warmup},   {"noise", c.noise},
                 {"reserved_cpus", c.reserved.to_list()}, {"buffer_bytes", c.buffer_bytes}, {"compute", c.compute}, {"gpu", c.gpu}};
  ojson strategies = ojson::array();
  for (const StrategyRecord& s : r.strategies) {
    ojson ranks = ojson::array();
    for (const RankRecord& k : s.ranks)
      ranks.push_back({{"rank", k.rank},
                       {"gpu", k.gpu},
                       {"cpus", k.cpus.to_list()},
                       {"mem_nodes", k.mem_nodes},
                       {"mem_policy", k.mem_policy},
                       {"home_nodes", k.home_nodes},
                       {"measured_s", k.measured_s},
                       {"step_s", k.step_s},
                       {"busy_s", k.busy_s},
                       {"work_s", k.work_s},
                       {"off_home_s", k.off_home_s},
                       {"migrations", k.migrations ? ojson(*k.migrations) : ojson(nullptr)},
                       {"pages", k.pages},
                       {"remote_pages", k.remote_pages},
                       {"copy_bytes", k.copy_bytes},
                       {"copy_s", k.copy_s}});
    strategies.push_back({{"name", s.name},
                          {"policy", plan::to_string(s.policy)},
                          {"batch", s.batch},
                          {"noise", to_string(s.noise)},
                          {"step_ms", s.step_ms},
                          {"ranks", std::move(ranks)}});
  }
  j["samples"] = std::move(strategies);
  j["warnings"] = r.warnings;
  return j;
}

Result<MachineInfo> machine_from_json(const json& m, const std::string& where) {
  MachineInfo out;
  for (auto s : {field(m, "name", out.name, where), field(m, "packages", out.packages, where),
                 field(m, "numa_nodes", out.numa_nodes, where), field(m, "memory_nodes", out.memory_nodes, where),
                 field(m, "cpus", out.cpus, where), field(m, "allowed_cpus", out.allowed_cpus, where),
                 field(m, "gpus", out.gpus, where)})
    if (!s) return s.error();
  for (auto [key, into] : {std::pair{"load_before", &out.load_before}, std::pair{"steal_share", &out.steal_share},
                           std::pair{"runnable_outside_mean", &out.runnable_outside_mean}})
    if (m.contains(key) && !m[key].is_null()) {
      double v = 0;
      if (auto s = field(m, key, v, where); !s) return s.error();
      if (v < 0) return Error{where, std::string("field '") + key + "' is negative"};
      *into = v;
    }
  if (m.contains("runnable_outside_max") && !m["runnable_outside_max"].is_null()) {
    unsigned v = 0;
    if (auto s = field(m, "runnable_outside_max", v, where); !s) return s.error();
    out.runnable_outside_max = v;
  }
  return out;
}

Result<Record> record_from_json(const json& j) {
  if (!j.is_object()) return Error{"bench record", "expected a JSON object (the output of gpubind bench --json)"};
  Record r;
  for (const char* key : {"machine", "config", "samples"})
    if (!j.contains(key) || !(j[key].is_object() || j[key].is_array()))
      return Error{"bench record", std::string("missing '") + key + "' (the output of gpubind bench --json)"};
  auto machine = machine_from_json(j["machine"], "bench record: machine");
  if (!machine) return machine.error();
  r.machine = *machine;
  const json& c = j["config"];
  const std::string cw = "bench record: config";
  for (auto s : {field(c, "ranks", r.config.ranks, cw), field(c, "threads", r.config.threads, cw),
                 field(c, "steps", r.config.steps, cw), field(c, "rounds", r.config.rounds, cw),
                 field(c, "warmup", r.config.warmup, cw), field(c, "noise", r.config.noise, cw),
                 field(c, "buffer_bytes", r.config.buffer_bytes, cw), field(c, "compute", r.config.compute, cw),
                 field(c, "gpu", r.config.gpu, cw)})
    if (!s) return s.error();
  if (c.contains("reserved_cpus")) {  // absent in records from before the reserved placement
    std::string reserved;
    if (auto st = field(c, "reserved_cpus", reserved, cw); !st) return st.error();
    auto set = CpuSet::parse_list(reserved);
    if (!set) return Error{cw, "reserved_cpus '" + reserved + "': " + set.error().why};
    r.config.reserved = *set;
  }
  if (!j["samples"].is_array()) return Error{"bench record", "'samples' must be an array"};
  for (const json& s : j["samples"]) {
    StrategyRecord sr;
    std::string sw = "bench record: samples";
    std::string policy;
    if (auto st = field(s, "name", sr.name, sw); !st) return st.error();
    sw += " of " + sr.name;
    for (auto st : {field(s, "policy", policy, sw), field(s, "batch", sr.batch, sw), field(s, "step_ms", sr.step_ms, sw)})
      if (!st) return st.error();
    auto p = plan::policy_from_string(policy);
    if (!p) return Error{sw, "unknown policy '" + policy + "'"};
    sr.policy = *p;
    if (s.contains("noise")) {
      std::string noise;
      if (auto st = field(s, "noise", noise, sw); !st) return st.error();
      auto placement = noise_placement_from_string(noise);
      if (!placement) return Error{sw, "unknown noise placement '" + noise + "' (expected roaming or reserved)"};
      sr.noise = *placement;
    }
    if (sr.batch == 0) return Error{sw, "batch must be at least 1"};
    for (double ms : sr.step_ms)
      if (!std::isfinite(ms) || ms < 0) return Error{sw, "a step time that is negative or not a number"};
    if (!s.contains("ranks") || !s["ranks"].is_array()) return Error{sw, "missing 'ranks'"};
    for (const json& k : s["ranks"]) {
      RankRecord rr;
      std::string cpus;
      for (auto st : {field(k, "rank", rr.rank, sw), field(k, "gpu", rr.gpu, sw), field(k, "cpus", cpus, sw),
                      field(k, "mem_policy", rr.mem_policy, sw), field(k, "measured_s", rr.measured_s, sw),
                      field(k, "step_s", rr.step_s, sw), field(k, "busy_s", rr.busy_s, sw), field(k, "work_s", rr.work_s, sw),
                      field(k, "off_home_s", rr.off_home_s, sw), field(k, "pages", rr.pages, sw),
                      field(k, "remote_pages", rr.remote_pages, sw), field(k, "copy_bytes", rr.copy_bytes, sw),
                      field(k, "copy_s", rr.copy_s, sw), field(k, "mem_nodes", rr.mem_nodes, sw),
                      field(k, "home_nodes", rr.home_nodes, sw)})
        if (!st) return st.error();
      auto set = CpuSet::parse_list(cpus);
      if (!set) return Error{sw, "cpus '" + cpus + "': " + set.error().why};
      rr.cpus = *set;
      if (k.contains("migrations") && !k["migrations"].is_null()) {
        uint64_t n = 0;
        if (auto st = field(k, "migrations", n, sw); !st) return st.error();
        rr.migrations = n;
      }
      sr.ranks.push_back(std::move(rr));
    }
    r.strategies.push_back(std::move(sr));
  }
  if (const json* warnings = json_field::member(j, "warnings"); warnings && warnings->is_array())
    for (const json& w : *warnings)
      if (auto text = json_field::as<std::string>(w)) r.warnings.push_back(std::move(*text));
  return r;
}

}  // namespace gpubind::bench
