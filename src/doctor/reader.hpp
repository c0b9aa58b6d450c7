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
};

// `t`: the node's topology, whose GPUs' and NICs' PCIe links are read.
NodeFacts read_node_facts(const sys::FsRoot& root, const topo::Topology& t, const ReaderOptions& options);

// The value of a slurm.conf key (case-insensitive, as Slurm reads it) from its text: the last
// setting, "" when none; comments and NodeName=/PartitionName= lines are not settings of it.
std::string slurm_conf_value(const std::string& text, const std::string& key);

}  // namespace gpubind::doctor
