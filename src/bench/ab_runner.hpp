#pragma once
// Running `gpubind bench --ab`: the user's command started through `gpubind launch` (one node's
// ranks, each bound by the strategy's policy, output tagged with the rank) once per strategy per
// round, in the rotating order of bench's own rounds; each run's step times read from its output
// or step file, or its wall time taken.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "bench/ab.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::bench {

struct AbOptions {
  std::vector<std::string> strategies;   // plan policies; the first is the base
  // --ab-env: the arms are this variable's values instead, "NAME=VALUE" in `strategies` ("NAME=auto":
  // unset, so launch sizes it itself), every run under the policy in `launch_args` (--policy X).
  std::string env_name;
  std::vector<std::string> launch_args;  // plan flags for launch, as given (-n 2, --reserve 0...)
  std::vector<std::string> command;      // the user's
  unsigned ranks = 0;                    // as the plan has them (recorded)
  unsigned rounds = 5;
  unsigned warmup = 5;                   // step times skipped at the start of every run
  std::optional<StepPattern> pattern;    // --step-regex
  std::string step_file;                 // --step-file (removed before every run)
  unsigned step_rank = 0;
  std::chrono::seconds timeout{0};       // per run; 0: none
  std::string self = "/proc/self/exe";   // the gpubind that runs launch
  std::function<void(const std::string& note)> notice;  // each of ab_node_notes, before the first run
  std::function<void(const std::string& strategy, unsigned round)> progress;
  std::function<void(const std::string& warning)> warning;  // each of the record's warnings, when first seen
};

// How an A/B ended when it did not: a run failed (exit status, no step times) or ran past
// --timeout (then `timed_out`); what ran before is lost with it.
struct AbFailure {
  Error error;
  bool timed_out = false;
};

// Runs every strategy `rounds` times; the record, or why a run stopped the A/B.
// `base` is the plan request launch will make of the plan flags (its allowed CPUs are the report's).
std::variant<AbRecord, AbFailure> run_ab(const topo::Topology& t, const plan::Request& base, const AbOptions& o);

}  // namespace gpubind::bench
