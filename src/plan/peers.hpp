#pragma once
// The binding rules of the tools users would otherwise reach for, re-implemented from their
// documented behaviour (each rule below names the tool and the option) so `gpubind compare` scores gpubind against them
// on the user's own topology. Pure. Rank r drives the r-th visible GPU, as these tools assume.
//   torchrun-exclusive     torchrun --numa-binding=exclusive: the GPU's NUMA node's physical cores
//                          divided among all visible GPUs on that node (the first cores % n GPUs
//                          get one more), all siblings; no memory policy
//   torchrun-core-complex  --numa-binding=core-complex: the node's L3 groups, largest first; the
//                          k-th GPU on the node gets group k mod groups (GPUs may share one)
//   gpu-affinity-socket    NVIDIA gpu_affinity unique_contiguous with socket scope and
//                          balanced=True: each GPU a contiguous share of its NUMA node's cores,
//                          plus the socket's GPU-less cores dealt out to those cores in turn
//                          (DGX A100: GPU 0 gets 48-55 and 32-39, as NVIDIA's own test says)
//   slurm-block            srun --cpu-bind=cores -m block:block -c C --gpu-bind=single:1 over
//                          the whole node: C = usable cores / ranks, task k gets cores k*C.. in
//                          Slurm's (hwloc logical) core order; then each task, in order, takes
//                          the first free GPU whose gres Cores (its local CPUs) cover its mask,
//                          else overlap it, else the first free GPU (gres.c's single rule)
//   slurm-cyclic           the same with -m block:cyclic (Slurm's default): tasks take C cores
//                          from the sockets in turn (task k on socket k mod sockets, the next C
//                          free cores there; from anywhere when no socket has C left)
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace gpubind::plan {

enum class Peer { torchrun_exclusive, torchrun_core_complex, gpu_affinity_socket, slurm_block, slurm_cyclic };

const char* to_string(Peer p);

// The ranks' bindings under a peer's rule, or an Error saying why the peer cannot plan this
// (as the tool itself would fail: more ranks than GPUs, no core for a GPU...).
Result<std::vector<RankBinding>> peer_bindings(const topo::Topology& t, const Request& req, Peer peer);

}  // namespace gpubind::plan
