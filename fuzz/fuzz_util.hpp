#pragma once
// Shared by the libFuzzer targets: a property that does not hold aborts with a message, so the
// fuzzer records the input as a crash like any sanitizer finding.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "plan/plan.hpp"

namespace gpubind::fuzz {

[[noreturn]] inline void violated(const std::string& what) {
  std::fprintf(stderr, "property violated: %s\n", what.c_str());
  std::abort();
}

inline void require(bool ok, const std::string& what) {
  if (!ok) violated(what);
}

// The planner's invariants on a topology the fuzzer made loadable: every rank has CPUs, all of
// them allowed, and no CPU goes to two ranks when there is a core per rank.
inline void check_plan(const topo::Topology& t, const plan::Request& req) {
  auto p = plan::make_plan(t, req);
  if (!p) return;  // a clear refusal is fine
  unsigned cores = 0;
  for (const auto& c : t.cores) cores += c.pus.intersects(t.allowed_cpus);
  CpuSet seen;
  bool disjoint = true;
  for (const auto& rb : p->ranks) {
    if (req.policy == plan::Policy::none) continue;
    require(!rb.cpus.empty(), "rank " + std::to_string(rb.local_rank) + " has no CPU");
    require(rb.cpus.is_subset_of(t.allowed_cpus), "rank " + std::to_string(rb.local_rank) + " has CPUs outside the allowed set");
    disjoint = disjoint && !rb.cpus.intersects(seen);
    seen |= rb.cpus;
  }
  if (req.policy == plan::Policy::closest && cores >= p->ranks.size() && !p->ranks.empty())
    require(disjoint, "ranks share CPUs although there are " + std::to_string(cores) + " cores for " +
                          std::to_string(p->ranks.size()) + " ranks");
}

}  // namespace gpubind::fuzz
