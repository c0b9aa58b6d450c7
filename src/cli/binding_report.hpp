#pragma once
// What a bound rank has, in the words exec's --dry-run and --report-bindings and launch's print:
// shared so that exec and launch report a binding alike.
#include <string>

#include "bind/apply.hpp"
#include "plan/plan.hpp"
#include "topo/topology.hpp"

namespace gpubind::cli {

// "GPU 0 (0000:18:00.0), CPUs 0-27, memory preferred 0, NIC mlx5_0"; `memory`: what became of the
// memory policy, once applied.
std::string describe_binding(const plan::RankBinding& rb, bind::MemoryApplied memory = bind::MemoryApplied::unchanged);

// One --report-bindings line, as mpirun draws it: "[host:pid] gpubind: rank G (local L of N)
// bound to ...: [BB../....]". `global_rank` < 0: unknown ("?").
std::string report_line(const topo::Topology& t, int pid, long global_rank, unsigned local_size, const plan::RankBinding& rb,
                        bind::MemoryApplied memory);

}  // namespace gpubind::cli
