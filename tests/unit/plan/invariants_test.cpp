// Planner invariants over every example machine built into gpubind.
#include "../../support/plan_invariants.hpp"

#include "discover/examples.hpp"
#include "discover/source.hpp"

namespace gpubind::plan {

TEST(PlanInvariants, HoldOnEveryExampleMachine) {
  for (const auto& e : discover::embedded_examples()) {
    auto t = discover::load_topology(std::string("example:") + e.name);
    ASSERT_TRUE(t.ok());
    for (const Request& r : testing::invariant_requests(*t))
      testing::expect_plan_invariants(*t, r, std::string(e.name) + " -n " + std::to_string(*r.ranks) + " --gpus-per-rank " +
                                                 (r.gpus_per_rank ? std::to_string(*r.gpus_per_rank) : std::string("default")));
  }
}

TEST(PlanInvariants, HoldOnSyntheticMachines) {
  for (const char* s : {"pack:2 numa:2 l3:2 core:4 pu:2", "pack:1 core:3 pu:4", "pack:4 numa:1 core:16 pu:1"}) {
    auto t = discover::load_topology(s);
    ASSERT_TRUE(t.ok());
    for (unsigned n : {1u, 3u, 8u, 200u}) {
      Request r;
      r.ranks = n;
      testing::expect_plan_invariants(*t, r, std::string(s) + " -n " + std::to_string(n));
    }
  }
}

}  // namespace gpubind::plan
