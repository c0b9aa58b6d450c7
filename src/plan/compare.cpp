#include "plan/compare.hpp"

#include "plan/peers.hpp"

namespace gpubind::plan {

namespace {

struct Strategy {
  const char* name;
  const char* what;
  Policy policy;
};

const Strategy kStrategies[] = {
    {"kernel-default", "no binding: the scheduler may run any rank anywhere", Policy::none},
    {"cpu-only", "GPU-unaware contiguous blocks from CPU 0 (DeepSpeed-style)", Policy::cpu_only},
    {"numa", "the GPU's whole NUMA node, shared by its ranks", Policy::numa},
    {"socket", "the GPU's whole package, shared by its ranks", Policy::socket},
    {"closest", "gpubind: disjoint L3-aligned cores on the GPU's node, memory and NIC nearest", Policy::closest},
    {"socket-split", "gpubind: every core of the GPU's package, disjoint, the GPU's node first", Policy::socket_split},
};

struct PeerRule {
  Peer peer;
  const char* what;
};

const PeerRule kPeers[] = {
    {Peer::torchrun_exclusive, "torchrun --numa-binding=exclusive: the node's cores split among its GPUs"},
    {Peer::torchrun_core_complex, "torchrun --numa-binding=core-complex: one L3 group per GPU, shared when fewer"},
    {Peer::gpu_affinity_socket, "NVIDIA gpu_affinity unique_contiguous, socket scope: node share + GPU-less cores"},
    {Peer::slurm_block, "srun -m block:block --cpu-bind=cores --gpu-bind=single:1: cores in order, GPU follows"},
    {Peer::slurm_cyclic, "srun -m block:cyclic (default) --cpu-bind=cores --gpu-bind=single:1: sockets in turn"},
};

}  // namespace

Result<Comparison> compare_strategies(const topo::Topology& t, const Request& req) {
  Comparison c;
  c.topology_origin = t.origin;
  for (const Strategy& s : kStrategies) {
    Request r = req;
    r.policy = s.policy;
    auto p = make_plan(t, r);
    if (!p) return p.error();
    c.ranks = p->ranks.size();
    if (c.warnings.empty()) c.warnings = p->warnings;
    c.strategies.push_back({s.name, s.what, true, std::move(*p), ""});
  }
  // The peers' own rules on the same machine; a peer that cannot plan it says why, as it would fail.
  for (const PeerRule& rule : kPeers) {
    StrategyOutcome o{to_string(rule.peer), rule.what, false, std::nullopt, ""};
    auto b = peer_bindings(t, req, rule.peer);
    if (!b) {
      o.error = b.error().why;
    } else {
      Plan p;
      p.policy = Policy::none;
      p.mem = MemPolicy::none;
      p.ranks = *b;
      p.score = score_plan(t, p.ranks, usable_cpus(t, req));
      o.plan = std::move(p);
    }
    c.strategies.push_back(std::move(o));
  }
  return c;
}

}  // namespace gpubind::plan
