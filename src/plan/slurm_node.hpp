#pragma once
// A node's GPUs as Slurm's slurmctld will judge them: the gres.conf Cores= of each GPU and the
// node definition (sockets, cores, threads, socket parameter) that a given Slurm release accepts.
//
// Since 24.11 slurmctld checks a GPU's Cores= against the node's sockets when the node registers
// (_check_core_range_matches_sock in src/interfaces/gres.c) and drains the node when it does not
// match: 24.11 and 25.05 want every socket the list touches whole; 25.11 and later want exactly
// one whole socket or every core. A GPU local to one NUMA node of an NPS4/SNC package, or to one
// L3, can only be named when slurmd counts those as sockets (SlurmdParameters=
// numa_node_as_socket or l3cache_as_socket; in 25.11 also per node, Parameters= on NodeName).
// Slurm numbers cores socket by socket in hwloc's order, which is topo::logical_core_ids whatever
// counts as a socket, so the Cores= numbers do not change with the definition, only the sockets.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topo/topology.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::plan {

// A Slurm release as slurmd -V or a site names it: 25.11, 25.11.4.
struct SlurmVersion {
  unsigned major = 0;
  unsigned minor = 0;
  std::optional<unsigned> micro;
  std::string text() const;  // "25.11" or "25.11.4"
  bool at_least(unsigned maj, unsigned min) const { return major > maj || (major == maj && minor >= min); }
};

// "25.11", "25.11.4", "25.11.0-0rc1", "slurm 25.11.4", "slurm-wlm 22.05.8" (what slurmd -V
// prints). An Error for anything else or a release series Slurm never had (17.02 to 26.05).
Result<SlurmVersion> parse_slurm_version(std::string_view text);
// The newest release series this knows the rules of.
SlurmVersion newest_slurm();

// What slurmctld accepts as a GPU's Cores= at a node's registration.
enum class SlurmCoresRule {
  any,                // before 24.11: any core list
  whole_sockets,      // 24.11, 25.05: each socket it touches, all of it
  one_socket_or_all,  // 25.11 on: exactly one whole socket, or every core of the node
};
SlurmCoresRule slurm_cores_rule(const SlurmVersion& v);
// Whether a NodeName line takes Parameters= (node-specific SlurmdParameters): 25.11 on.
bool slurm_node_parameters(const SlurmVersion& v);

// What slurmd counts as a socket.
enum class SlurmSocket { package, numa_node, l3cache };
// The SlurmdParameters word for it ("" for package, Slurm's default).
std::string_view slurmd_parameter(SlurmSocket s);

// The node's sockets as slurmd would count them under one definition, in Slurm's core numbering.
struct SlurmSockets {
  SlurmSocket definition = SlurmSocket::package;
  std::string kind;             // "package", "NUMA node", "L3", or what numa_node_as_socket becomes here
  std::vector<CpuSet> sockets;  // socket i: cores i*cores_per_socket .. (i+1)*cores_per_socket-1
  unsigned cores_per_socket = 0;
  unsigned threads_per_core = 0;
  std::string unusable;  // why slurmd cannot count sockets so here; "" when it can
};
SlurmSockets slurm_sockets(const topo::Topology& t, SlurmSocket s);

// Whether slurmctld of `rule` takes `cores` as a GPU's Cores= on a node of `sockets`.
bool slurm_accepts(const CpuSet& cores, const SlurmSockets& sockets, SlurmCoresRule rule);

struct SlurmGpuCores {
  size_t gpu = 0;  // index into Topology::gpus
  CpuSet own;      // the cores local to the GPU, Slurm's numbering; empty: locality unknown
  CpuSet cores;    // its Cores=: `own`, or the whole sockets (or every core) around it; empty: none
  bool widened() const { return cores != own; }
};

struct SlurmNodePlan {
  SlurmVersion version;
  SlurmCoresRule rule = SlurmCoresRule::any;
  SlurmSockets sockets;             // the definition chosen
  std::vector<SlurmGpuCores> gpus;  // one per GPU, in Topology::gpus order
  unsigned total_cores = 0;
  // No definition slurmd can count here (sockets of unequal size, say): no GPU gets Cores=, and
  // this says why. Empty otherwise.
  std::string no_cores;
  unsigned widened_cores() const;  // cores named beyond the GPUs' own, over all GPUs
};

// The socket definition under which the GPUs' Cores= stay closest to their own cores (fewest cores
// added to make each acceptable to `v`), the default (package) first on a tie, then NUMA node,
// then L3: a redefinition changes what every job's sockets mean, so it is chosen only when it
// names the GPUs' cores more closely. Before 24.11: packages and each GPU's own cores.
SlurmNodePlan plan_slurm_node(const topo::Topology& t, const SlurmVersion& v);

// Cores kept from jobs on a node as slurmctld works them out from its NodeName= line, in Slurm's
// core numbering on that line's sockets (node_conf.c and node_mgr.c of 24.11 to 26.05).

// CoreSpecCount=count: one core of each socket in turn, from the last core of the last socket
// down; with SchedulerParameters=spec_cores_first from the first core of the first socket up.
CpuSet slurm_core_spec_cores(unsigned sockets, unsigned cores_per_socket, unsigned count, bool spec_cores_first);
// CpuSpecList's abstract CPU ids as cores: id / threads, the node's ThreadsPerCore (1 when the
// node schedules cores, its CPUs= no more than its cores).
CpuSet slurm_cpu_spec_cores(const CpuSet& cpu_ids, unsigned threads_per_core);

// One GPU line of gres.conf as slurmctld keeps it: its Cores= and how many GPUs it names.
struct SlurmGresGpus {
  CpuSet cores;  // empty: no Cores=
  unsigned count = 1;
};

// RestrictedCoresPerGPU=N (24.05 on): at registration slurmctld gives each GPU line in turn
// N x its count of its Cores=, lowest first, none kept by core specialization nor given to an
// earlier line; these cores then go to GPU jobs only. A line that cannot get them all, or no
// line with Cores= at all, sets the node DOWN.
struct SlurmRestrictedCores {
  CpuSet all;                        // every restricted core (scontrol's RestrictedCoresPerGPU=N(...))
  std::vector<CpuSet> per_line;      // each line's
  std::optional<size_t> short_line;  // the first line that could not get its cores
  unsigned got = 0;                  // how many that line got
  bool no_cores = false;             // no line names Cores=
  bool down() const { return short_line || no_cores; }
};
SlurmRestrictedCores slurm_restricted_cores(const std::vector<SlurmGresGpus>& lines, const CpuSet& specialized, unsigned per_gpu);
// Whether a release reads RestrictedCoresPerGPU= (24.05 on).
bool slurm_restricted_cores_known(const SlurmVersion& v);

}  // namespace gpubind::plan
