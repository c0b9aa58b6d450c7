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
};

// `t`: the node's topology, whose GPUs' and NICs' PCIe links are read.
NodeFacts read_node_facts(const sys::FsRoot& root, const topo::Topology& t, const ReaderOptions& options);

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
};
std::optional<SlurmNodeLine> slurm_node_line(const std::string& text, const std::string& node);

// The ACS control register of a PCI config space (its bytes as read from sysfs `config`): the
// extended capability list from offset 0x100 followed to capability 0x0d. nullopt: none (or the
// space holds only the first 256 bytes, as sysfs gives to a user without CAP_SYS_ADMIN).
std::optional<uint16_t> acs_control(const std::string& config);

}  // namespace gpubind::doctor
