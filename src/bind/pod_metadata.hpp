#pragma once
// What a container's DRA device metadata files (KEP-5304) say it was given, judged against the
// topology and the CPUs it may run on (pure: the files' text in, plan::Request's PodMetadata out).
// exec and launch plan with it: the GPUs the files name by PCI address (resource.kubernetes.io/
// pciBusID, AMD's pciAddr) or UUID are the container's where the device files cannot tell; the
// CPU DRA driver's devices (dra.cpu) say where its claim's CPUs are. Where a file disagrees with
// the topology (sysfs, live: a GPU's NUMA node or PCIe root, a PCI address the machine lacks, CPUs
// off the claim's group or more of them than the claim's), a warning says so.
#include <map>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace gpubind::bind {

// `files`: path -> text; `unreadable`: errors' messages. nullopt when both are empty.
std::optional<plan::Request::PodMetadata> pod_metadata(const std::map<std::string, std::string>& files,
                                                       const std::vector<std::string>& unreadable, const topo::Topology& t,
                                                       const CpuSet& allowed);

}  // namespace gpubind::bind
