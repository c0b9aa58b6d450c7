#pragma once
// The only hwloc user: turns what hwloc sees (live, XML, synthetic, a gathered /sys+/proc tree)
// into a topo::Topology.
#include <string>

#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

struct HwlocInput {
  enum class Kind { live, xml_file, synthetic, fsroot };
  Kind kind = Kind::live;
  std::string value;   // file, synthetic description or directory; unused for live
  std::string origin;  // recorded in Topology::origin
  // Where GPUs and NICs come from: hwloc's I/O discovery, or gpubind's sysfs scan of the same
  // root (live default: much faster, see sysfs_pci.hpp). XML and synthetic inputs only have hwloc's.
  enum class Devices { hwloc, sysfs };
  Devices devices = Devices::hwloc;
};

// hwloc's discovery. The CLI does not link libhwloc: `exec` on a cached topology never needs it
// and loading it (with libudev) costs ~0.7 ms per rank. It loads the module gpubind-hwloc.so
// when a topology must be discovered (hwloc_dlopen.cpp); tests, benchmarks and the SPANK plugin
// link the same code in (hwloc_direct.cpp). An Error when the module cannot be loaded.
Result<topo::Topology> load_with_hwloc(const HwlocInput& in);

// The version of the hwloc library that discovers (the module's), for --version.
Result<std::string> hwloc_version();

// The version of hwloc's headers gpubind was built with (no library needed): for cache keys.
const char* hwloc_build_version();

// Why the CPUID dumps hwloc-gather-topology saved in the gathered tree `root` (directory
// `dumps`) cannot describe it, or "" when they can: each PU's initial APIC id (leaf 1, EBX bits
// 31-24) must be the one the kernel recorded at boot ("initial apicid" in the tree's
// /proc/cpuinfo). Some hypervisors answer CPUID with values that change from one call to the next
// (an AMD EPYC family 26 guest: 212 and 127 against 0 and 1); hwloc's x86 backend then splits
// the caches the kernel shows shared. Such dumps are not used: the capture keeps the caches its
// /sys has, with a warning.
std::string cpuid_disagreement(const std::string& root, const std::string& dumps);
// The same for this machine, live: the CPU this runs on, by CPUID and in /proc/cpuinfo. Live
// discovery then takes no caches from CPUID where sysfs has none, with a warning.
std::string live_cpuid_disagreement();

// --- the implementation, in hwloc_loader.cpp; reached through the two functions above ---
Result<topo::Topology> hwloc_backend_load(const HwlocInput& in);
std::string hwloc_backend_version();

// What the module exports (C symbol gpubind_hwloc_api_v1), for hwloc_dlopen.cpp.
struct HwlocApi {
  unsigned abi = 1;
  Result<topo::Topology> (*load)(const HwlocInput&) = nullptr;
  std::string (*version)() = nullptr;
};

}  // namespace gpubind::discover
