#pragma once
// What `gpubind bench` measured, raw (Record, saved with --json and read back with --input), and
// what it reports from it (Report: per strategy the step-time distribution, jitter, idle share at
// the barrier, migrations, time and pages away from the rank's home node, and ratios against
// `closest`). make_report is pure, so the report is tested on recorded samples.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/stats.hpp"
#include "plan/plan.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::bench {

struct MachineInfo {
  std::string name;         // the topology's machine name
  unsigned packages = 0;
  unsigned numa_nodes = 0;  // with CPUs
  unsigned memory_nodes = 0;  // without CPUs (HBM, CXL)
  unsigned cpus = 0;
  unsigned allowed_cpus = 0;
  unsigned gpus = 0;
  // Other load while bench ran: the 1-minute load average just before it started its ranks
  // (/proc/loadavg), and the share of CPU time the hypervisor stole during the run (/proc/stat's
  // steal over all ticks). nullopt when not read (a record from before they were).
  std::optional<double> load_before = {}, steal_share = {};
  // Threads runnable outside bench (and its ranks, noise and launches) while it ran: the mean and
  // the maximum of samples taken once a second. nullopt when not sampled.
  std::optional<double> runnable_outside_mean = {};
  std::optional<unsigned> runnable_outside_max = {};
};

// The aggregate CPU ticks of /proc/stat's first line: all of them, and the steal column.
struct CpuTicks {
  uint64_t total = 0, steal = 0;
};
std::optional<CpuTicks> parse_cpu_ticks(const std::string& proc_stat);
// The first field of /proc/loadavg.
std::optional<double> parse_load_average(const std::string& proc_loadavg);

// Where the --noise processes run: anywhere among the allowed CPUs (roaming), or confined to the
// reserved housekeeping CPUs with every strategy's ranks planned on the others (reserved), as a
// node keeps its daemons with Slurm's CoreSpecCount/CpuSpecList, systemd's CPUAffinity, the
// kubelet's reservedSystemCPUs or gpubind.conf's reserve.
enum class NoisePlacement { roaming, reserved };
const char* to_string(NoisePlacement p);  // "roaming", "reserved"
std::optional<NoisePlacement> noise_placement_from_string(const std::string& s);
// The reserved placement's housekeeping CPUs: the request's reserve (--reserve, gpubind.conf),
// whole cores, else the first allowed core of every package (CPU 0's core on most nodes, where
// the kernel's own housekeeping and boot-time interrupts land; one per socket, so each socket's
// daemons and interrupts stay on it). Only allowed CPUs.
CpuSet housekeeping_cpus(const topo::Topology& t, const plan::Request& r);

// A rank's binding warning as the whole run's, said once: "local rank 1: memory policy refused by
// the container (...)" -> OWNER + ": memory policy refused by the container (...)" (every rank's
// and every run's alike); another text is kept after OWNER as it is.
std::string ranks_warning(std::string_view warning, std::string_view owner);
// Adds `warning` to `warnings` unless it is there already, then tells `say` (when set) of it.
void keep_warning(std::vector<std::string>& warnings, std::string warning, const std::function<void(const std::string&)>& say);

// The machine as a record holds it, and read back (`where` names it in an Error).
nlohmann::ordered_json machine_to_json(const MachineInfo& m);
Result<MachineInfo> machine_from_json(const nlohmann::json& m, const std::string& where);
// What other load did to a run on it: the load average before (half the allowed CPUs or more),
// threads of others runnable during it (0.5 or more on average) and the time the hypervisor
// stole (2 % or more), each one note; none when none of them.
std::vector<std::string> machine_notes(const MachineInfo& m);

struct Config {
  unsigned ranks = 0;
  unsigned threads = 0;        // per rank
  unsigned steps = 0;          // measured steps per strategy, over all rounds
  unsigned rounds = 0;
  unsigned warmup = 0;         // unmeasured steps at the start of every run
  unsigned noise = 0;          // background processes (unbound, or on the reserved CPUs)
  uint64_t buffer_bytes = 0;   // streamed per thread per step (times the batch)
  unsigned compute = 0;        // dependent multiply-adds per thread per step
  bool gpu = false;            // each rank also copied its buffer to its GPU every step
  CpuSet reserved = {};        // the reserved placement's housekeeping CPUs (empty: it did not run)
};

// One rank under one strategy, summed over the rounds.
struct RankRecord {
  unsigned rank = 0;
  std::string gpu;                   // PCI address, "" without GPU
  CpuSet cpus;                       // as planned
  std::vector<unsigned> mem_nodes;   // as planned (empty: first touch)
  std::string mem_policy;
  std::vector<unsigned> home_nodes;  // its GPU's NUMA node(s), or closest's memory node without GPU
  double measured_s = 0;             // wall time of the measured steps
  double step_s = 0;                 // sum of the step times (the slowest rank's pace)
  double busy_s = 0;                 // sum over steps of the rank's own work (its slowest thread)
  double work_s = 0;                 // all its threads' work time
  double off_home_s = 0;             // the part of work_s on CPUs outside the home nodes
  std::optional<uint64_t> migrations;  // its threads' moves to another CPU while measured
  uint64_t pages = 0;                // anonymous pages resident after the measured steps
  uint64_t remote_pages = 0;         // those outside the home nodes
  uint64_t copy_bytes = 0;           // --gpu: copied to its GPU
  double copy_s = 0;                 // --gpu: the copies' time on the GPU's timeline
};

// The share of its steps a rank waited at the barrier: 1 - its own work over the step time.
double idle_share(const RankRecord& r);

struct StrategyRecord {
  std::string name;     // closest, cpu-only, none, numa, socket, none-2x...
  plan::Policy policy = plan::Policy::closest;
  unsigned batch = 1;   // work per step in units of the base step
  std::vector<double> step_ms;  // every measured step, in run order
  std::vector<RankRecord> ranks;
  NoisePlacement noise = NoisePlacement::roaming;
};

struct Record {
  MachineInfo machine;
  Config config;
  std::vector<StrategyRecord> strategies;
  std::vector<std::string> warnings;
};

// A strategy as `--strategies` names it: a plan policy, "-2x" for a doubled batch.
struct StrategySpec {
  std::string name;
  plan::Policy policy = plan::Policy::closest;
  unsigned batch = 1;
};
Result<StrategySpec> parse_strategy(const std::string& name);
// closest, cpu-only, none, numa, socket, none-2x.
const std::vector<std::string>& default_strategies();

struct StrategyReport {
  std::string name;
  unsigned batch = 1;
  NoisePlacement noise = NoisePlacement::roaming;
  Summary step_ms;                    // per sample: step time / batch
  double idle_mean = 0, idle_max = 0;  // share of the step a rank waits at the barrier
  std::optional<double> migrations_per_rank_s;
  std::optional<double> cross_numa;    // share of work time off the home nodes
  std::optional<double> remote_memory;  // share of pages off the home nodes
  uint64_t footprint_bytes = 0;       // streamed per rank per step
  std::optional<double> h2d_bytes_per_s;  // --gpu: the ranks' copies to their GPUs, together
  // Against `closest` under the same noise placement (absent for closest itself, when it did not
  // run, or with fewer steps on either side than min_steps_for_interval: 20 for the p50, 500 for
  // the p99): the p50 and p99 step-time ratios with their 95 % intervals and verdicts.
  std::optional<RatioInterval> p50_vs_closest, p99_vs_closest;
  // Migrations per rank-second against closest's; +infinity when closest had none and this
  // strategy some. A count over the whole run: no interval.
  std::optional<double> migrations_vs_closest;
};

struct Report {
  std::vector<StrategyReport> strategies;
  // closest with the noise on the reserved CPUs over closest with it roaming, when both ran: what
  // keeping the noise on housekeeping CPUs does (its ranks also have those CPUs fewer).
  std::optional<RatioInterval> reserved_vs_roaming_p50, reserved_vs_roaming_p99;
  std::vector<std::string> notes;  // what the machine and the settings can and cannot show
};

Report make_report(const Record& r);
// What the node and the settings let the run show, from the machine, the config and which noise
// placements run (the strategies' names and placements; no step needed): oversubscription under
// each placement, other load before and during the run, stolen time, one NUMA node, no GPU, no
// noise. make_report's notes include them; bench says them before it starts too.
std::vector<std::string> node_notes(const Record& r);

nlohmann::ordered_json to_json(const Record& r);
Result<Record> record_from_json(const nlohmann::json& j);

}  // namespace gpubind::bench
