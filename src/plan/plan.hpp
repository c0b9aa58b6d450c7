#pragma once
// The planner: which GPU(s), CPUs, memory nodes and NIC each local rank gets. Pure: a function of
// (Topology, Request) only; no syscalls, no environment reads, no clock. The CLI (and later exec,
// launch and the SPANK plugin) fill Request from flags, the caller's affinity and the environment.
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "topo/topology.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::plan {

enum class Policy { closest, socket_split, socket, numa, l3, cpu_only, none };
enum class MemPolicy { preferred, bind, interleave, none };

const char* to_string(Policy p);
const char* to_string(MemPolicy m);
std::optional<Policy> policy_from_string(const std::string& s);
std::optional<MemPolicy> mem_policy_from_string(const std::string& s);

struct Request {
  std::optional<unsigned> ranks;       // default: visible GPUs / gpus_per_rank (CPU NUMA nodes without GPUs)
  // Default 1, except that a single rank with several visible GPUs gets them all: one task per
  // node (srun -N2 --ntasks-per-node=1, a launcher that starts its own workers) owns its node,
  // and binding it to the first GPU's half of the node would starve the workers it starts.
  std::optional<unsigned> gpus_per_rank;
  Policy policy = Policy::closest;
  bool smt = true;                     // false: one PU per core
  bool balanced = false;               // leave leftover cores idle so every rank has the same count
  CpuSet reserve;                      // never used
  std::optional<CpuSet> allowed;       // the caller's allowed CPUs; default: the topology's
  MemPolicy mem = MemPolicy::preferred;
  std::optional<unsigned> mem_node;    // explicit memory node (may be CPU-less)
  bool mem_on_gpu = false;             // memory on the rank's GPUs' own memory nodes (Gpu::memory_numa)
  std::optional<CpuSet> allowed_mems;  // memory nodes the caller may use (cgroup cpuset.mems); default: all
  bool nic_env = false;                // export NCCL_IB_HCA / UCX_NET_DEVICES
  bool isolate_gpus = false;           // export CUDA/ROCR_VISIBLE_DEVICES per rank
  // Fewer ranks than visible GPUs and nothing fixed which GPUs the workers see (no visibility
  // variable, every GPU openable): take GPUs spread over packages and NUMA nodes and export them
  // as every rank's visible list. false: rank r on visible GPU r.
  bool spread_gpus = true;
  bool omp = false;                    // export OMP_PLACES / OMP_PROC_BIND
  bool nccl_proxy_cpus = false;        // export NCCL_PROXY_CPUSET: the rank's last core (kNcclProxyCpusetEnv)
  bool require_gpu = false;            // a topology without GPUs is an error
  // The variables that decide which GPUs a worker sees (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
  // ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK, ZE_FLAT_DEVICE_HIERARCHY, SLURM_STEP_GPUS, SLURM_JOB_GPUS).
  std::map<std::string, std::string> env;
  // Each rank's GPUs as positions in the visible list, when a launcher chose them per rank
  // (Slurm's --gpus-per-task and --gpu-bind narrow each task to its own GPUs of the step's);
  // empty: rank r gets visible GPU r, or consecutive ranks share one.
  std::vector<std::vector<unsigned>> rank_gpus;
  // PCI addresses of the GPUs whose device files the caller may open, when known (live: a device
  // cgroup or container hides the rest, and the runtime renumbers what is left); default unknown.
  std::optional<std::vector<std::string>> openable_gpus;
  // PCI addresses of the GPUs whose MIG capability files the caller may open (probe::
  // openable_mig_parents): a MIG-<uuid> names no parent, but a container given one MIG device
  // holds the capabilities of one GPU only. Default unknown.
  std::optional<std::vector<std::string>> openable_mig_parents;
  // What the pod's DRA device metadata files (KEP-5304) say this container was given, where the
  // caller read them (bind::read_pod_metadata): its GPUs' PCI addresses, and the lines for
  // --explain and the warnings (the files disagreeing with sysfs, one that cannot be read).
  // nullopt: no such files (not in a pod, or no driver writes them).
  struct PodMetadata {
    std::vector<std::string> gpus;
    std::vector<std::string> explain, warnings;
  };
  std::optional<PodMetadata> pod_metadata;
};

// Names of the environment variables Request::env may carry; the CLI copies exactly these.
const std::vector<std::string>& gpu_env_names();

struct GpuRef {
  unsigned index = 0;                  // vendor ordinal (topology index)
  std::string pci;
  topo::Vendor vendor = topo::Vendor::other;
  std::optional<unsigned> stack;       // one stack of it (Level Zero FLAT), else the whole GPU
};

struct NicRef {
  std::string pci;
  std::string name;                    // OS names joined by ","
  topo::PathClass path = topo::PathClass::SYS;  // to the rank's (first) GPU
};

struct RankBinding {
  unsigned local_rank = 0;
  std::vector<GpuRef> gpus;
  CpuSet cpus;
  std::vector<unsigned> mem_nodes;
  MemPolicy mem_policy = MemPolicy::preferred;
  std::vector<NicRef> nics;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> warnings;
};

struct Score {
  std::optional<double> cpu_locality;  // share of rank PUs on their GPU's NUMA node(s); null if unknown
  std::optional<double> mem_locality;  // share of ranks whose memory goes to their GPU's node(s)
  unsigned overlap_cpus = 0;           // PUs given to more than one rank
  bool cores_known = true;             // false: disjoint PUs may still be SMT siblings of one core
  unsigned idle_cpus = 0;              // usable PUs no rank got
  unsigned min_cores = 0;              // cores per rank, smallest and largest
  unsigned max_cores = 0;
  std::vector<std::optional<topo::PathClass>> nic_path;  // per rank; nullopt without NIC
};

struct Plan {
  Policy policy = Policy::closest;
  MemPolicy mem = MemPolicy::preferred;
  std::string topology_origin;
  std::vector<RankBinding> ranks;
  Score score;
  std::vector<std::string> warnings;
  std::vector<std::string> explain;    // every step of the GPU resolution and the CPU choice
  // The visibility variables every rank gets when gpubind chose which GPUs fewer ranks than
  // visible GPUs take (Request::spread_gpus; also in each rank's env). Empty: none chosen.
  std::vector<std::pair<std::string, std::string>> visible_env;
};

Result<Plan> make_plan(const topo::Topology& t, const Request& req);

// The variables that size the thread pools inside a rank, each set to its planned cores (issue
// 55): OpenMP's (libgomp, torch's intra-op pool), Intel MKL's (torch's MKL builds, numpy's) and
// OpenBLAS's (numpy and scipy with OpenBLAS start one thread per CPU otherwise). A value the rank's
// environment already has is the user's and is kept (bind::apply_binding).
inline constexpr const char* kPoolSizeEnv[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
bool is_pool_size_env(std::string_view name);
// NCCL 2.28+ pins its proxy progress thread to NCCL_PROXY_CPUSET (src/proxy.cc), read as CPU ids
// separated by commas (ncclStrListToCpuset: strtoull per token, so "0-3" would be CPU 0 alone).
// With --nccl-proxy-cpus the plan exports the rank's last core (the core of its highest CPU: its
// PUs among the rank's, "13,125") there, so the
// proxy thread keeps to one core of the rank's instead of every CPU NCCL's init mask holds. Not
// a default: its effect on a real job is for `bench --ab` to measure (docs/cli.md).
inline constexpr const char* kNcclProxyCpusetEnv = "NCCL_PROXY_CPUSET";
// The values a user (or a launcher) may have set that exec, launch and the plugin keep: the pool
// sizes and NCCL_PROXY_CPUSET.
bool is_user_kept_env(std::string_view name);
std::vector<std::string> user_kept_env_names();

// The environment a bound rank gets: the GPUBIND_* variables that record what was applied (so
// `check` can compare intent with reality later), then the plan's own (kPoolSizeEnv...).
std::vector<std::pair<std::string, std::string>> rank_environment(const Plan& p, const RankBinding& rb);

// The plan's warnings that concern one rank: plan-wide ones and its own ("rank R: ..."), not
// other ranks'. What `exec` and the SPANK plugin print for the rank they bind.
std::vector<std::string> warnings_for_rank(const Plan& p, unsigned rank);

// The CPUs the caller may use: its allowed set (its affinity: a cgroup, taskset, Slurm's
// task/affinity) within the machine's, else the topology's allowed CPUs (a file's: all).
CpuSet allowed_cpus(const topo::Topology& t, const Request& req);

// The CPUs a plan may hand out: allowed_cpus minus --reserve, which takes whole cores (a reserved
// PU's SMT siblings too).
CpuSet usable_cpus(const topo::Topology& t, const Request& req);

// Scores a set of rank bindings against the topology (also used for the strategies `compare`
// shows side by side); `usable` gives the idle count (usable CPUs no rank got).
Score score_plan(const topo::Topology& t, const std::vector<RankBinding>& ranks, const CpuSet& usable);

// The GPUs the workers see, in the order they number them (cuda:0, cuda:1...). Level Zero's
// FLAT hierarchy (its default) makes each stack of an Intel GPU a device of its own: such
// entries point into `stacks`, copies of their GPU with Gpu::stack set, kept alive with the list
// (a std::deque keeps its elements in place when moved).
struct VisibleGpus {
  std::vector<const topo::Gpu*> gpus;
  std::deque<topo::Gpu> stacks;
};

// Resolves which GPUs the worker sees from the request's environment and openable devices.
// Steps are appended to `explain`, doubts to `warnings`.
Result<VisibleGpus> visible_gpus(const topo::Topology& t, const Request& req, std::vector<std::string>& explain,
                                 std::vector<std::string>& warnings);

// Level Zero's device hierarchy, from ZE_FLAT_DEVICE_HIERARCHY (FLAT when unset: the default
// since 2023): FLAT and COMBINED make each stack a root device, COMPOSITE each card.
enum class ZeHierarchy { flat, composite, combined };
Result<ZeHierarchy> ze_hierarchy(const std::map<std::string, std::string>& env);

// The ZE_AFFINITY_MASK entries naming `gpus` for `t`'s Intel GPUs under hierarchy `h`: a whole
// GPU is its card index (COMPOSITE) or each of its stacks' flat indexes (FLAT, COMBINED); one
// stack is "card.stack" or its flat index.
std::string ze_affinity_mask(const topo::Topology& t, const std::vector<const topo::Gpu*>& gpus, ZeHierarchy h);

}  // namespace gpubind::plan
