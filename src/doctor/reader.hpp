#pragma once
// Reads a node's facts for `gpubind doctor` (doctor/facts.hpp) through an FsRoot: this node ("/")
// or a captured tree (--root). A file that is absent leaves its fact unknown (the kernel lacks the
// feature, or the node is no Slurm node); one that exists but cannot be read is a line in
// NodeFacts::unreadable, never an error.
#include <string>

#include "doctor/facts.hpp"
#include "sys/fsroot.hpp"
#include "topo/topology.hpp"

namespace gpubind::doctor {

struct ReaderOptions {
  // slurm.conf, absolute as on the node ($SLURM_CONF), read under the root; "" = /etc/slurm/slurm.conf.
  std::string slurm_conf;
  // This node's name, to find its NodeName= line in slurm.conf ("" = none looked for).
  std::string node_name;
  // The kubelet's configuration, as on the node; "" = /var/lib/kubelet/config.yaml.
  std::string kubelet_config;
  // Named by the user (--slurm-conf, --kubelet-config): that file must be read, or the facts are
  // an Error naming it (a mistyped path must not read as a node without Slurm or a kubelet).
  bool slurm_conf_named = false;
  bool kubelet_config_named = false;
};

// `t`: the node's topology, whose GPUs' and NICs' PCIe links are read. An Error only for a file
// the options name that cannot be read (or, the kubelet's, read as its configuration).
Result<NodeFacts> read_node_facts(const sys::FsRoot& root, const topo::Topology& t, const ReaderOptions& options);

// gpubind's SPANK plugin in a plugin stack: `conf` (as on the node) and the files its `include`
// lines name (relative to the including file's directory; a glob in the last component), the
// last line that loads gpubind_spank.so with its default= argument. Lines are Slurm's:
// `required|optional PLUGIN [ARGS...]`, `include PATTERN`, `#` comments. A line whose arguments
// the plugin refuses is a note in `f.unreadable` (the plugin would not load).
void read_plugstack(const sys::FsRoot& root, const std::string& conf, NodeFacts& f);

// The value of a slurm.conf key (case-insensitive, as Slurm reads it) from its text: the last
// setting, "" when none; comments and NodeName=/PartitionName= lines are not settings of it.
std::string slurm_conf_value(const std::string& text, const std::string& key);

// A key's value on the NodeName= line of slurm.conf that names `node` (a hostlist such as
// gpu[01-04] expanded; "NodeName=DEFAULT" lines give defaults a later line overrides), with the
// pattern that matched; nullopt when no line names the node.
struct SlurmNodeLine {
  std::string pattern;
  std::string cpu_spec_list;
  std::optional<unsigned> core_spec_count;
  std::optional<unsigned> restricted_cores_per_gpu;  // RestrictedCoresPerGPU= (24.05 on)
  std::optional<unsigned> boards, sockets, sockets_per_board, cores_per_socket, threads_per_core;
  std::string parameters;  // Parameters= (25.11 on)
};
std::optional<SlurmNodeLine> slurm_node_line(const std::string& text, const std::string& node);

// The lines of gres.conf `text` (read from `file`) for GPUs (Name=gpu) that apply to `node`: those
// without NodeName= and those whose NodeName= host list names it; AutoDetect= into `autodetect`.
std::vector<NodeFacts::GresGpu> gres_gpu_lines(const std::string& text, const std::string& file, const std::string& node,
                                               std::string& autodetect);

// The ACS control register of a PCI config space (its bytes as read from sysfs `config`): the
// extended capability list from offset 0x100 followed to capability 0x0d. nullopt: none (or the
// space holds only the first 256 bytes, as sysfs gives to a user without CAP_SYS_ADMIN).
std::optional<uint16_t> acs_control(const std::string& config);

}  // namespace gpubind::doctor
