#pragma once
// NCCL/RCCL topology files (NCCL_TOPO_FILE, NCCL_TOPO_DUMP_FILE output): <system version="1|2">
// with <cpu numaid affinity> roots, nested <pci> bridges and devices, <gpu> with <nvlink>/<xgmi>
// links, and <nic><net name>. They carry no cores, SMT or memory sizes; the loader says so.
#include <string>

#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

Result<topo::Topology> load_nccl_xml(const std::string& text, const std::string& origin);

}  // namespace gpubind::discover
