#pragma once
// Slurm gres.conf lines for a topology's GPUs: Name=gpu Type= File= Cores= Links=. Slurm's own
// AutoDetect needs NVML or RSMI on the node; this needs only the topology, so it also works from
// a captured topology file.
#include <string>
#include <vector>

#include "plan/slurm_node.hpp"
#include "topo/topology.hpp"

namespace gpubind::render {

// `node_name` "" writes lines without NodeName= (they then apply to every node reading the file).
// `plan` (plan::plan_slurm_node) is for the Slurm release the lines are for, `version_from` says
// where that release was learnt ("slurmd -V", "--slurm-version"). From 24.11 on the file also
// gives the node's slurm.conf definition (sockets, cores, threads and the socket parameter) that
// its Cores= are numbered against, and says why any GPU's Cores= are wider than its own cores.
std::string gres_conf(const topo::Topology& t, const std::string& node_name, const plan::SlurmNodePlan& plan,
                      const std::string& version_from);

// The gres.conf Type= of a GPU as Slurm's AutoDetect spells it: the model name lowercased with
// spaces as underscores ("NVIDIA A100-SXM4-40GB" -> "nvidia_a100-sxm4-40gb").
std::string slurm_gpu_type(const topo::Gpu& g);

// The node's slurm.conf Gres= value matching gres_conf(): "gpu:TYPE:COUNT[,gpu:TYPE2:COUNT]".
std::string slurm_node_gres(const topo::Topology& t);

}  // namespace gpubind::render
